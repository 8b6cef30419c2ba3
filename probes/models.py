"""Contracts of the probes package: provenance labels, probe scores, calibration, coverage, cost, and the
``[probe]`` settings (composed into :mod:`toolscale.config`).

Imports only pydantic and the standard library. Every model is frozen with
``extra="forbid"``; field docstrings give units.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "SharedProbeReport",
    "MatchKind",
    "ActionStatus",
    "ArgumentSource",
    "ActionProvenance",
    "TrajectoryProvenance",
    "ActionScore",
    "ConfusionMatrix",
    "CalibrationReport",
    "Interval",
    "MetricIntervals",
    "CoverageReport",
    "HumanAgreement",
    "SharedProbe",
    "ProbeCost",
    "RepairRecord",
    "ProbeSummary",
    "STRUCTURES",
    "PROBE_KINDS",
    "ProbeSpec",
]

MatchKind = Literal["exact", "normalised", "structured", "schema", "none"]
"""How an argument value was traced: verbatim substring, after normalisation, equal to a parsed JSON
leaf/sub-object of an observation, fixed by the tool schema (enum or boolean), or not at all."""

ActionStatus = Literal["ok", "malformed_arguments", "unknown_tool"]
"""Whether an action could be traced at all; anything but ``ok`` is non-derivable."""

STRUCTURES = ("chain", "fan-in", "fan-out", "parallel")
"""Dependency structures counted by compositional coverage."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ArgumentSource(_Frozen):
    """Where one argument value (a leaf of the arguments object) comes from."""

    path: str
    """Dotted path of the leaf in the arguments object (``filters.city``, ``ids.0``)."""
    value: str
    """The value as compact JSON text."""
    match: MatchKind
    """Kind of match found; ``none`` means not derivable from the visible history."""
    sources: list[int] = Field(default_factory=list)
    """Message indices (in ``messages``) of the observations holding the value; empty for schema/none."""


class ActionProvenance(_Frozen):
    """Symbolic provenance of one assistant tool call."""

    call_id: str
    """The tool call's id (``call_1``)."""
    tool: str
    """Called tool name (as written, even when unknown)."""
    message_index: int
    """Index of the assistant message holding the call."""
    status: ActionStatus
    """``ok`` when the call could be traced; otherwise the reason it could not."""
    derivable: bool
    """True when every argument value traces to the visible history (or the tool schema)."""
    arguments: list[ArgumentSource] = Field(default_factory=list)
    """One entry per argument leaf."""
    supports: list[int] = Field(default_factory=list)
    """Message indices of the observations (user turns, tool outputs) that support this action."""
    parents: list[str] = Field(default_factory=list)
    """Call ids of earlier actions whose tool output supports this action."""
    depth: int = Field(default=1, ge=1)
    """Support depth in tool hops: 1 when supported only by the user query, else 1 + max parent depth."""
    reason: str | None = None
    """Why the action is non-derivable (first untraced argument or the status), None when derivable."""


class TrajectoryProvenance(_Frozen):
    """Provenance of every action of one trajectory."""

    index: int
    """Row index of the trajectory in the dataset (0-based)."""
    task_id: str | None = None
    """``meta.task_id`` when present."""
    actions: list[ActionProvenance] = Field(default_factory=list)
    """Actions in order of appearance."""
    injected: list[str] | None = None
    """``meta.nonderivable_calls``: ground-truth ids of injected non-derivable calls (None when absent)."""
    problems: list[str] = Field(default_factory=list)
    """Trajectory-level problems (``no actions``, ``empty tool output for call_3``...)."""


class ActionScore(_Frozen):
    """Counterfactual-masking score of one action."""

    trajectory: int
    """Row index of the trajectory."""
    call_id: str
    """The tool call's id."""
    n_tokens: int = Field(ge=0)
    """Scored tokens: the argument values (string contents, numbers) of the call, in tokens."""
    logp_full: float | None = None
    """Log-probability of the weakest argument value given the full history (nats, summed over its
    characters or tokens)."""
    logp_masked: float | None = None
    """Same with the history masked (nats)."""
    logp_control: float | None = None
    """``lm`` probe with the ``control`` comparison only: an equal-length mask on other spans (nats)."""
    mask_tokens: int = Field(default=0, ge=0)
    """Tokens masked in the support mask."""
    control_tokens: int = Field(default=0, ge=0)
    """Tokens masked in the control mask (equal to ``mask_tokens`` unless the history is too short)."""
    groundedness: float | None = None
    """Probe score, higher = more grounded: the weakest argument's summed log-probability drop when the
    history is masked, in nats (``copy``; ``lm`` and ``hf:`` likewise over tokens); None when the probe
    failed for this action."""
    grounded: bool = False
    """Probe verdict at the calibrated threshold; always False when ``groundedness`` is None."""
    derivable: bool
    """Symbolic provenance label."""
    injected: bool | None = None
    """Ground-truth label: True when the call was injected non-derivable (None without labels)."""
    error: str | None = None
    """Why the probe could not score this action (e.g. truncated history), else None."""
    skipped: bool = False
    """Not scored to keep the probe within its FLOP budget (left out of groundedness and calibration)."""
    weakest_argument: str | None = None
    """Dotted path of the argument with the smallest score (the one that decides ``groundedness``)."""


class ConfusionMatrix(_Frozen):
    """Probe verdict against reference labels; positive = grounded (derivable)."""

    tp: int = Field(ge=0)
    """Grounded by the probe and derivable by the reference."""
    fp: int = Field(ge=0)
    """Grounded by the probe, non-derivable by the reference."""
    tn: int = Field(ge=0)
    """Flagged by the probe and non-derivable by the reference."""
    fn: int = Field(ge=0)
    """Flagged by the probe but derivable by the reference."""

    @property
    def n(self) -> int:
        """Number of actions counted."""
        return self.tp + self.fp + self.tn + self.fn

    @property
    def agreement(self) -> float | None:
        """Share of actions where probe and reference agree, ``(tp + tn) / n``; None when empty."""
        return (self.tp + self.tn) / self.n if self.n else None


class Interval(_Frozen):
    """A two-sided bootstrap confidence interval."""

    low: float
    """Lower bound."""
    high: float
    """Upper bound."""


class MetricIntervals(_Frozen):
    """Percentile bootstrap intervals of the evaluation-split figures, resampling trajectories (clusters)."""

    level: float = Field(gt=0.0, lt=1.0)
    """Coverage of each interval (0.95)."""
    n_bootstrap: int = Field(ge=1)
    """Bootstrap resamples."""
    agreement: Interval | None = None
    """Interval of the agreement."""
    balanced_accuracy: Interval | None = None
    """Interval of the balanced accuracy."""
    kappa: Interval | None = None
    """Interval of Cohen's kappa."""
    auc: Interval | None = None
    """Interval of the ROC AUC."""


class CalibrationReport(_Frozen):
    """Threshold chosen on a calibration split, agreement measured on a separate evaluation split."""

    reference: Literal["injected", "provenance"]
    """Labels calibrated against: synth's injected labels when present, else symbolic provenance."""
    threshold: float
    """Decision threshold on the groundedness score: grounded iff score >= threshold (chosen to maximise
    balanced accuracy on the calibration split, so the base rate cannot win it)."""
    n_calibration: int = Field(ge=0)
    """Actions in the calibration split."""
    n_evaluation: int = Field(ge=0)
    """Actions in the evaluation split."""
    calibration_agreement: float | None = None
    """Agreement on the calibration split at the chosen threshold (in-sample, optimistic)."""
    agreement: float | None = None
    """Agreement on the evaluation split (the reported figure)."""
    balanced_accuracy: float | None = None
    """Mean of true-positive and true-negative rates on the evaluation split."""
    auc: float | None = None
    """Area under the ROC curve of the score on the evaluation split (0.5 = chance)."""
    kappa: float | None = None
    """Cohen's kappa of verdicts against labels on the evaluation split (0 = chance, 1 = perfect)."""
    baseline_agreement: float | None = None
    """Agreement of the constant verdict "every action grounded" on the evaluation split (the base rate)."""
    intervals: MetricIntervals | None = None
    """Bootstrap intervals of agreement, balanced accuracy, kappa and AUC (evaluation split)."""
    confusion: ConfusionMatrix
    """Confusion matrix on the evaluation split."""
    target: float = 0.85
    """Agreement target of the research plan."""


class SharedProbe(_Frozen):
    """An experiment's amortised, cross-fitted ``lm`` probes (:func:`probes.shared.train_shared`)."""

    models: dict[str, str]
    """Dataset folder -> saved probe folder that scores it (one that never trained on it)."""
    trained_on: dict[str, list[str]]
    """Saved probe folder -> the dataset folders its training sample was pooled from."""
    params: float = Field(ge=0)
    """Parameters N of each probe."""
    train_tokens: float = Field(ge=0)
    """Non-padding training tokens of all the probes together."""
    train_flops: float = Field(ge=0)
    """``6 N D_train`` of all the probes together, paid once for the experiment."""


class HumanAgreement(_Frozen):
    """Probe verdicts against human labels (``toolscale probe DIR --import-annotation FILE``)."""

    file: str
    """Annotation file read."""
    n_items: int = Field(ge=0)
    """Annotated rows (grounded, not grounded or unsure)."""
    n_labelled: int = Field(ge=0)
    """Rows labelled grounded or not grounded (the ones counted)."""
    n_unsure: int = Field(ge=0)
    """Rows labelled unsure (left out)."""
    agreement: float | None = None
    """Share of labelled rows where the probe verdict equals the human label (None when none)."""
    agreement_ci: Interval | None = None
    """95 % bootstrap interval of ``agreement``, resampling trajectories."""
    weighted_agreement: float | None = None
    """Agreement weighted by the export's sampling weights (an estimate for the whole dataset)."""
    balanced_accuracy: float | None = None
    """Balanced accuracy of the probe against the human labels (None with one class)."""
    kappa: float | None = None
    """Cohen's kappa of the probe against the human labels."""
    confusion: ConfusionMatrix
    """Probe verdict (positive = grounded) against the human label."""
    injected_agreement: float | None = None
    """Agreement of synth's injected labels with the same human labels (None without injected labels)."""


class CoverageReport(_Frozen):
    """Compositional coverage of a dataset's dependency graphs (see :func:`probes.coverage.coverage`)."""

    k: int = Field(ge=1)
    """Largest support depth counted (deeper instances count at depth k)."""
    quota: int = Field(ge=1)
    """Trajectories a (structure, depth) cell needs to count as fully covered."""
    score: float = Field(ge=0.0, le=1.0)
    """Coverage score in [0, 1]."""
    cells: dict[str, int] = Field(default_factory=dict)
    """Trajectories holding each cell, keyed ``structure@depth`` (e.g. ``fan-in@2``)."""
    depth_histogram: dict[int, int] = Field(default_factory=dict)
    """Actions per support depth (in hops)."""
    mean_depth: float | None = None
    """Mean support depth of the derivable actions (hops)."""
    structures: dict[str, int] = Field(default_factory=dict)
    """Trajectories containing each structure at any depth."""


class ProbeCost(_Frozen):
    """FLOPs the probe spends, against the target training run's FLOPs."""

    params: float = Field(ge=0)
    """Probe model parameters N."""
    train_tokens: float = Field(ge=0)
    """Tokens the probe trained on (non-padding), D_train."""
    train_flops: float = Field(ge=0)
    """Probe training FLOPs, ``6 N D_train``."""
    score_tokens: float = Field(ge=0)
    """Tokens processed by scoring forward passes (non-padding), D_score."""
    score_flops: float = Field(ge=0)
    """Probe scoring FLOPs, ``2 N D_score``."""
    data_tokens: float = Field(default=0.0, ge=0)
    """Tokens of the whole dataset under the probe's tokenizer (``D_score / data_tokens`` is the
    scoring overhead per data token)."""
    total_flops: float = Field(ge=0)
    """``train_flops + score_flops``."""
    target_train_flops: float | None = None
    """FLOPs of the target training run (None when unknown)."""
    share: float | None = None
    """``total_flops / target_train_flops``; 0 when ``total_flops`` is 0 (None only when FLOPs were spent
    and the target is unknown)."""
    target: str | None = None
    """What ``target_train_flops`` is (``rung tiny-l``, ``--target-flops``, ``experiment total``...)."""
    budget_share: float = Field(gt=0)
    """Allowed share (ProbeSpec.max_cost_share)."""
    within_budget: bool | None = None
    """``share <= budget_share`` (None when the share is unknown)."""


class RepairRecord(_Frozen):
    """One repair operation applied to a flagged action."""

    trajectory: int
    """Row index of the trajectory."""
    call_id: str
    """The repaired call."""
    operation: str
    """Registered repair operation (``resynthesize``, ``downweight``)."""
    applied: bool
    """False when the operation could not be applied (then ``reason`` says why)."""
    weight: float | None = None
    """Loss weight given to the action (downweight), else None."""
    reason: str | None = None
    """What was done, or why nothing could be."""


class ProbeSummary(_Frozen):
    """What ``probe_dataset`` measured for one dataset (pinned interface 7)."""

    dataset: str
    """Dataset folder (as given)."""
    n_trajectories: int = Field(ge=0)
    """Trajectories read."""
    n_actions: int = Field(ge=0)
    """Tool calls in the dataset."""
    n_scored: int = Field(default=0, ge=0)
    """Tool calls the probe scored (or failed on); the rest were skipped to stay within the FLOP budget."""
    measured_groundedness: float | None
    """Share of the scored actions the probe judges grounded at the calibrated threshold (probe failures
    count as not grounded); None when none was scored."""
    symbolic_groundedness: float | None
    """Share of actions derivable by symbolic provenance."""
    coverage: float
    """Compositional coverage score in [0, 1]."""
    agreement: float | None
    """Probe agreement with the injected labels on the evaluation split (None without labels)."""
    provenance_agreement: float | None = None
    """Symbolic provenance agreement with the injected labels on all actions (None without labels)."""
    provenance_balanced_accuracy: float | None = None
    """Balanced accuracy of symbolic provenance (exact, structured, normalised and schema matches) against
    the injected labels on the probe's evaluation split (None without labels or calibration)."""
    exact_match_balanced_accuracy: float | None = None
    """The same for exact-match provenance alone (no normalised tier): what a plain copy check gets."""
    kind: str = "copy"
    """Probe kind that produced the scores (``copy``, ``lm``, ``hf:MODEL_DIR``)."""
    probe_cost_share: float | None
    """Probe FLOPs / target training FLOPs (``cost.target`` says which target); 0 for a probe that spends
    no FLOPs; None only when FLOPs were spent and no target is known."""
    probe_reliable: bool | None = None
    """True when the calibrated probe beats a constant verdict on the evaluation split (balanced accuracy
    >= ``RELIABLE_BALANCED_ACCURACY``); False means use ``symbolic_groundedness``; None without calibration."""
    calibration: CalibrationReport | None = None
    """Threshold and confusion matrix (None when the data cannot be split into two labelled splits)."""
    coverage_report: CoverageReport
    """Depth distribution and structure coverage."""
    cost: ProbeCost
    """FLOP accounting."""
    scores_path: str | None = None
    """File holding the per-action scores (JSONL)."""
    problems: list[str] = Field(default_factory=list)
    """Data problems found (actions without arguments, unknown tools, empty outputs...)."""


class SharedProbeReport(_Frozen):
    """What ``toolscale probe-shared --json`` prints: the shared probe and every dataset's summary."""

    shared: SharedProbe
    """The cross-fitted probes and what each trained on."""
    summaries: dict[str, ProbeSummary]
    """Dataset folder -> its probe summary (scored by a probe that never saw it)."""
    experiment_train_flops: float = Field(gt=0)
    """The experiment's total training FLOPs the shares are taken against."""
    train_share: float = Field(ge=0)
    """``shared.train_flops / experiment_train_flops``: the one-off training cost, as a share."""


PROBE_KINDS: tuple[str, ...] = ("copy", "lm", "hf:MODEL_DIR")
"""Groundedness probe kinds (``[probe].kind``): the training-free copy scorer, the learned LM probe, or any
saved causal LM (``hf:`` followed by its folder)."""


class ProbeSpec(_Frozen):
    """The groundedness probe (probes/)."""

    kind: str = "copy"
    """Probe kind, one of :data:`PROBE_KINDS`: ``copy`` (training-free, the CPU default), ``lm`` (a tiny LM
    trained on the data, cross-fitted) or ``hf:MODEL_DIR`` (a saved causal LM scored as is)."""
    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        if v in ("copy", "lm") or (v.startswith("hf:") and len(v) > 3):
            return v
        raise ValueError(f"unknown probe kind {v!r}; known kinds: {', '.join(PROBE_KINDS)}")

    model: str = "probe"
    """Ladder-style name of the probe model (built from the fields below)."""
    hidden_size: int = Field(default=64, ge=8)
    """Probe model width."""
    num_layers: int = Field(default=2, ge=1)
    """Probe model depth."""
    train_steps: int = Field(default=400, ge=1)
    """Probe training steps per fold (a tiny probe needs a few hundred to learn to copy identifiers)."""
    sample_size: int = Field(default=256, ge=1)
    """Trajectories each probe trains on (more costs no FLOPs: steps x batch x window fix them)."""
    max_cost_share: float = Field(default=0.05, gt=0.0, le=1.0)
    """Budget for probe FLOPs as a share of the target training run's FLOPs."""
    num_heads: int = Field(default=4, ge=1)
    """Probe attention heads."""
    vocab_size: int = Field(default=512, ge=263)
    """Probe tokenizer vocabulary (byte-level BPE trained on the sample), in tokens."""
    max_seq_len: int = Field(default=512, ge=64)
    """Longest probe window in tokens; longer histories keep their last ``max_seq_len`` tokens."""
    batch_size: int = Field(default=8, ge=1)
    """Sequences per probe training step and per scoring batch."""
    learning_rate: float = Field(default=1e-2, gt=0)
    """Probe peak learning rate (AdamW, linear warm-up then cosine decay)."""
    calibration_fraction: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Share of trajectories in the calibration split; the rest measure agreement."""
    coverage_depth: int = Field(default=3, ge=1)
    """Largest support depth k counted by compositional coverage (hops)."""
    coverage_quota: int = Field(default=1, ge=1)
    """Trajectories a (structure, depth) cell needs to count as covered."""
    seed: int = 0
    """Seed of the probe's sample, initialisation and calibration split."""
    mask: str = "all"
    """Masking strategy registered in ``probes.masking`` for ``lm`` and ``hf:`` probes; none reads
    provenance labels (``all``: every earlier observation; ``latest``: the latest one)."""
    folds: int = Field(default=2, ge=2)
    """Cross-fitting folds of the ``lm`` probe: each fold is scored by a probe trained on the others."""
    copy_curriculum: float = Field(default=0.3, ge=0.0, le=1.0)
    """``lm`` probe: share of the first training steps in which half of the rows are copy exercises (a
    random earlier span of the trajectory repeated at its end), so the tiny model learns to copy early."""
    mask_drop: float = Field(default=0.15, ge=0.0, lt=1.0)
    """``lm`` probe: probability that an observation's content is replaced by the learned mask token in a
    training sequence (teaches the mask)."""
    enforce_budget: bool = True
    """Score only a random subset of trajectories when scoring all would exceed ``max_cost_share``."""
