"""fit/models.py: the warnings a fit carries (issue 30: fits that say what they are)."""

from __future__ import annotations

import pytest

from fit.models import MIN_POINTS_PER_PARAM, FitResult, HeldoutMetrics, LackOfFit, fit_warnings


def _fit(**update) -> FitResult:
    """A well-determined fit with nothing to warn about; ``update`` sets what a test changes."""
    base = dict(law="saturating", inputs=[], params={"a": 1.0, "b": 0.5}, target="score", loss=0.01, converged=True,
                n_points=40, n_params=2, data_hash="h", huber_delta=1.0, n_starts=4, residual_sd=0.01, log_likelihood=0.0,
                aic=0.0, bic=0.0)
    return FitResult(**{**base, **update})


def _heldout(inside: int, n: int) -> HeldoutMetrics:
    return HeldoutMetrics(n=n, mae=0.01, max_error=0.02, rmse=0.01, interval_coverage=inside / n, interval_level=0.9)


def test_a_clean_fit_has_no_warnings():
    assert fit_warnings(_fit(heldout=_heldout(45, 50))) == []


def test_each_warning_names_what_it_found():
    (bound,) = fit_warnings(_fit(at_bounds=["b"]))
    assert "parameters at a bound of their range: b" in bound
    assert fit_warnings(_fit(at_bounds=["b"], fixed={"b": 0.5})) == []  # a held parameter is not stuck
    (cov,) = fit_warnings(_fit(heldout=_heldout(31, 50)))  # 62% against a nominal 90%, the case
    assert "held-out coverage 31 of 50 (62%) is below the nominal 90% beyond binomial noise" in cov
    (lof,) = fit_warnings(_fit(lack_of_fit=LackOfFit(residual_sd=0.03, replicate_sd=0.01, ratio=3.0, p_value=1e-4,
                                                   flagged=True)))
    assert lof.startswith("lack of fit: residual SD is 3.0x the replicate SD")
    (early,) = fit_warnings(_fit(envelope_at_first={"fit": 3, "heldout": 6}, heldout=_heldout(8, 9)))
    assert early.startswith("3 of 40 fitted runs and 6 of 9 held out are best on validation at their first kept "
                            "checkpoint") and 'checkpoint_spacing = "log"' in early
    (early,) = fit_warnings(_fit(envelope_at_first={"fit": 2}))  # no held-out runs: none named
    assert early.startswith("2 of 40 fitted runs are best")
    (few,) = fit_warnings(_fit(n_points=9, n_params=2))
    assert few.startswith("2 parameters on 9 runs (4.5 per parameter, fewer than 5)") and MIN_POINTS_PER_PARAM == 5


@pytest.mark.parametrize(("inside", "n", "warned"), [(42, 50, False), (40, 50, True), (4, 5, False), (2, 5, True)])
def test_coverage_is_judged_against_binomial_noise_not_as_a_plain_number(inside, n, warned):
    """84% of 50 is within the noise of a 90% interval (P(X <= 42) = 0.12); 80% is not (P = 0.02). Of 5 runs,
    4 inside is ordinary; 2 is not (P = 0.009)."""
    out = fit_warnings(_fit(heldout=_heldout(inside, n)))
    assert any("below the nominal" in w for w in out) is warned
