"""train/lr_choice.py: the scan's score, the best rate per rung (failed runs left out), and the carrying rule."""

from __future__ import annotations

import math

import pytest

from train.lr_choice import MAX_EXPONENT, ScanRun, best_rates, carry_rates, scan_loss


def _run(rung, lr, bpb, width=12, status="done", error=None, loss=None):
    """A scan run scored ``bpb`` on validation; its training loss (never the choice) defaults to the opposite order."""
    train = None if bpb is None else (loss if loss is not None else 10.0 - bpb)
    return ScanRun(rung=rung, width=width, learning_rate=lr, steps=10, status=status, loss=train, valid_bpb=bpb,
                   error=error)


def test_scan_loss_is_the_mean_of_the_last_tenth_of_the_curve():
    curve = [{"step": s, "loss": 10.0 - s / 10} for s in range(1, 101)]
    assert scan_loss(curve) == pytest.approx(sum(10.0 - s / 10 for s in range(90, 101)) / 11)
    assert scan_loss([{"step": 3, "loss": 2.5}]) == 2.5
    with pytest.raises(ValueError, match="empty"):
        scan_loss([])


def test_best_rate_is_chosen_by_validation_never_training_loss_and_flags_the_grid_edge():
    runs = [_run("a", 0.001, 3.0), _run("a", 0.01, 2.0), _run("a", 0.1, None, status="failed", error="nan at step 3"),
            _run("b", 0.001, 2.5, width=36), _run("b", 0.01, 2.9, width=36), _run("b", 0.1, 3.1, width=36)]
    best, edge = best_rates(runs)
    assert best == {"a": 0.01, "b": 0.001}  # a's diverged 0.1 is not chosen; the training losses say the opposite
    assert edge == ["b"]  # b's best is the smallest rate tried
    with pytest.raises(ValueError, match="every learning rate of rung 'c' failed; first error: nan at step 3"):
        best_rates([_run("c", 0.1, None, status="failed", error="nan at step 3")])


def test_an_interior_best_is_the_parabola_vertex_so_a_tie_gives_the_rate_between():
    tie = [_run("m", 0.006, 2.5), _run("m", 0.012, 2.0), _run("m", 0.024, 2.0), _run("m", 0.048, 2.6)]
    best, edge = best_rates(tie)
    assert 0.012 < best["m"] < 0.024 and edge == []  # the two tied rates give one between them, not either
    sym = [_run("m", 0.01, 3.0), _run("m", 0.02, 2.0), _run("m", 0.04, 3.0)]
    assert best_rates(sym)[0]["m"] == pytest.approx(0.02)  # symmetric in log rate: the middle one
    flat = [_run("m", 0.01, 2.0), _run("m", 0.02, 2.0), _run("m", 0.04, 2.5)]
    assert 0.01 <= best_rates(flat)[0]["m"] <= 0.04


def test_power_rule_fits_the_exponent_from_the_scanned_widths_and_carries_it():
    widths = {"xs": 12, "m": 36, "l": 74}
    k, anchor, rates = carry_rates({"xs": 0.02, "m": 0.02 / 3}, widths, "power")
    assert anchor == "xs" and k == pytest.approx(1.0)
    assert rates["l"] == pytest.approx(0.02 * 12 / 74) and rates["m"] == pytest.approx(0.02 / 3)
    k, _, rates = carry_rates({"xs": 0.02, "m": 0.02}, widths, "power")
    assert k == 0.0 and rates["l"] == pytest.approx(0.02)
    k, _, _ = carry_rates({"xs": 0.001, "m": 0.1}, widths, "power")  # a larger width wanting more: clipped at 0
    assert k == 0.0
    k, _, _ = carry_rates({"xs": 0.1, "m": 1e-6}, widths, "power")
    assert k == MAX_EXPONENT
    # three widths: least squares in log-log; one noisy middle rung moves k less than it would alone
    three = {"xs": 12, "s": 24, "m": 48, "l": 96}
    k3, _, rates = carry_rates({"xs": 0.04, "s": 0.04, "m": 0.01}, three, "power")
    x = [math.log(w) for w in (12, 24, 48)]
    y = [math.log(v) for v in (0.04, 0.04, 0.01)]
    mx, my = sum(x) / 3, sum(y) / 3
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
    assert k3 == pytest.approx(-slope) and rates["l"] == pytest.approx(math.exp(my + slope * (math.log(96) - mx)))


def test_inverse_width_rule_and_one_scanned_width():
    widths = {"xs": 12, "m": 36}
    k, _, rates = carry_rates({"xs": 0.03}, widths, "inverse_width")
    assert k == 1.0 and rates["m"] == pytest.approx(0.01)
    k, _, rates = carry_rates({"m": 0.01}, widths, "power")  # one width: the inverse-width default
    assert k == 1.0 and rates["xs"] == pytest.approx(0.03)
    with pytest.raises(ValueError, match="unknown learning-rate rule 'sqrt'"):
        carry_rates({"m": 0.01}, widths, "sqrt")
    assert math.isfinite(carry_rates({"xs": 0.03, "m": 0.01}, widths)[0])


def test_equal_best_rates_give_a_positive_zero_exponent():
    # equal best rates have slope 0.0; max(-0.0, 0.0) kept -0.0, which lr-scan printed as "(h / 8)^--0.000"
    k, _, rates = carry_rates({"xs": 0.048, "s": 0.048, "m": 0.048}, {"xs": 8, "s": 12, "m": 16, "l": 24}, "power")
    assert k == 0.0 and math.copysign(1.0, k) == 1.0
    assert f"^-{k:.3f}" == "^-0.000"
    assert rates["l"] == pytest.approx(0.048)
