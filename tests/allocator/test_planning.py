"""The allocator's pure planning steps (allocator/planning.py): the noise floor of a decision and the N and D a plan
is for. The registry edge that calls them is tested in tests/pipeline/test_allocate.py."""

from __future__ import annotations

import tomllib

import pytest

from allocator.errors import AllocatorUsageError
from allocator.planning import noise_floor, plan_target
from fit.models import FitResult, LackOfFit
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config


def _config():
    return parse_config(tomllib.loads(example_config_text("micro")))


def _fit(**update) -> FitResult:
    fit = FitResult(law="multiplicative", inputs=[], params={"a": 1.0}, target="score", loss=0.0, converged=True,
                    n_points=18, n_params=1, data_hash="test", huber_delta=0.05, n_starts=1, residual_sd=0.012,
                    log_likelihood=0.0, aic=0.0, bic=0.0, experiment="exp", benchmark="bench", metric="score")
    return fit.model_copy(update=update)


def test_noise_floor_is_the_replicate_sd_only_with_enough_replicates() -> None:
    fit = _fit(replicate_sd=0.03)
    assert noise_floor(fit) == (0.012, "residual SD (0 replicate degrees of freedom)")
    few = LackOfFit(residual_sd=0.012, replicate_sd=0.03, ratio=0.4, df_pure=2)
    assert noise_floor(fit.model_copy(update={"lack_of_fit": few}))[0] == 0.012
    many = few.model_copy(update={"df_pure": 24})
    assert noise_floor(fit.model_copy(update={"lack_of_fit": many})) == (0.03, "seed-to-seed SD")
    assert noise_floor(fit.model_copy(update={"replicate_sd": None}))[1] == "residual SD (no replicated seeds)"


def test_plan_target_says_where_n_and_d_came_from() -> None:
    cfg = _config()
    rung = plan_target(cfg, None)
    assert rung.n == cfg.target_size.counted_params(cfg.design.param_count) and "target size" in rung.n_source
    count = plan_target(cfg, "1.4B", tokens="300B")
    assert (count.n, count.d, count.n_source, count.d_source) == (1.4e9, 3e11, "--model-size", "--tokens")
    per_param = plan_target(cfg, "70M", tokens_per_param=20.0)
    assert per_param.d == pytest.approx(1.4e9) and per_param.d_source.startswith("--tokens-per-param")
    with pytest.raises(AllocatorUsageError, match="give --tokens or --tokens-per-param, not both"):
        plan_target(cfg, None, tokens="1B", tokens_per_param=20.0)
    with pytest.raises(AllocatorUsageError, match="--tokens must be a positive count"):
        plan_target(cfg, None, tokens="abc")
