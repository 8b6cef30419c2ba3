"""fit/run_table.py: every run beside its baselines in the report."""

from __future__ import annotations

from grid.models import RunRecord

from fit.run_table import diagnostics_lines


def _run(rid, split, fitted_step_values, final):
    ck = {5: {"b/bpb": 3.0}, 10: {"b/bpb": final, **fitted_step_values}}
    return RunRecord(run_id=rid, experiment="e", design_version="d", recipe={"tool_diversity": 8.0}, model_size="m",
                     model_params=1e4, train_tokens=1e5, train_flops=1e9, seed=0, status="done", attempts=1,
                     job_id=None, split=split, error=None, source="design",
                     metadata={"checkpoints": {"chosen_step": 10, "last_step": 10}},
                     metrics={"b/bpb": final}, checkpoints=ck)


def test_every_run_gets_a_row_and_runs_above_the_baselines_are_counted():
    good = _run("r-good00000", "fit", {"b/bpb_uniform": 9.0, "b/bpb_unigram": 5.0, "b/seen_share": 1.0,
                                      "b/bpb_seen": 2.0, "b/bpb_tool": 0.5}, 2.0)
    bad = _run("r-bad000000", "heldout", {"b/bpb_uniform": 3.0, "b/bpb_unigram": 2.5, "b/seen_share": 0.25,
                                         "b/bpb_unseen": 4.0}, 3.6)
    plain = good.model_copy(update={"run_id": "r-nodiag000", "checkpoints": {}})
    lines = diagnostics_lines([good, bad, plain], "b", "bpb")
    assert lines[0].startswith("2 runs with diagnostics") and "1 above the uniform baseline" in lines[0]
    assert "1 above the unigram baseline" in lines[0]
    rows = [ln for ln in lines if ln.startswith("| r-")]
    assert len(rows) == 2 and "| 25% |" in rows[0] + rows[1] and "r-nodiag" not in "".join(rows)
    # the fitted target (e.g. the envelope) is shown beside the final value
    lines = diagnostics_lines([good], "b", "bpb", target={"r-good00000": 1.5})
    assert "| 1.500 | 2.000 |" in lines[-1]
    assert diagnostics_lines([plain], "b", "bpb") == []
