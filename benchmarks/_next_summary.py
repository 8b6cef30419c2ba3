"""The records of ``benchmarks/next_runs.py``: widths, coverage and regret by policy and K, and the target ratios."""

from __future__ import annotations

import numpy as np

__all__ = ["records", "ratios"]

REC = {"benchmark": "next_runs"}


def _by(rows: list[dict], **match) -> list[dict]:
    return [r for r in rows if all(r.get(k) == v for k, v in match.items())]


def ratios(rows: list[dict], policy: str, k: int, key: str) -> dict[str, float]:
    """Per truth: mean of ``key`` under ``policy`` over the mean under ``random`` (same seeds), at ``k``."""
    out = {}
    for truth in sorted({r["truth"] for r in rows}):
        a = [r[key] for r in _by(rows, truth=truth, policy=policy, k=k) if r[key] is not None]
        b = [r[key] for r in _by(rows, truth=truth, policy="random", k=k) if r[key] is not None]
        if a and b:
            out[truth] = float(np.mean(a) / np.mean(b)) if np.mean(b) > 0 else float("inf")
    return out


def median_ratio_interval(rows: list[dict], policy: str, k: int, key: str, *, draws: int = 2000,
                          seed: int = 0) -> list[float] | None:
    """90% bootstrap interval of the median over truths of :func:`ratios`: each truth's seeds are resampled with
    replacement, ``policy`` and ``random`` together (they share a seed's first fit). None with one seed or none."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for r in _by(rows, policy=policy, k=k):
        twin = _by(rows, truth=r["truth"], seed=r["seed"], policy="random", k=k)
        if twin and r[key] is not None and twin[0][key] is not None:
            pairs.setdefault(r["truth"], []).append((float(r[key]), float(twin[0][key])))
    if not pairs or min(len(v) for v in pairs.values()) < 2:
        return None
    rng = np.random.default_rng(seed)
    meds = []
    for _ in range(draws):
        per = []
        for v in pairs.values():
            a = np.array(v)[rng.integers(0, len(v), len(v))]
            per.append(a[:, 0].mean() / a[:, 1].mean() if a[:, 1].mean() > 0 else np.inf)
        meds.append(float(np.median(per)))
    return [float(np.percentile(meds, 5)), float(np.percentile(meds, 95))]


def _ratio_record(rows: list[dict], policy: str, k: int, key: str, what: str, target: str) -> dict:
    per = ratios(rows, policy, k, key)
    vals = np.array(list(per.values()), dtype=float)
    pol = [r[key] for r in _by(rows, policy=policy, k=k)]
    ran = [r[key] for r in _by(rows, policy="random", k=k)]
    pooled = float(np.sum(pol) / np.sum(ran)) if ran and np.sum(ran) > 0 else None
    return {**REC, "figure": f"{what}, {policy} / random at equal cost, K = {k}: median over {len(per)} truths; "
            f"min; max; pooled over experiments", "value": [float(np.median(vals)), float(vals.min()),
                                                            float(vals.max()), pooled] if vals.size else None,
            "unit": "ratio", "target": target, "per_truth": per,
            "interval_90": median_ratio_interval(rows, policy, k, key)}


def _policy_records(rows: list[dict]) -> list[dict]:
    out = []
    for k in sorted({r["k"] for r in rows}):
        for policy in ("next", "random", "d_optimal", "seeds"):
            sub = _by(rows, policy=policy, k=k)
            if not sub:
                continue
            widths = [r["width"] for r in sub if r["width"] is not None]
            out.append({**REC, "figure": f"{policy}, K = {k} ({len(sub)} experiments): gain-interval width "
                        "(median); coverage; true regret (mean); cost (median)",
                        "value": [float(np.median(widths)), float(np.mean([r["inside"] for r in sub])),
                                  float(np.mean([r["regret"] for r in sub])), float(np.median([r["cost"] for r in sub]))],
                        "unit": "score points; share; score points; usd", "target": "none (the ratios below)"})
    return out


def _calibration(rows: list[dict]) -> list[dict]:
    out = []
    for k in sorted({r["k"] for r in rows}):
        sub = _by(rows, policy="next", k=k)
        if not sub:
            continue
        real = np.array([r["width"] / r["next_expected_width"] for r in sub if r["width"] and r["next_expected_width"]])
        out.append({**REC, "figure": f"next, K = {k}: realised width after the refit / the width next expected "
                    "(median; min; max)", "value": [float(np.median(real)), float(real.min()), float(real.max())],
                    "unit": "ratio", "target": "about 1 (the preposterior's calibration)"})
    return out


def records(rows: list[dict], timing: dict | None = None) -> list[dict]:
    """Every figure of the benchmark (``rows``: the evaluations; ``timing``: the default-design timing)."""
    out = []
    if timing is not None:
        cpu = timing.get("cpu_seconds")
        load = timing.get("load_average")
        out.append({**REC, "figure": f"toolscale next --runs 12 on the default design ({timing['draws']} draws, "
                    f"{timing['candidates']} candidates): wall; CPU of the process"
                    + (f" (load average {load:.1f} on the 2 cores)" if load is not None else ""),
                    "value": [timing["seconds"], cpu], "unit": "s", "target": "<= 60 s on 2 cores"})
    if not rows:
        return out
    ks = sorted({r["k"] for r in rows})
    k_main = 12 if 12 in ks else ks[0]
    out.append(_ratio_record(rows, "next", k_main, "width", "gain-interval width", "<= 0.67"))
    out.append(_ratio_record(rows, "next", k_main, "regret", "true regret", "<= 0.67"))
    nxt = _by(rows, policy="next")
    out.append({**REC, "figure": f"coverage of the 90% gain interval after next's runs, K = {', '.join(map(str, ks))} "
                f"({len(nxt)})", "value": float(np.mean([r["inside"] for r in nxt])), "unit": "share",
                "target": "0.85-0.95"})
    out.append({**REC, "figure": f"coverage after augmentation, every policy and K ({len(rows)})",
                "value": float(np.mean([r["inside"] for r in rows])), "unit": "share", "target": "0.85-0.95"})
    befores = {(r["truth"], r["seed"]): r["before"] for r in rows}
    out.append({**REC, "figure": f"the thin design before any run: coverage; gain-interval width (median) "
                f"({len(befores)})", "value": [float(np.mean([b["inside"] for b in befores.values()])),
                                               float(np.median([b["width"] for b in befores.values()]))],
                "unit": "share; score points", "target": "none"})
    for k in ks:
        if k != k_main:
            out.append(_ratio_record(rows, "next", k, "width", "gain-interval width", "<= 0.67 (at K = 12)"))
            out.append(_ratio_record(rows, "next", k, "regret", "true regret", "<= 0.67 (at K = 12)"))
    for policy in [p for p in ("d_optimal", "seeds") if _by(rows, policy=p, k=k_main)]:
        out.append(_ratio_record(rows, policy, k_main, "width", "gain-interval width", "none (comparison)"))
        out.append(_ratio_record(rows, policy, k_main, "regret", "true regret", "none (comparison)"))
    return out + _calibration(rows) + _policy_records(rows)
