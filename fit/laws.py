"""A registry of named scaling-law forms.

A :class:`Law` is data plus one vectorised formula: parameter names, bounds and a
starting grid (natural units), the inputs it reads (with their normalisation), the
target it predicts (``score`` or ``loss``) and which parameters the fitter works on
in log space. The fitter (:func:`fit.fitting.fit_law`) knows nothing about any
particular form.

Registered forms (``known_laws()``):

``chinchilla``
    ``L(N, D) = E + A / N^alpha + B / D^beta`` (Hoffmann et al. 2022, Approach 3); with
    unique tokens or data axes, ``D`` becomes effective data ``D_eff`` (below).
``chinchilla_qterm``, ``effective``, ``effective_qterm`` (effective-data laws, loss and score)
    ``L = E + A n^-alpha + B d_eff^-beta`` / ``S = S_max - A n^-alpha - B d_eff^-beta`` with
    ``d_eff = D' prod_i m_i(x_i)``: repetition (Muennighoff et al. 2023) and a saturating
    multiplier per data axis; ``_qterm``: quality as its own additive term instead.
``saturating``
    ``S = S_max - sum_k A_k t_k^(-alpha_k)`` over model size and every data axis.
``additive`` (hypothesis: quality acts on its own failure modes)
    ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)``.
``multiplicative`` (hypothesis: quality scales what diversity buys)
    ``S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))``.
``interaction`` (nests ``additive`` at ``kappa = 0``)
    ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q) + kappa G(x) Q(q)``.
``sigmoid`` / ``two_step``
    ``S = lo + (hi - lo) / (1 + exp(k (L - L0)))`` on an observed loss ``L``; chained
    with ``chinchilla`` it predicts a benchmark score from N and D (OLMo model ladder).

with ``G(x) = sum_i G_i (1 - t_i^(-alpha_i))`` over diversity axes (``t_i = x_i / ref_i``,
the gain over the reference level, saturating at ``G_i``) and
``Q(q) = sum_j H_j (1 - (1 + w_j)^(-beta_j))`` over quality axes
(``w_j = (q_j - lo_j) / (hi_j - lo_j)``, 0 at the lowest design level, 1 at the highest).

Adding a form takes a few lines and no change to the fitter::

    from fit.laws import Law, register_law
    from fit.models import LawInput

    register_law(Law(
        name="kaplan_n", target="loss", inputs=(LawInput(name="N", kind="size"),),
        param_names=("Nc", "alpha"), bounds={"Nc": (1e3, 1e16), "alpha": (0.01, 2)},
        start_grid={"Nc": (1e8, 1e13), "alpha": (0.05, 0.3)}, log_params=frozenset({"Nc"}),
        fn=lambda p, X: (X["N"] / p["Nc"]) ** -p["alpha"], formula="L = (N / Nc)^-alpha"))

A law whose form depends on the experiment's axes is registered as a factory
``inputs -> Law``; ``get_law(name, inputs=...)`` specialises it.
"""

from __future__ import annotations

from fit.law_base import (HYPOTHESES, Law, LawFactory, default_inputs, get_law, known_laws, law_of, normalise,
                          register_law)
from fit.law_effective import effective, effective_tokens
from fit.law_forms import chinchilla, hypothesis, saturating, sigmoid, two_step

__all__ = [
    "Law",
    "LawFactory",
    "register_law",
    "get_law",
    "law_of",
    "known_laws",
    "default_inputs",
    "normalise",
    "HYPOTHESES",
    "effective_tokens",
]

register_law(chinchilla, "chinchilla")
register_law(effective("chinchilla_qterm", "loss", "term"), "chinchilla_qterm")
register_law(effective("effective", "score", "multiplier"), "effective")
register_law(effective("effective_qterm", "score", "term"), "effective_qterm")
register_law(effective("chinchilla_unique", "loss", "multiplier", "unique"), "chinchilla_unique")
register_law(effective("effective_unique", "score", "multiplier", "unique"), "effective_unique")
register_law(effective("chinchilla_overfit", "loss", "multiplier", "unique", overfit=True), "chinchilla_overfit")
register_law(saturating, "saturating")
for _kind in ("additive", "multiplicative", "interaction"):
    register_law(hypothesis(_kind), _kind)
    register_law(hypothesis(_kind, sized=True), f"{_kind}_nx")
register_law(sigmoid, "sigmoid")
register_law(two_step, "two_step")
