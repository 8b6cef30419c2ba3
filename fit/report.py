"""Reports of a fit: Markdown, a self-contained HTML page (PNG plots inlined as base64), and JSON.

:func:`report_data` collects every number (pure); :func:`render_markdown` and
:func:`render_html` turn it into text (pure); :func:`make_figures` draws the PNGs with
matplotlib's Agg backend; :func:`write_report` is the file edge. Reports of simulated
data say so in the title, in a banner, and in every plot.

Plots: each axis' fitted curve over the data (partial dependence: the law's mean
prediction over the fitted runs with that axis set to each level), predicted vs
actual on held-out runs with their prediction intervals, residuals against training
FLOPs, and the hypothesis comparison.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fit.laws import law_of
from fit.models import AllocationBasis, ExperimentFit
from toolscale.files import atomic_write_bytes

__all__ = ["report_data", "render_markdown", "render_html", "make_figures", "write_report", "report_stem",
           "axes_figure", "heldout_figure", "residuals_figure", "hypotheses_figure", "FIGURE_MAKERS"]

SIM_BANNER = ("SIMULATED DATA: every number below comes from `toolscale simulate` (a known law plus noise), "
              "not from trained models.")
PLAN_MAE = 0.0285
"""The research plan's reference: MAE 0.0285 at 16x extrapolation (SynthAPI)."""


def report_stem(result: ExperimentFit) -> str:
    """File stem: ``<experiment>__<benchmark>`` with path separators replaced."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{result.fit.experiment}__{result.fit.benchmark}")
    return safe or "report"


def _num(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def report_data(result: ExperimentFit, fit_id: str | None = None) -> dict[str, Any]:
    """Every number of the report as a JSON-ready dict (no plots); ``fit_id``: the stored fit it renders."""
    from fit.models import fit_warnings

    f = result.fit
    params = []
    for name, value in f.params.items():
        iv = f.intervals.get(name)
        params.append({"name": name, "estimate": value, "lo": iv.lo if iv else None, "hi": iv.hi if iv else None,
                       "se": iv.se if iv else None, "fixed": name in f.fixed})
    h = f.heldout
    data: dict[str, Any] = {
        "title": f"Scaling-law report: {f.experiment} / {f.benchmark}/{f.metric}",
        "simulated": f.simulated, "experiment": f.experiment, "benchmark": f.benchmark, "metric": f.metric,
        "law": f.law, "target": f.target, "formula": law_of(f).formula, "converged": f.converged, "message": f.message,
        "at_bounds": f.at_bounds, "fixed": f.fixed, "priors": {k: list(v) for k, v in f.priors.items()},
        "n_points": f.n_points, "n_params": f.n_params, "data_hash": f.data_hash, "huber_delta": f.huber_delta,
        "residual_sd": f.residual_sd, "replicate_sd": f.replicate_sd, "aic": f.aic, "bic": f.bic,
        "n_bootstrap": len(f.bootstrap), "bootstrap_seed": f.bootstrap_seed,
        "holdout_rule": f.holdout_rule, "holdout_source": f.holdout_source,
        "inputs": [i.model_dump() for i in f.inputs], "params": params,
        "residual_scale": f.residual_scale, "n_skipped": f.n_skipped,
        "lack_of_fit": f.lack_of_fit.model_dump() if f.lack_of_fit else None,
        "form_weights": {f.law: f.form_weight, **{o.law: o.form_weight for o in f.forms}} if f.forms else {},
        "rolling": [s.model_dump() for s in f.rolling],
        "heldout": None if h is None else {
            "n": h.n, "mae": h.mae, "max_error": h.max_error, "rmse": h.rmse,
            "interval_coverage": h.interval_coverage, "interval_level": h.interval_level,
            "extrapolation_factor": h.extrapolation_factor, "plan_reference_mae": PLAN_MAE,
            "are_seed_means": h.are_seed_means, "recipes": h.recipes,
            **_actual_spread(h), "points": [p.model_dump() for p in h.points]},
        "interaction": None, "fit_id": fit_id, "warnings": fit_warnings(f),
        "options": dict(f.options), "weighted": f.weighted,
    }
    if f.selection is not None:  # only with --law auto (reports of a named law keep their shape)
        data["selection"] = f.selection.model_dump()
    if result.interaction is not None:
        i = result.interaction
        data["interaction"] = {
            "supported": i.supported, "verdict": i.verdict, "strength": i.strength, "delta_bic": i.delta_bic,
            "lr_stat": i.lr_stat, "lr_p": i.lr_p, "lr_p_method": i.lr_p_method, "f_stat": i.f_stat, "f_p": i.f_p, "interaction_coef": i.interaction_coef,
            "gain_ratio": i.gain_ratio, "gain_ratio_lo": i.gain_ratio_lo, "gain_ratio_hi": i.gain_ratio_hi,
            "fits": {k: {"aic": v.aic, "bic": v.bic, "rss": v.rss, "n_params": v.n_params,
                         "heldout_mae": v.heldout_mae, "converged": v.converged} for k, v in i.fits.items()}}
    return json.loads(json.dumps(data, default=_num), parse_constant=lambda c: None)


def _actual_spread(h) -> dict[str, float | None]:
    """The held-out values' range and the MAE relative to their mean absolute value (scale-free error)."""
    actual = [p.actual for p in h.points]
    if not actual:
        return {"actual_min": None, "actual_max": None, "relative_mae": None}
    scale = sum(abs(a) for a in actual) / len(actual)
    return {"actual_min": min(actual), "actual_max": max(actual),
            "relative_mae": h.mae / scale if scale > 0 else None}


def _f(x: Any, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _summary_lines(d: dict[str, Any]) -> list[str]:
    lines = [f"- Law: `{d['law']}`: {d['formula']}",
             f"- Runs fitted: {d['n_points']} ({d['n_params']} free parameters); converged: {_f(d['converged'])}",
             f"- Residual SD: {_f(d['residual_sd'])}; replicate (pure-noise) SD: {_f(d['replicate_sd'])}",
             f"- Hold-out: `{d['holdout_rule']}` ({d['holdout_source']}); bootstrap refits: {d['n_bootstrap']}",
             f"- Residuals: {d['residual_scale']} (Huber delta {_f(d['huber_delta'])} in those units)"]
    if d["n_skipped"]:
        lines.append(f"- Skipped {d['n_skipped']} done runs without {d['benchmark']}/{d['metric']}")
    lof = d["lack_of_fit"]
    if lof is not None:
        flag = "**LACK OF FIT**: the law misses structure the replicated runs show" if lof["flagged"] else "no lack of fit"
        test = "" if lof["f_stat"] is None else f", F {_f(lof['f_stat'], 3)} on ({lof['df_lack']}, {lof['df_pure']}) df, " \
            f"p = {_f(lof['p_value'], 3)}"
        lines.append(f"- Residual SD / replicate SD = {_f(lof['ratio'], 3)}{test}: {flag}")
    if d["form_weights"]:
        lines.append("- Prediction intervals mix the forms by BIC weight: " +
                     ", ".join(f"{k} {v:.2f}" for k, v in d["form_weights"].items()))
    if d["message"]:
        lines.append(f"- Diagnostics: {d['message']}")
    if d["at_bounds"]:
        lines.append(f"- Parameters at a bound: {', '.join(d['at_bounds'])}")
    return lines


def _error_unit(d: dict[str, Any]) -> str:
    if d["target"] != "score":
        return "loss"
    return "score points" if d["metric"] == "score" else f"in {d['metric']}"


def _heldout_lines(d: dict[str, Any]) -> list[str]:
    h = d["heldout"]
    if h is None:
        return ["Nothing was held out (`--holdout none`): no extrapolation check."]
    cov = "n/a (no bootstrap)" if h["interval_coverage"] is None else \
        f"{h['interval_coverage']:.0%} of {h['n']} (nominal {h['interval_level']:.0%})"
    ext = "n/a" if h["extrapolation_factor"] is None else f"{h['extrapolation_factor']:.3g}x"
    lines = [f"- Held-out runs: {h['n']}; extrapolation factor (max held-out FLOPs / max fitted FLOPs): {ext}",
             f"- MAE {_f(h['mae'])}, max error {_f(h['max_error'])}, RMSE {_f(h['rmse'])} "
             f"({_error_unit(d)})",
             f"- Prediction-interval coverage: {cov}"]
    if h["relative_mae"] is not None:
        lines.append(f"- Held-out values {_f(h['actual_min'])} to {_f(h['actual_max'])}: the MAE is "
                     f"{h['relative_mae']:.0%} of their mean")
    if h.get("are_seed_means") is not None:
        lines.append(f"- On seed means ({h.get('recipes')} held-out recipes, each averaged over its seeds): mean "
                     f"|error| / actual = {h['are_seed_means']:.1%} (Choshen et al. 2024's absolute relative error)")
    if d["target"] == "score" and d["metric"] == "score":  # the reference is in accuracy points
        verdict = "better than" if h["mae"] <= h["plan_reference_mae"] else "worse than"
        lines.append(f"- The research plan's reference (SynthAPI, 16x): MAE {h['plan_reference_mae']} score points; "
                     f"this fit is {verdict} it.")
    return lines


def _interaction_lines(d: dict[str, Any]) -> list[str]:
    i = d["interaction"]
    if i is None:
        return ["Not run (the law needs diversity and quality axes and a score)."]
    ci = "" if i["gain_ratio_lo"] is None else f" (95% CI {_f(i['gain_ratio_lo'], 3)} to {_f(i['gain_ratio_hi'], 3)})"
    says = {"additive": "the data cannot tell the forms apart", "amplifies": "quality amplifies what diversity buys",
            "discounts": "quality discounts what diversity buys"}[i["verdict"]]
    lines = [f"- Verdict: **{i['verdict']}** ({says}); supported form **{i['supported']}** ({i['strength']}; "
             f"BIC(additive) - best other = {_f(i['delta_bic'], 3)})",
             f"- The one pre-declared test, the likelihood ratio of the interaction term (kappa = 0), decides at 5%: "
             f"LR {_f(i['lr_stat'], 3)}, p = {_f(i['lr_p'], 3)} ({i['lr_p_method']}); reported only: linearised F "
             f"test F {_f(i['f_stat'], 3)}, p = {_f(i['f_p'], 3)}",
             f"- Effect size: diversity gain at the highest quality / at the lowest = {_f(i['gain_ratio'], 3)}{ci} "
             "(1 = additive)", "",
             "| law | k | RSS | AIC | BIC | held-out MAE |", "|---|---|---|---|---|---|"]
    for name, v in i["fits"].items():
        lines.append(f"| {name} | {v['n_params']} | {_f(v['rss'])} | {_f(v['aic'], 6)} | {_f(v['bic'], 6)} | "
                     f"{_f(v['heldout_mae'])} |")
    return lines


def _rolling_lines(d: dict[str, Any]) -> list[str]:
    if not d["rolling"]:
        return []
    rows = ["", "Rolling validation (fit the smaller sizes, predict the next one up):", "",
            "| fitted sizes | predicted size | runs | MAE | relative MAE | max error | 90% coverage |",
            "|---|---|---|---|---|---|---|"]
    for s in d["rolling"]:
        rows.append(f"| {', '.join(f'{n:.3g}' for n in s['fit_sizes'])} | {s['predicted_size']:.3g} | {s['n']} | "
                    f"{_f(s['mae'])} | {_f(s['relative_mae'])} | {_f(s['max_error'])} | "
                    f"{_f(s['interval_coverage'])} |")
    return rows


def _selection_lines(d: dict[str, Any]) -> list[str]:
    sel = d.get("selection")
    if not sel:
        return []
    if sel["criterion"] == "bic":
        rows = ["", "Law choice (`--law auto`): fewer than 3 fitted sizes, so the lowest BIC on the fitted runs:", "",
                "| candidate | parameters | BIC |", "|---|---|---|"]
        rows += [f"| {c['label']} | {c['n_params']} | {_f(c['bic'])} |" for c in sel["candidates"]]
        return rows + ["", f"Chosen: `{sel['chosen']}`."]
    sizes = ", ".join(f"{n:.3g}" for n in sel["fit_sizes"])
    rows = ["", f"Law choice (`--law auto`), on the fitted runs only: each candidate fitted on N = {sizes}, "
                f"predicting the fitted runs at N = {sel['predicted_size']:.3g}:", "",
            "| candidate | parameters | CV MAE | CV relative MAE | BIC |", "|---|---|---|---|---|"]
    for c in sel["candidates"]:
        mark = " **(chosen)**" if c["label"] == sel["chosen"] else ""
        rows.append(f"| {c['label']}{mark} | {c['n_params']} | {_f(c['cv_mae'])} | {_f(c['cv_relative_mae'])} | "
                    f"{_f(c['bic'])} |")
    if sel.get("extrapolation_sd") is not None:
        parts = (f" (largest fold: CV RMS {_f(sel['cv_rms'])}, the CV fit's noise {_f(sel['cv_noise_sd'])})"
                 if sel.get("cv_rms") is not None and sel.get("cv_noise_sd") is not None else "")
        how = {"nested": "nested CV (each fold's form chosen on the fold below it)",
               "runner_up": "the larger of the chosen and the runner-up form's errors (one fold: nothing to nest)",
               "none": "a single candidate (no selection to correct)"}.get(sel.get("correction") or "", "")
        folds = len(sel.get("folds") or []) or 1
        rows += ["", f"The CV error beyond the runs' noise{parts}, pooled over {folds} rolling fold(s) and corrected "
                     f"for the choice by {how or 'nothing'}: {_f(sel['extrapolation_sd'])} per decade of N (residual "
                     f"units; the chosen form's own, biased low: {_f(sel.get('extrapolation_sd_chosen'))}). It widens "
                     "the prediction intervals above the largest fitted size."]
    if sel.get("effect_slope") is not None:
        rows += ["", f"The differences between the runs it predicted came out {_f(sel['effect_slope'])} x the "
                     f"predicted ones (SE {_f(sel.get('effect_slope_se'))}); beyond that noise a predicted gain is "
                     f"off by {_f(sel.get('effect_sd'))} of itself per decade of N, which widens `allocate`'s gain "
                     f"intervals above the largest fitted rung (N = {_f(sel.get('predicted_size'))}; a rung is a size "
                     "with 3 or more fitted runs: a lone run above it is fitted, but it does not check differences)."]
    return rows


def _param_rows(d: dict[str, Any]) -> list[str]:
    rows = ["| parameter | estimate | 95% lo | 95% hi | note |", "|---|---|---|---|---|"]
    for p in d["params"]:
        note = "fixed; bootstrap draws from U" + str(tuple(d["priors"][p["name"]])) if p["fixed"] and \
            p["name"] in d["priors"] else ("fixed" if p["fixed"] else "")
        rows.append(f"| {p['name']} | {_f(p['estimate'])} | {_f(p['lo'])} | {_f(p['hi'])} | {note} |")
    return rows


FIGURES = (("extrapolation", "The metric against compute, with the law's 90% band out to the target size"),
           ("axes", "Each axis' fitted curve over the data"),
           ("heldout", "Predicted vs actual on held-out runs (90% prediction intervals)"),
           ("coverage", "Held-out coverage at several nominal levels"),
           ("residual_panels", "Residuals by model size and by axis"),
           ("residuals", "Residuals against training FLOPs"),
           ("allocation", "The allocation: spend per axis and the plan across budgets"),
           ("hypotheses", "The forms compared: the interaction test's hypotheses, or `--law auto`'s candidates"))


def _figure_note(d: dict[str, Any], key: str) -> list[str]:
    """The line under a figure: for the allocation chart, which model its plans are for (``allocation_note``)."""
    return [d["allocation_note"]] if key == "allocation" and d.get("allocation_note") else []


def render_markdown(d: dict[str, Any], figures: dict[str, str] | None = None) -> str:
    """The Markdown report; ``figures`` maps figure keys to relative PNG paths; ``d["run_table"]`` (Markdown
    lines, :func:`fit.run_table.diagnostics_lines`) adds a section on every run's diagnostics."""
    figures = figures or {}
    title = d["title"] + (" [SIMULATED]" if d["simulated"] else "")
    out = [f"# {title}", ""]
    if d["simulated"]:
        out += [f"> **{SIM_BANNER}**", ""]
    if d.get("fit_id"):
        out += [f"Renders the stored fit `{d['fit_id']}` (`toolscale fits show {d['fit_id']}`).", ""]
    if d.get("warnings"):
        out += ["## Warnings", *[f"- **{w}**" for w in d["warnings"]], ""]
    out += ["## Fit", *_summary_lines(d), *_selection_lines(d), "", "## Parameters", *_param_rows(d), "",
            "## Held-out extrapolation", *_heldout_lines(d), *_rolling_lines(d), "",
            "## Additive vs multiplicative (research plan, seed 003)", *_interaction_lines(d), ""]
    for key, caption in FIGURES:
        if key in figures:
            out += [f"### {caption}", f"![{caption}]({figures[key]})", *_figure_note(d, key), ""]
    if d.get("run_table"):
        out += ["## Every run: baselines, seen and unseen tools, bits by span type", *d["run_table"], ""]
    out += [f"Data hash `{d['data_hash']}`; every number is in the JSON file next to this report."]
    return "\n".join(out) + "\n"


def _md_to_html_lines(lines: list[str]) -> str:
    parts, table = [], []

    def flush() -> None:
        if table:
            head, *body = [r for r in table if not set(r.replace("|", "").strip()) <= {"-"}]
            cells = lambda r: [c.strip() for c in r.strip().strip("|").split("|")]  # noqa: E731
            parts.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cells(head)) + "</tr>" +
                         "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells(r)) + "</tr>"
                                 for r in body) + "</table>")
            table.clear()

    items: list[str] = []
    for line in lines:
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("- "):
            items.append(f"<li>{_inline(line[2:])}</li>")
            continue
        if items:
            parts.append("<ul>" + "".join(items) + "</ul>")
            items = []
        if line.strip():
            parts.append(f"<p>{_inline(line)}</p>")
    flush()
    if items:
        parts.append("<ul>" + "".join(items) + "</ul>")
    return "\n".join(parts)


def _inline(text: str) -> str:
    t = html.escape(text)
    while "**" in t:
        t = t.replace("**", "<strong>", 1).replace("**", "</strong>", 1)
    while t.count("`") >= 2:
        t = t.replace("`", "<code>", 1).replace("`", "</code>", 1)
    return t


def render_html(d: dict[str, Any], pngs: dict[str, bytes] | None = None) -> str:
    """A self-contained HTML page: the same sections, the PNGs inlined as base64."""
    pngs = pngs or {}
    title = d["title"] + (" [SIMULATED]" if d["simulated"] else "")
    body = [f"<h1>{html.escape(title)}</h1>"]
    if d["simulated"]:
        body.append(f'<div class="sim">{_inline(SIM_BANNER)}</div>')
    for heading, lines in (("Fit", _summary_lines(d)), ("Parameters", _param_rows(d)),
                           ("Held-out extrapolation", _heldout_lines(d) + _rolling_lines(d)),
                           ("Additive vs multiplicative (research plan, seed 003)", _interaction_lines(d))):
        body.append(f"<h2>{html.escape(heading)}</h2>")
        body.append(_md_to_html_lines(lines))
    for key, caption in FIGURES:
        if key in pngs:
            b64 = base64.b64encode(pngs[key]).decode("ascii")
            body.append(f"<h3>{html.escape(caption)}</h3><img alt=\"{html.escape(caption)}\" "
                        f"src=\"data:image/png;base64,{b64}\">" + _md_to_html_lines(_figure_note(d, key)))
    style = ("body{font-family:sans-serif;max-width:1000px;margin:2em auto;}table{border-collapse:collapse}"
             "td,th{border:1px solid #999;padding:2px 6px;text-align:right}img{max-width:100%}"
             ".sim{background:#fde68a;border:2px solid #b45309;padding:.6em;font-weight:bold}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _tag(result: ExperimentFit) -> str:
    return " [SIMULATED]" if result.fit.simulated else ""


def axes_figure(result: ExperimentFit) -> bytes | None:
    """Each axis' fitted curve over the data (mean prediction over the fitted recipes), one curve per size."""
    import matplotlib.ticker

    plt = _pyplot()
    f, law, pts = result.fit, law_of(result.fit), result.points
    X, y = pts.X(), pts.y_array()
    fit_mask = pts.split_array() == "fit"
    tag = _tag(result)
    axes_inputs = [i for i in law.inputs if i.kind != "metric" and i.name in X]
    if not axes_inputs:
        return None
    size = next((i.name for i in law.inputs if i.kind == "size"), None)
    sizes = np.unique(X[size]) if size else np.array([])
    if sizes.size > 6:  # many sizes (imported sweeps): one curve over all of them
        size = None
    colors = plt.cm.viridis(np.linspace(0.1, 0.85, max(len(sizes), 1)))
    cols = min(3, len(axes_inputs))
    rows = math.ceil(len(axes_inputs) / cols)
    fig, axs = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.6 * rows), squeeze=False, layout="constrained")
    base = {k: v[fit_mask] for k, v in X.items()}
    for ax, inp in zip(axs.flat, axes_inputs):
        xs = X[inp.name]
        lo, hi = float(xs.min()), float(xs.max())
        logx = inp.kind in ("size", "tokens", "unique_tokens", "flops", "diversity") and lo > 0
        grid = np.geomspace(lo, hi, 40) if logx else np.linspace(lo, hi, 40)
        groups = [(None, np.ones_like(y, dtype=bool), "k")] if inp.name == size or not size else \
            [(n, X[size] == n, colors[j]) for j, n in enumerate(sizes)]
        for n, sel, color in groups:
            ax.scatter(xs[sel & fit_mask], y[sel & fit_mask], s=9, alpha=0.45, color=color)
            if (sel & ~fit_mask).any():
                ax.scatter(xs[sel & ~fit_mask], y[sel & ~fit_mask], s=14, alpha=0.7, marker="x", color=color)
            curve = []
            for g in grid:
                Xg = dict(base)
                Xg[inp.name] = np.full(fit_mask.sum(), g)
                if n is not None:
                    Xg[size] = np.full(fit_mask.sum(), n)
                curve.append(float(np.mean(law.predict(f.params, Xg))))
            label = "law (mean over fitted recipes)" if n is None else f"N = {n:.3g}"
            ax.plot(grid, curve, color=color, lw=2, label=label)
        if logx:
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(inp.name)
        ax.set_ylabel(f"{f.benchmark}/{f.metric}")
        ax.set_title(f"{inp.name}{tag}", fontsize=9)
        if size and inp.name != size:
            ax.legend(fontsize=6, title="x = held out", title_fontsize=6)
    for ax in list(axs.flat)[len(axes_inputs):]:
        ax.axis("off")
    fig.suptitle(f"{f.law} fit{tag}")
    return _png(fig)


def heldout_figure(result: ExperimentFit) -> bytes | None:
    """Predicted vs actual on the held-out runs, with their 90% prediction intervals."""
    f = result.fit
    if f.heldout is None or not f.heldout.points:
        return None
    plt = _pyplot()
    hp = f.heldout.points
    fig, ax = plt.subplots(figsize=(5, 5))
    act = np.array([p.actual for p in hp])
    pred = np.array([p.predicted for p in hp])
    if hp[0].lo is not None:
        lo = np.array([p.lo for p in hp])
        hi = np.array([p.hi for p in hp])
        ax.errorbar(act, pred, yerr=[pred - lo, hi - pred], fmt="o", ms=3, alpha=0.6, label="90% PI")
    else:
        ax.scatter(act, pred, s=10)
    span = [min(act.min(), pred.min()), max(act.max(), pred.max())]
    ax.plot(span, span, "k--", lw=1)
    ax.set_xlabel("actual")
    ax.set_ylabel("predicted")
    ax.set_title(f"held out: MAE {f.heldout.mae:.4g}{_tag(result)}", fontsize=10)
    return _png(fig)


def residuals_figure(result: ExperimentFit) -> bytes | None:
    """Residuals (on the fit's residual scale) against training FLOPs, fitted and held-out runs."""
    pts = result.points
    if not pts.flops:
        return None
    from fit.optimize import residuals

    plt = _pyplot()
    f, law = result.fit, law_of(result.fit)
    X, y = pts.X(), pts.y_array()
    fit_mask = pts.split_array() == "fit"
    fl = np.asarray(pts.flops, dtype=float)
    r = residuals(law, y, law.predict(f.params, X)) if law.stages is None else y - law.predict(f.params, X)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.scatter(fl[fit_mask], r[fit_mask], s=10, alpha=0.5, label="fitted")
    if (~fit_mask).any():
        ax.scatter(fl[~fit_mask], r[~fit_mask], s=12, marker="x", alpha=0.7, label="held out")
    ax.axhline(0, color="k", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("training FLOPs")
    ax.set_ylabel(f"residual ({f.residual_scale})")
    ax.set_title(f"residuals vs FLOPs{_tag(result)}", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig)


def hypotheses_figure(result: ExperimentFit) -> bytes | None:
    """The forms the fit chose among: the interaction test's hypotheses (BIC and held-out MAE), or else
    ``--law auto``'s candidates (BIC and relative error one rung up); None when neither was run."""
    if result.interaction is not None:
        fits = result.interaction.fits
        names = list(fits)
        bics = [fits[n].bic for n in names]
        errs = [fits[n].heldout_mae if fits[n].heldout_mae is not None else 0.0 for n in names]
        err_title, title = "held-out MAE", f"{result.interaction.verdict}: {result.interaction.supported}"
    elif result.fit.selection is not None:
        sel = result.fit.selection
        names = [c.label for c in sel.candidates]
        bics = [c.bic for c in sel.candidates]
        errs = [c.cv_relative_mae if c.cv_relative_mae is not None else 0.0 for c in sel.candidates]
        err_title, title = "relative MAE one rung up (rung CV)", f"law choice ({sel.criterion}): {sel.chosen}"
    else:
        return None
    plt = _pyplot()
    fig, axs = plt.subplots(1, 2, figsize=(8, 3.2))
    axs[0].bar(names, bics, color="#64748b")
    axs[0].set_title("BIC (lower is better)", fontsize=10)
    axs[1].bar(names, errs, color="#0f766e")
    axs[1].set_title(err_title, fontsize=10)
    for ax in axs:
        ax.tick_params(axis="x", labelsize=7, labelrotation=20)
    fig.suptitle(f"{title}{_tag(result)}")
    return _png(fig)


def _more_figures() -> dict[str, Any]:
    from fit.report_figures import allocation_figure, coverage_figure, extrapolation_figure, residual_panels_figure

    return {"extrapolation": extrapolation_figure, "coverage": coverage_figure,
            "residual_panels": residual_panels_figure,
            "allocation": lambda r: allocation_figure([], metric=r.fit.metric, simulated=r.fit.simulated)}


FIGURE_MAKERS = {"axes": axes_figure, "heldout": heldout_figure, "residuals": residuals_figure,
                 "hypotheses": hypotheses_figure, **_more_figures()}
"""Figure key -> the function drawing it (``None`` when it does not apply)."""


def make_figures(result: ExperimentFit, *, target_n: float | None = None,
                 allocations: list[dict[str, Any]] | None = None, basis: AllocationBasis | None = None
                 ) -> dict[str, bytes]:
    """The report's PNGs (matplotlib, Agg backend), by figure key (one function per figure).

    ``target_n``: the model size the extrapolation band reaches; ``allocations``: plans across budgets for the
    allocation chart (:func:`fit.report_figures.allocation_figure`), for the N, D and unit of ``basis``."""
    from fit.report_figures import allocation_figure, extrapolation_figure

    out = {}
    makers = {**FIGURE_MAKERS, "extrapolation": lambda r: extrapolation_figure(r, target_n),
              "allocation": lambda r: allocation_figure(allocations or [], unit=basis.unit if basis else "usd",
                                                        metric=r.fit.metric, simulated=r.fit.simulated,
                                                        at=basis.label() if basis else "")}
    for key, maker in makers.items():
        blob = maker(result)
        if blob is not None:
            out[key] = blob
    return out


def write_report(result: ExperimentFit, out_dir: Path, run_table: list[str] | None = None, *,
                 fit_id: str | None = None, target_n: float | None = None,
                 allocations: list[dict[str, Any]] | None = None, basis: AllocationBasis | None = None
                 ) -> dict[str, Path]:
    """Write ``<stem>.md`` (+ PNGs in ``<stem>_plots/``), ``<stem>.html`` and ``<stem>.json`` under ``out_dir``;
    ``run_table`` (Markdown lines) is the every-run diagnostics section; ``basis`` says which model the
    ``allocations`` plan for (:meth:`fit.models.AllocationBasis.describe`, under the chart)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = report_stem(result)
    data = report_data(result, fit_id)
    if run_table:
        data["run_table"] = list(run_table)
    if allocations:
        data["allocations"] = allocations
        if basis is not None:
            data["allocation_basis"], data["allocation_note"] = basis.model_dump(mode="json"), basis.describe()
    pngs = make_figures(result, target_n=target_n, allocations=allocations, basis=basis)
    plot_dir = out_dir / f"{stem}_plots"
    plot_dir.mkdir(exist_ok=True)
    rel = {}
    for key, blob in pngs.items():
        atomic_write_bytes(plot_dir / f"{key}.png", blob)
        rel[key] = f"{stem}_plots/{key}.png"
    paths = {"markdown": out_dir / f"{stem}.md", "html": out_dir / f"{stem}.html", "json": out_dir / f"{stem}.json"}
    atomic_write_bytes(paths["markdown"], render_markdown(data, rel).encode("utf-8"))
    atomic_write_bytes(paths["html"], render_html(data, pngs).encode("utf-8"))
    atomic_write_bytes(paths["json"], json.dumps(data, indent=2, sort_keys=True).encode("utf-8"))
    return paths

