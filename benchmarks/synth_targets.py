"""Issue 31's targets for synth/: a judge that gates, useful answers, varied requests, the user's servers.

    .venv/bin/python benchmarks/synth_targets.py [--write-audit] [--tasks 300] [--git-tasks 60] [--no-git]
                                                 [--llm-url URL --llm-model NAME]

1. **Audit set** (``tests/fixtures/synth_audit.jsonl``, >= 200 labelled trajectories; ``--write-audit``
   regenerates it from seeds 101-110 with :mod:`synth.audit`): per defect kind, the offline judge's recall
   (share of that kind rejected by its rule) and precision (share of rows its rule rejects that carry that
   defect); and the share of ``clean`` / ``nonderivable`` rows kept (never filtered). With ``--llm-url``
   the seven-rubric LLM judge is measured on the same rows (mean of the gated dimensions >= 0.7).
2. **Default recipe** (``toolscale synth --example-recipe`` knobs, ``--tasks`` tasks, narratives on): kept
   trajectories whose every call failed; the most common query opener's share (first three words); the
   share of answers stating every requested field; distinct word 4-grams per 1,000 query tokens; the
   corpus's failure share.
3. **mcp-server-git** (a scratch repository, write tools on ``scratch = "copy:PATH"``): tasks with 2+ calls,
   arguments whose values were given or observed (never generated), and whether the repository is
   byte-identical afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from synth.audit import DEFECTS, KEPT_LABELS, inject
from synth.dataset import synthesize
from synth.judge import RuleJudge, judge_trajectory
from synth.models import Recipe
from synth.rules import requested_fields

AUDIT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "synth_audit.jsonl"


def write_audit(path: Path = AUDIT, per_kind: int = 40) -> int:
    """Generate the audit set (seeds 101-110, all training domains) and write it; returns its size."""
    rows: list[dict] = []
    clean, nonderiv = [], []
    for seed in range(101, 111):
        for row in synthesize(Recipe(task_count=150, tool_diversity=40, seed=seed, defect_rate=0.0)).rows:
            clean.append(json.loads(row)["messages"])
        for row in synthesize(Recipe(task_count=20, tool_diversity=40, seed=seed, defect_rate=1.0)).rows:
            r = json.loads(row)
            if json.loads(r["meta"])["nonderivable_calls"]:
                nonderiv.append(r["messages"])
    rng = random.Random(31)
    rng.shuffle(clean)
    rows += [{"label": "clean", "messages": m} for m in clean[:per_kind]]
    rows += [{"label": "nonderivable", "messages": m} for m in nonderiv[:per_kind]]
    used = set(range(per_kind))
    for kind in DEFECTS:
        n = 0
        for i, msgs in enumerate(clean):
            if i in used:
                continue
            bad = inject(kind, msgs, rng)
            if bad is not None:
                rows.append({"label": kind, "messages": bad})
                used.add(i)
                n += 1
            if n == per_kind:
                break
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def score_audit(judge=None, path: Path = AUDIT) -> dict:
    """Recall and precision per defect kind, and the kept share of each kept label."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    judge = judge or RuleJudge()
    flagged: dict[str, set[int]] = {k: set() for k in DEFECTS}
    rejected: set[int] = set()
    for i, r in enumerate(rows):
        v = judge_trajectory(judge, r["messages"], 0.7)
        if not v.accepted:
            rejected.add(i)
        for rule in v.failed_rules:
            if rule in flagged:
                flagged[rule].add(i)
            elif rule == "no_tool_call":
                flagged["all_calls_failed"].add(i)
    labels = [r["label"] for r in rows]
    out = {"rows": len(rows), "per_kind": {}, "kept": {}}
    for kind in DEFECTS:
        mine = {i for i, lab in enumerate(labels) if lab == kind}
        hit = flagged[kind]
        out["per_kind"][kind] = {"n": len(mine), "recall": len(mine & hit) / len(mine) if mine else None,
                                 "precision": len(mine & hit) / len(hit) if hit else None}
    for lab in KEPT_LABELS:
        mine = {i for i, x in enumerate(labels) if x == lab}
        out["kept"][lab] = {"n": len(mine), "kept": len(mine - rejected) / len(mine) if mine else None}
    defective = {i for i, x in enumerate(labels) if x not in KEPT_LABELS}
    out["overall_precision"] = len(rejected & defective) / len(rejected) if rejected else None
    return out


def _opener(q: str) -> str:
    return " ".join(re.findall(r"[a-z']+", q.lower())[:3])


def default_recipe(tasks: int) -> dict:
    """The default recipe's figures (see the module docstring)."""
    res = synthesize(Recipe(task_count=tasks, tool_diversity=40, narratives=True, seed=7))
    rows = [json.loads(r) for r in res.rows]
    failed_only = answered = asked = 0
    openers: Counter[str] = Counter()
    grams: set[tuple] = set()
    tokens = 0
    for r in rows:
        msgs = r["messages"]
        tools = [m for m in msgs if m["role"] == "tool"]
        failed_only += bool(tools) and all(m["content"].startswith('{"error"') for m in tools)
        query = next(m["content"] for m in msgs if m["role"] == "user")
        openers[_opener(query)] += 1
        words = re.findall(r"\w+|[^\w\s]", query.lower())
        tokens += len(words)
        grams |= {tuple(words[i:i + 4]) for i in range(len(words) - 3)}
        outs = [json.loads(m["content"]) for m in tools if not m["content"].startswith('{"error"')]
        want = requested_fields(query, outs)
        if want:
            asked += 1
            answered += all(any(v in msgs[-1]["content"] for v in vals) for vals in want.values())
    top, top_n = openers.most_common(1)[0]
    docs = res.manifest.corpus.documents
    return {"kept": len(rows), "kept_all_calls_failed": failed_only, "top_opener": top,
            "top_opener_share": top_n / len(rows), "answers_with_every_requested_field": answered / asked,
            "answers_asked": asked, "distinct_4grams_per_1000_tokens": 1000 * len(grams) / tokens,
            "corpus_failure_share": docs.get("failure", 0) / max(1, sum(docs.values())),
            "rejections": res.manifest.rejections}


def _digest(root: str) -> str:
    h = hashlib.sha256()
    for dirpath, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            h.update(p.encode())
            h.update(Path(p).read_bytes())
    return h.hexdigest()


def git_figures(tasks: int) -> dict:
    """mcp-server-git on a scratch copy (see the module docstring)."""
    from synth.userservers import UserServers
    from toolscale.config import UserServer

    tmp = tempfile.mkdtemp()
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "T")
    Path(repo, "README.md").write_text("zebra\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "add the zebra readme")
    git("branch", "feature-okapi")
    Path(repo, "notes.txt").write_text("draft\n")
    Path(repo, "README.md").write_text("zebra\nokapi\n")
    before = _digest(repo)
    server = UserServer(command=f"{sys.executable} -m mcp_server_git --repository {repo}", scratch=f"copy:{repo}")
    recipe = Recipe(task_count=tasks, tool_diversity=12, domains=("travel",), seed=0, servers=(server,),
                    arg_values={"repo_path": [repo]})
    with UserServers(recipe.servers, arg_values=recipe.arg_values) as live:
        res = synthesize(recipe, user_servers=live)
        given = {str(v) for vals in recipe.arg_values.values() for v in vals}
        observed = {str(v) for vals in live.observed("mcp-git").values() for v in vals}
        docs = {d.name: d for d in live.docs()["mcp-git"]}
    rows = [json.loads(r) for r in res.rows if json.loads(json.loads(r)["meta"])["server"] == "mcp-git"]
    multi = sum(len(json.loads(r["meta"])["chain"]) >= 2 for r in rows)
    n_args = from_seen = 0
    writes = Counter()
    for r in rows:
        seen = set(given) | observed
        for m in r["messages"]:
            if m["role"] == "tool":
                seen |= set(re.findall(r"[\w./:-]{3,}", m["content"]))
            for c in m.get("tool_calls") or []:
                name = c["function"]["name"]
                if docs[name].read_only is False:
                    writes[name] += 1
                for p, v in json.loads(c["function"]["arguments"]).items():
                    spec = docs[name].parameters["properties"].get(p, {})
                    for x in (v if isinstance(v, list) else [v]):
                        n_args += 1
                        from_seen += str(x) in seen or str(x) in str(spec.get("description", "")) \
                            or x in spec.get("enum", [])
    return {"git_tasks_kept": len(rows), "git_tasks_2plus_calls": multi / len(rows) if rows else 0.0,
            "git_args_from_observed_or_given": from_seen / n_args if n_args else 0.0,
            "git_write_calls": dict(writes), "repository_byte_identical": before == _digest(repo),
            "warnings": res.manifest.warnings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-audit", action="store_true")
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--git-tasks", type=int, default=60)
    ap.add_argument("--no-git", action="store_true")
    ap.add_argument("--llm-url")
    ap.add_argument("--llm-model", default="judge")
    args = ap.parse_args(argv)
    if args.write_audit or not AUDIT.exists():
        print(f"wrote {write_audit()} audit rows to {AUDIT}")
    a = score_audit()
    print(f"## audit set: {a['rows']} trajectories ({AUDIT.name}); offline rule judge")
    for kind, v in a["per_kind"].items():
        print(f"{kind:28s} n={v['n']:3d}  recall {v['recall']}  precision {v['precision']}   "
              "(target >= 0.9 / >= 0.9)")
    for lab, v in a["kept"].items():
        print(f"{lab:28s} n={v['n']:3d}  kept {v['kept']:.3f}   (must be kept)")
    print(f"overall precision of rejections {a['overall_precision']:.3f}")
    if args.llm_url:
        from synth.llm.client import LLMClient
        from synth.rubric import RubricJudge
        from toolscale.config import LLMRoleSpec

        client = LLMClient({"judge": LLMRoleSpec(base_url=args.llm_url, model=args.llm_model)})
        b = score_audit(RubricJudge(client))
        print("## the same rows, seven-rubric LLM judge + rules:", json.dumps(b))
    d = default_recipe(args.tasks)
    print(f"## default recipe, {args.tasks} tasks (seed 7, tool_diversity 40, narratives on)")
    for k, v in d.items():
        print(f"{k:36s} {v if not isinstance(v, float) else round(v, 4)}")
    print("targets: kept_all_calls_failed = 0; top_opener_share <= 0.10; answers_with_every_requested_field >= 0.95")
    if not args.no_git:
        g = git_figures(args.git_tasks)
        print(f"## mcp-server-git, {args.git_tasks} tasks, scratch copy")
        for k, v in g.items():
            print(f"{k:36s} {v if not isinstance(v, float) else round(v, 4)}")
        print("targets: git_tasks_2plus_calls >= 0.30; git_args_from_observed_or_given = 1.0; byte-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
