"""The bad-input contract across commands, table-driven: one line on stderr, no traceback, exit 2 for a user
mistake (1 for an environment failure), and an existing registry left byte for byte as it was.

Every case runs ``main(argv)`` against a fresh copy of one registry (a simulated experiment with a stored fit,
and an imported one); an exception escaping ``main`` is the traceback the user would have seen.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from toolscale.cli import main
from toolscale.cli.project import example_config_text

SMALL = Path(__file__).resolve().parent.parent / "fit" / "small.toml"
GOOD_CSV = "id,model,tokens,acc,lr\na,1e6,1e9,0.50,3\nb,2e6,2e9,0.55,3\nc,4e6,4e9,0.61,3\nd,8e6,8e9,0.64,3\n"
MAP = ["--map", "model=model_size", "--map", "tokens=train_tokens", "--map", "acc=score"]


CODE = (Path(__file__).resolve().parents[2] / "toolscale" / "presets" / "code.toml").read_text()


def _csv(rows: str, header: str = "model,tokens,acc") -> str:
    return header + "\n" + rows + "\n"


FILES = {
    "good.csv": GOOD_CSV,
    "empty.csv": "",
    "header.csv": "model,tokens,acc\n",
    "notes.txt": "not a table\n",
    "zero_n.csv": _csv("0,1e9,0.5\n1e6,1e9,0.6"),
    "neg_n.csv": _csv("-5,1e9,0.5\n1e6,1e9,0.6"),
    "zero_d.csv": _csv("1e6,0,0.5\n1e6,1e9,0.6"),
    "huge.csv": _csv("1e300,1e300,0.5\n1e6,1e9,0.6"),
    "big_score.csv": _csv("1e6,1e9,1e308\n2e6,1e9,0.6"),
    "neg_big_score.csv": _csv("1e6,1e9,-1e308\n2e6,1e9,0.6"),
    "text_score.csv": _csv("1e6,1e9,abc\n2e6,1e9,0.6"),
    "nan_size.csv": _csv("NaN,1e9,0.5\n2e6,1e9,0.6"),
    "suffix.csv": _csv("70X,1e9,0.5\n2e6,1e9,0.6"),
    "long_dup.csv": _csv("a,1e6,1e9,arc,0.5\na,1e6,1e9,arc,0.6", header="id,model,tokens,task,acc"),
    "inf_score.csv": _csv("1e6,1e9,inf\n2e6,1e9,0.6"),
    "share.csv": _csv("1e6,1e9,1.5\n2e6,1e9,0.6"),
    "dup.csv": _csv("a,1e6,1e9,0.5\na,2e6,1e9,0.6", header="id,model,tokens,acc"),
    "bad_truth.toml": "law = \n",
    "code_servers.toml": CODE.replace("[synth]\n", "[synth]\nservers = [\"python -m my_server\"]\n"),
    "code_axis.toml": CODE.replace('name = "spec_dependency"', 'name = "coverage_quota"'),
    "code_apis.toml": CODE.replace("max = 40\n", "max = 100\n", 1),
    "good2.csv": GOOD_CSV.replace("0.55", "0.56"),
    "split.csv": _csv("1e6,1e9,0.5,test\n2e6,1e9,0.6,fit", header="model,tokens,acc,part"),
    "micro.toml": example_config_text("micro"),
    "overlap.toml": SMALL.read_text() + '\n[eval]\nbenchmarks = ["indist-calls"]\nvalidation = "indist-calls"\n',
}

# (id, argv, exit code, text the one stderr line must contain); {reg} is the registry copy, {d} the folder
CASES = [
    # import-runs: the file and the column map
    ("import-missing-file", ["import-runs", "{d}/none.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "file not found"),
    ("import-not-a-table", ["import-runs", "{d}/notes.txt", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "expected a .csv or .parquet"),
    ("import-empty-file", ["import-runs", "{d}/empty.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "empty"),
    ("import-header-only", ["import-runs", "{d}/header.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "no rows"),
    ("import-map-no-equals", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", "--map",
                              "acc"], 2, "COLUMN=FIELD"),
    ("import-map-bad-target", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                               "--map", "lr=Learning Rate"], 2, "--map target 'Learning Rate' is unknown"),
    ("import-map-unknown-target", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                                   "--map", "lr=stderr"], 2, "--map target 'stderr' is unknown"),
    ("import-size-suffix", ["import-runs", "{d}/suffix.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "cannot parse the size suffix of '70X'"),
    ("import-where-no-column", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                                "--where", "State = 'finished'"], 2, "names no column 'State'"),
    ("import-long-two-values", ["import-runs", "{d}/long_dup.csv", "--experiment", "e", "--map", "id=run_id",
                                "--map", "task=benchmark", *MAP], 2, "has 2 values for benchmark 'arc'"),
    ("import-lmeval-no-results", ["import-runs", "{d}/nothing", "--from", "lm-eval", "--experiment", "e",
                                  "--map", "acc=score"], 2, "no lm-evaluation-harness results"),
    ("import-id-of-another-experiment", ["import-runs", "{d}/good.csv", "--experiment", "other", "--benchmark", "b",
                                         *MAP, "--map", "id=run_id"], 2, "already belongs to experiment 'imp'"),
    ("import-no-metric", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", "--map",
                          "model=model_size"], 2, "score"),
    ("import-missing-column", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                               "--map", "nope=seed"], 2, "'nope' not in the file"),
    ("import-no-benchmark", ["import-runs", "{d}/good.csv", "--experiment", "e", *MAP], 2, "--benchmark"),
    ("import-duplicate-id", ["import-runs", "{d}/dup.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                             "--map", "id=run_id"], 2, "same run_id"),
    # import-runs: values
    ("import-zero-params", ["import-runs", "{d}/zero_n.csv", "--experiment", "e", "--benchmark", "b",
                            "--map", "model=model_params", "--map", "tokens=train_tokens", "--map", "acc=score"], 2,
     "must be > 0"),
    ("import-negative-size", ["import-runs", "{d}/neg_n.csv", "--experiment", "e", "--benchmark", "b",
                              "--map", "model=model_params", "--map", "tokens=train_tokens", "--map", "acc=score"],
     2, "must be > 0"),
    ("import-zero-size-label", ["import-runs", "{d}/zero_n.csv", "--experiment", "e", "--benchmark", "b", *MAP],
     2, "must be finite and > 0"),
    ("import-zero-tokens", ["import-runs", "{d}/zero_d.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "must be > 0"),
    ("import-flops-overflow", ["import-runs", "{d}/huge.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "overflows"),
    ("import-score-1e308", ["import-runs", "{d}/big_score.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "within"),
    ("import-score-minus-1e308", ["import-runs", "{d}/neg_big_score.csv", "--experiment", "e", "--benchmark", "b",
                                  *MAP], 2, "within"),
    ("import-score-text", ["import-runs", "{d}/text_score.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "must be a number, got 'abc'"),
    ("import-size-nan", ["import-runs", "{d}/nan_size.csv", "--experiment", "e", "--benchmark", "b",
                         "--map", "model=model_params", "--map", "tokens=train_tokens", "--map", "acc=score"], 2,
     "is empty ('NaN')"),
    ("import-score-inf", ["import-runs", "{d}/inf_score.csv", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "finite"),
    ("import-share-above-one", ["import-runs", "{d}/share.csv", "--experiment", "e", "--benchmark", "bfcl", *MAP],
     2, "in [0, 1]"),
    ("import-heldout-2", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                          "--heldout-fraction", "2"], 2, "(0, 1)"),
    ("import-heldout-nan", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                            "--heldout-fraction", "nan"], 2, "(0, 1)"),
    ("import-heldout-negative", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                                 "--heldout-fraction", "-1"], 2, "(0, 1)"),
    ("import-heldout-inf", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                            "--heldout-fraction", "inf"], 2, "(0, 1)"),
    ("import-heldout-zero", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                             "--heldout-fraction", "0"], 2, "(0, 1)"),
    ("import-into-simulated", ["import-runs", "{d}/good.csv", "--experiment", "sim", "--benchmark", "b", *MAP], 2,
     "is simulated"),
    ("import-conflicting-values", ["import-runs", "{d}/good2.csv", "--experiment", "imp", "--benchmark", "b", *MAP,
                                   "--map", "id=run_id"], 2, "run b b/score: 0.55 -> 0.56"),
    ("import-bad-split", ["import-runs", "{d}/split.csv", "--experiment", "e", "--benchmark", "b", *MAP,
                          "--map", "part=split"], 2, "fit or heldout"),
    # allocate
    ("allocate-draws-0", ["allocate", "--budget", "5000", "--benchmark", "simulated", "--experiment", "sim",
                          "--draws", "0"], 2, "--draws"),
    ("allocate-draws-negative", ["allocate", "--budget", "5000", "--benchmark", "simulated", "--experiment", "sim",
                                 "--draws", "-3"], 2, "--draws"),
    ("allocate-budget-0", ["allocate", "--budget", "0", "--benchmark", "simulated"], 2, "--budget"),
    ("allocate-budget-nan", ["allocate", "--budget", "nan", "--benchmark", "simulated"], 2, "--budget"),
    ("allocate-bad-sweep", ["allocate", "--budget", "5000", "--benchmark", "simulated", "--experiment", "sim",
                            "--sweep", "10:1:3"], 2, "--sweep"),
    ("allocate-plot-unwritable", ["allocate", "--budget", "5000", "--benchmark", "simulated", "--experiment", "sim",
                                  "--sweep", "1000:10000:3", "--plot", "{d}/good.csv/sweep.png"], 2, "--plot"),
    ("allocate-unknown-experiment", ["allocate", "--budget", "5000", "--benchmark", "simulated", "--experiment",
                                     "zzz"], 2, "zzz"),
    # predict
    ("predict-input-given-twice", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                                   "model_size=1e6,tool_diversity=8,task_count=128,repair_rate=0.5,model_size=5"], 2,
     "model_size is given twice (as N)"),
    ("predict-size-suffix", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                             "model_size=1.4X,tool_diversity=8,task_count=128,repair_rate=0.5"], 2,
     "model_size must be a number (1.3e10, 70M, 2.8B), got '1.4X'"),
    ("fit-negative-seed", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--seed", "-1"], 2,
     "--seed: must be a seed in [0, 4294967295], got -1"),
    ("fit-axis-twice", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--axes",
                        "tool_diversity,tool_diversity"], 2, "names 'tool_diversity' twice"),
    ("simulate-negative-seed", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--seed", "-1"], 2,
     "--seed"),
    ("predict-fraction-above-one", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                                    "model_size=2e6,tool_diversity=8,task_count=128,repair_rate=1.5"], 2,
     "repair_rate is a fraction and must be in [0, 1], got 1.5"),
    ("predict-zero-size", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                           "model_size=0,tool_diversity=8,task_count=128,repair_rate=0.5"], 2, "model_size must be > 0"),
    ("predict-unknown-input", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                               "model_size=2e6,tool_diversity=8,task_count=128,repair_rate=0.5,foo=3"], 2,
     "unknown input 'foo'"),
    ("predict-unknown-fit-id", ["predict", "--fit-id", "f-nope", "--at", "model_size=2e6"], 2, "unknown fit id"),
    # next (issue 37): checked before any work
    ("next-runs-0", ["next", "--budget", "5000", "--benchmark", "simulated", "--runs", "0"], 2, "--runs"),
    ("next-max-cost-negative", ["next", "--budget", "5000", "--benchmark", "simulated", "--runs", "3",
                                "--max-cost", "-1"], 2, "--max-cost"),
    ("next-no-fit", ["next", "--budget", "5000", "--benchmark", "b", "--experiment", "imp", "--runs", "3"], 2,
     "run `toolscale fit --experiment imp --benchmark b` first"),
    ("next-few-draws", ["next", "--budget", "5000", "--benchmark", "simulated", "--runs", "3"], 2,
     "needs 20; refit with `toolscale fit --experiment sim --benchmark simulated --bootstrap 200`"),
    ("augment-missing-file", ["grid", "design", str(SMALL), "--augment", "{d}/none.json"], 2, "--augment"),
    ("augment-not-a-proposal", ["grid", "design", str(SMALL), "--augment", "{d}/good.csv"], 2,
     "not a `toolscale next --json` proposal"),
    # fit and report
    ("fit-unknown-experiment", ["fit", "--experiment", "zzz", "--benchmark", "simulated"], 2,
     "unknown experiment 'zzz'"),
    ("fit-holdout-fraction-2", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--holdout",
                                "top-flops:2"], 2, "[0, 1)"),
    ("fit-holdout-garbage", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--holdout", "last"], 2,
     "--holdout"),
    ("fit-negative-bootstrap", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--bootstrap", "-1"], 2,
     "--bootstrap"),
    ("fit-unknown-law", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--law", "nosuch"], 2,
     "nosuch"),
    ("fit-no-benchmark", ["fit", "--experiment", "sim"], 2, "--benchmark"),
    ("fit-envelope-without-checkpoints", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--target",
                                          "envelope", "--bootstrap", "0"], 2, "run(s) have none: r-"),
    # predict's inputs checked against their domains (sizes and diversity positive, a fraction in [0, 1])
    ("predict-zero-model-size", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                                 "model_size=0,tool_diversity=8,task_count=128,repair_rate=0.5"], 2,
     "model_size must be > 0 (a size), got 0"),
    ("predict-negative-diversity", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                                    "model_size=1e6,tool_diversity=-5,task_count=128,repair_rate=0.5"], 2,
     "tool_diversity must be > 0 (a diversity), got -5"),
    ("predict-fraction-above-one", ["predict", "--experiment", "sim", "--benchmark", "simulated", "--at",
                                    "model_size=1e6,tool_diversity=8,task_count=128,repair_rate=2"], 2,
     "repair_rate is a fraction and must be in [0, 1], got 2"),
    # a validation split that shares items with a test benchmark, named with the count
    ("validate-validation-overlaps-a-test", ["validate", "{d}/overlap.toml"], 2,
     "eval.validation 'indist-calls' shares 272 of its 272 items with test benchmark 'indist-calls'"),
    ("report-out-unwritable", ["report", "--experiment", "sim", "--benchmark", "simulated", "--out",
                               "{d}/good.csv/reports"], 2, "--out"),
    # export and status
    ("export-out-unwritable", ["export", "--experiment", "sim", "--out", "{d}/good.csv/runs.csv"], 2, "--out"),
    ("export-out-is-folder", ["export", "--experiment", "sim", "--out", "{d}"], 2, "is a folder"),
    ("export-out-is-the-registry", ["export", "--experiment", "sim", "--out", "{reg}"], 2,
     "this command reads; writing would replace it"),
    ("export-out-wrong-suffix", ["export", "--experiment", "sim", "--out", "{d}/runs.xlsx"], 2,
     "suffix '.xlsx' is not one of .csv"),
    ("export-out-a-device", ["export", "--experiment", "sim", "--out", "{d}/null.csv"], 2, "not a regular file"),
    ("export-out-in-proc", ["export", "--experiment", "sim", "--out", "/proc/runs.csv"], 2, "/proc/runs.csv"),
    ("export-out-empty", ["export", "--experiment", "sim", "--out", ""], 2, "--out is empty"),
    ("report-out-in-proc", ["report", "--experiment", "sim", "--benchmark", "simulated", "--out", "/proc/rep"], 2,
     "/proc/rep"),
    ("allocate-plot-without-sweep", ["allocate", "--experiment", "sim", "--benchmark", "simulated", "--budget",
                                     "5000", "--plot", "{d}/p.png"], 2, "add --sweep or drop --plot"),
    ("allocate-plot-bad-suffix", ["allocate", "--experiment", "sim", "--benchmark", "simulated", "--budget",
                                  "5000", "--sweep", "1000:5000:2", "--plot", "{d}/p.txt"], 2, "suffix '.txt'"),
    ("next-out-not-json", ["next", "--experiment", "sim", "--benchmark", "simulated", "--budget", "5000",
                           "--runs", "2", "--out", "{d}/n.txt"], 2, "suffix '.txt' is not one of .json"),
    ("next-out-empty", ["next", "--experiment", "sim", "--benchmark", "simulated", "--budget", "5000",
                        "--runs", "2", "--out", ""], 2, "--out is empty"),
    ("export-parquet-no-out", ["export", "--format", "parquet"], 2, "--out"),
    ("export-unknown-experiment", ["export", "--experiment", "zzz"], 2, "unknown experiment"),
    ("status-missing-registry", ["status", "--registry", "{d}/none.duckdb"], 2, "registry not found"),
    ("import-a-folder", ["import-runs", "{d}/nothing", "--experiment", "e", "--benchmark", "b", *MAP], 2,
     "nothing is a folder; give a .csv or .parquet file"),
    ("config-a-folder", ["grid", "design", "{d}/nothing", "--dry-run"], 2,
     "nothing is a folder; give the config file (TOML) in it"),
    ("status-unknown-experiment", ["status", "--experiment", "nope"], 2, "unknown experiment 'nope'; known:"),
    ("fit-unknown-axis-auto-law", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--axes", "nope"], 2,
     "unknown axis 'nope'; axes of this experiment: tool_diversity"),
    ("fit-unknown-validation", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--validation", "nope"],
     2, "--validation 'nope': no run of 'sim' was scored on it; benchmarks: simulated"),
    ("fit-infinite-huber", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--huber-delta", "inf"], 2,
     "--huber-delta must be > 0 and finite, got inf"),
    ("simulate-empty-benchmark", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--benchmark", ""], 2,
     "--benchmark '': a benchmark name is"),
    ("simulate-benchmark-with-slash", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--benchmark",
                                       "a/b"], 2, "--benchmark 'a/b'"),
    ("simulate-infinite-noise", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--noise", "inf"], 2,
     "--noise must be >= 0 and finite"),
    ("report-unfitted-metric", ["report", "--experiment", "sim", "--benchmark", "simulated", "--metric", "nope",
                                "--out", "{d}/rep"], 2, "no fit of metric 'nope' for sim/simulated"),
    ("effect-unknown-axis", ["effect", "--experiment", "sim", "--benchmark", "simulated", "--axis", "nope"], 2,
     "unknown axis 'nope': no run has it"),
    ("registry-check-missing", ["registry", "check", "--registry", "{d}/none.duckdb"], 2, "registry not found"),
    # simulate
    ("simulate-no-config", ["simulate", "--experiment", "s2"], 2, "--config"),
    ("simulate-negative-noise", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--noise", "-1"], 2,
     "--noise"),
    ("simulate-missing-truth", ["simulate", "--config", str(SMALL), "--experiment", "s2", "--truth",
                                "{d}/none.toml"], 2, "none.toml"),
    ("simulate-another-design", ["simulate", "--config", "{d}/micro.toml", "--experiment", "sim"], 2,
     "was simulated from design"),
    ("simulate-existing-experiment", ["simulate", "--config", str(SMALL), "--experiment", "sim", "--seed", "5"], 2,
     "--replace"),
    ("simulate-into-imported", ["simulate", "--config", str(SMALL), "--experiment", "imp", "--replace"], 2,
     "holds real runs"),
    # envs and the rest
    ("envs-check-missing-file", ["envs", "check", "{d}/none.jsonl"], 2, "no such file"),
    ("envs-check-zero-cpu", ["envs", "check", "{d}/good.csv", "--cpu-s", "0"], 2, "--cpu-s"),
    ("envs-build-negative-n", ["envs", "build", "--out", "{d}/envs", "--n", "-1"], 2, "--n"),
    ("init-existing-file", ["init", "{d}/good.csv"], 2, "--force"),
    ("init-code-other-preset", ["init", "{d}/new.toml", "--domain", "code", "--preset", "proxy"], 2, "--domain code"),
    # the code domain: tool-domain settings, axes it does not have, more APIs than it holds
    ("code-domain-mcp-servers", ["grid", "design", "{d}/code_servers.toml", "--dry-run"], 2, "synth.servers"),
    ("code-domain-tool-axis", ["grid", "design", "{d}/code_axis.toml", "--dry-run"], 2, "coverage_quota"),
    ("code-domain-too-many-apis", ["grid", "design", "{d}/code_apis.toml", "--dry-run"], 2, "68 library APIs"),
    ("fit-experiments-one", ["fit", "--experiments", "sim", "--benchmark", "simulated"], 2, "two or more"),
    ("fit-experiments-and-experiment", ["fit", "--experiment", "sim", "--experiments", "sim,imp"], 2, "not both"),
    ("fit-experiments-unknown", ["fit", "--experiments", "sim,zzz", "--benchmark", "simulated"], 2,
     "unknown experiment"),
    ("unknown-command", ["fitt"], 2, "invalid choice"),
    ("unknown-option", ["status", "--bogus"], 2, "--bogus"),
]

# Environment failures: one line naming the file, exit 1.
BROKEN = [
    ("status-truncated-registry", ["status"], "corrupt or truncated"),
    ("fit-truncated-registry", ["fit", "--experiment", "sim", "--benchmark", "simulated", "--bootstrap", "0"],
     "corrupt or truncated"),
    ("export-truncated-registry", ["export", "--experiment", "sim"], "corrupt or truncated"),
    ("import-truncated-registry", ["import-runs", "{d}/good.csv", "--experiment", "e", "--benchmark", "b", *MAP],
     "corrupt or truncated"),
]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A registry with a simulated experiment ``sim`` (and a stored fit) and an imported experiment ``imp``."""
    d = tmp_path_factory.mktemp("bad-input-base")
    reg = str(d / "base.duckdb")
    (d / "good.csv").write_text(GOOD_CSV)
    assert main(["simulate", "--config", str(SMALL), "--registry", reg, "--experiment", "sim", "--noise", "0.01"]) == 0
    assert main(["fit", "--registry", reg, "--experiment", "sim", "--benchmark", "simulated", "--bootstrap", "8",
                 "--no-interaction"]) == 0
    assert main(["import-runs", str(d / "good.csv"), "--registry", reg, "--experiment", "imp", "--benchmark", "b",
                 *MAP, "--map", "id=run_id"]) == 0
    return Path(reg)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _setup(tmp_path: Path, base: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "nothing").mkdir()
    (tmp_path / "null.csv").symlink_to("/dev/null")  # an output path that is a device, not a file
    reg = tmp_path / "reg.duckdb"
    shutil.copy(base, reg)
    return reg


def _expand(argv: list[str], reg: Path, d: Path) -> list[str]:
    out = [a.replace("{d}", str(d)).replace("{reg}", str(reg)) for a in argv]
    if "--registry" not in out and out[0] not in ("init", "fitt", "envs", "validate", "grid"):
        out += ["--registry", str(reg)]
    return out


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    return lines[0]


@pytest.mark.parametrize(("argv", "code", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_user_mistake_is_one_line_exit_2_and_changes_nothing(argv, code, needle, base, tmp_path, capsys):
    reg = _setup(tmp_path, base)
    before = _digest(reg)
    rc = main(_expand(argv, reg, tmp_path))  # an exception here is a traceback the user would see
    line = _one_line_error(capsys)
    assert rc == code, line
    assert needle in line
    assert _digest(reg) == before and not Path(f"{reg}.wal").exists()


@pytest.mark.parametrize(("argv", "needle"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_registry_is_one_line_naming_the_file(argv, needle, base, tmp_path, capsys):
    reg = _setup(tmp_path, base)
    size = reg.stat().st_size
    with open(reg, "r+b") as fh:
        fh.truncate(size // 2)
    before = _digest(reg)
    rc = main(_expand(argv, reg, tmp_path))
    line = _one_line_error(capsys)
    assert rc == 1 and needle in line and str(reg) in line
    assert "registry check" in line  # the way to find out what is readable
    assert _digest(reg) == before


def test_the_suite_has_at_least_40_cases():
    assert len(CASES) + len(BROKEN) >= 40


def test_a_stored_fit_named_with_another_law_or_metric_is_refused(base, tmp_path, capsys):
    reg = _setup(tmp_path, base)
    assert main(["fits", "list", "--registry", str(reg), "--experiment", "sim", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    fit = (listed if isinstance(listed, list) else listed["fits"])[0]
    other = "chinchilla" if fit["law"] != "chinchilla" else "additive"
    for argv in (["predict", "--fit-id", fit["fit_id"], "--law", other, "--at", "model_size=1e9"],
                 ["report", "--fit-id", fit["fit_id"], "--benchmark", "simulated", "--law", other, "--out",
                  str(tmp_path / "rep")],
                 ["report", "--fit-id", fit["fit_id"], "--benchmark", "simulated", "--metric", "loss", "--out",
                  str(tmp_path / "rep")]):
        before = _digest(reg)
        assert main([*argv, "--registry", str(reg)]) == 2
        line = _one_line_error(capsys)
        assert f"fit {fit['fit_id']} is of" in line and ("not 'loss'" in line or f"not {other!r}" in line), line
        assert _digest(reg) == before
