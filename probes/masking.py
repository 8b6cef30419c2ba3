"""Counterfactual-masking probe: does the action's probability collapse when its support is hidden?

A small causal LM (a proxy rung built by :func:`train.models.build_model`, with a byte-level
BPE from :func:`train.tokenizer.train_tokenizer`) is trained once on a sample of rendered
trajectories (plain next-token loss; up-weighting the argument tokens was tried and copied
worse out of sample). Then the tokens of every action's argument *values* are scored three
times, batched:

- ``full``: log p(arguments | full history);
- ``masked``: the supporting observations' content replaced by mask tokens (same length,
  same positions). Which observations is a registered strategy (``ProbeSpec.mask``):
  ``support`` (default) takes them from symbolic provenance, and an action without any
  traced support gets its latest observation masked (the history an agent's next call
  most often reads); ``latest`` always masks the latest observation and uses no
  provenance at all;
- ``control``: the same number of tokens masked in non-supporting spans (other observations
  and the system turn, nearest to the action first), to cancel the effect of masking as such.

With per-token means :math:`\\ell_v` over the argument-value tokens and
:math:`\\Delta_v = \\ell_\\mathrm{full} - \\ell_v`, the groundedness score is the normalised
collapse

.. math:: g = 1 - \\exp\\bigl(-\\max(0, \\Delta_\\mathrm{masked} - \\Delta_\\mathrm{control})\\bigr) \\in [0, 1),

the per-token share of probability the action loses beyond the control when its support is
hidden. A derivable action copies from its support and collapses (g near 1); an action that
no visible observation determines does not (g near 0). An action the probe cannot score
(malformed arguments, unknown tool, support outside the window, a model error) gets
``g = None`` and is never grounded.

Rendering (probe-internal, not the training chat template): the text of an assistant turn
that carries tool calls is dropped, since it is part of the action (it often narrates the very
values the call uses: "Using customer_id CS-6397 from get_order") and would let the probe
copy around the mask; each message is
``<|im_start|>role\\n CONTENT <|im_end|>\\n``; a tool call is
``<tool_call>{"name": "...", "arguments": ARGS}</tool_call>``; a tool output is
``<tool_response>CONTENT</tool_response>``. Pieces are tokenised separately so the spans
of observations and arguments are exact token ranges.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probes.models import ActionProvenance, ActionScore, TrajectoryProvenance
from probes.provenance import ParsedRow
from toolscale.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

    from toolscale.config import ProbeSpec

__all__ = ["Encoded", "ProbeLM", "render_pieces", "encode", "train_probe", "score_dataset", "groundedness",
           "MASK_STRATEGIES", "register_mask", "get_mask_strategy", "scoring_tokens"]

Piece = tuple[str, str, Any]  # (text, kind: "plain" | "obs" | "args" | "system", key)


@dataclass
class Encoded:
    """One trajectory as token ids, with the token spans the probe masks and scores."""

    ids: list[int]
    """Token ids of the whole rendered trajectory."""
    obs_spans: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Message index -> [start, end) of an observation's content (user turns, tool outputs)."""
    system_spans: list[tuple[int, int]] = field(default_factory=list)
    """[start, end) of system content (masked only as control)."""
    args_spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Call id -> [start, end) of the call's arguments JSON."""
    value_positions: dict[str, list[int]] = field(default_factory=dict)
    """Call id -> token positions of the argument *values* (string contents, numbers, ...)."""


@dataclass
class ProbeLM:
    """The trained probe: model, tokenizer, and what training cost."""

    model: "PreTrainedModel"
    tokenizer: "PreTrainedTokenizerFast"
    params: int
    """Parameters N of the probe model."""
    train_tokens: int
    """Non-padding tokens seen in training."""
    final_loss: float
    """Mean training loss over the last 10 steps (nats/token)."""


def _json_pieces(obj: Any, key: str) -> list[Piece]:
    """``json.dumps(obj, ensure_ascii=False)`` as pieces; value text is kind ``value``, the rest ``args``."""
    if isinstance(obj, dict):
        out: list[Piece] = [("{", "args", key)]
        for i, (k, v) in enumerate(obj.items()):
            out.append(((", " if i else "") + json.dumps(str(k), ensure_ascii=False) + ": ", "args", key))
            out.extend(_json_pieces(v, key))
        return out + [("}", "args", key)]
    if isinstance(obj, list):
        out = [("[", "args", key)]
        for i, v in enumerate(obj):
            if i:
                out.append((", ", "args", key))
            out.extend(_json_pieces(v, key))
        return out + [("]", "args", key)]
    if isinstance(obj, str):
        return [('"', "args", key), (json.dumps(obj, ensure_ascii=False)[1:-1], "value", key), ('"', "args", key)]
    return [(json.dumps(obj, ensure_ascii=False), "value", key)]


def _args_pieces(call: dict[str, Any], cid: str) -> list[Piece]:
    raw = (call.get("function") or {}).get("arguments", "{}")
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return [(str(raw), "args", cid)]
    return [p for p in _json_pieces(parsed, cid) if p[0]]


def render_pieces(row: ParsedRow, fallback_prefix: str = "call@") -> list[Piece]:
    """The probe's rendering of a trajectory as typed text pieces (see the module docstring)."""
    pieces: list[Piece] = []
    names = [t.get("function", {}).get("name", "") for t in row.tools if isinstance(t, dict)]
    unnamed = 0
    for j, m in enumerate(row.messages):
        role = m.get("role")
        content = m.get("content") or ""
        content = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        pieces.append((f"<|im_start|>{role}\n", "plain", None))
        if role == "system":
            pieces.append((content + ("\ntools: " + ", ".join(names) if names else ""), "system", j))
        elif role == "user":
            pieces.append((content, "obs", j))
        elif role == "tool":
            pieces.append(("<tool_response>", "plain", None))
            pieces.append((content, "obs", j))
            pieces.append(("</tool_response>", "plain", None))
        else:
            if content and not m.get("tool_calls"):
                pieces.append((content, "plain", None))
            for call in m.get("tool_calls") or []:
                unnamed += 1
                call = call if isinstance(call, dict) else {}
                cid = str(call.get("id") or f"{fallback_prefix}{j}.{unnamed}")
                name = (call.get("function") or {}).get("name", "")
                pieces.append((f'<tool_call>{{"name": {json.dumps(name)}, "arguments": ', "plain", None))
                pieces.extend(_args_pieces(call, cid))
                pieces.append(("}</tool_call>", "plain", None))
        pieces.append(("<|im_end|>\n", "plain", None))
    return pieces


def encode(pieces_list: Sequence[Sequence[Piece]], tokenizer: "PreTrainedTokenizerFast") -> list[Encoded]:
    """Tokenise every piece (one batched call) and assemble trajectories with their spans."""
    flat = [p[0] for pieces in pieces_list for p in pieces]
    ids_flat = tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else []
    out, k = [], 0
    for pieces in pieces_list:
        enc = Encoded(ids=[])
        for text, kind, key in pieces:
            toks = ids_flat[k]
            k += 1
            span = (len(enc.ids), len(enc.ids) + len(toks))
            enc.ids.extend(toks)
            if kind == "obs":
                enc.obs_spans[key] = span
            elif kind == "system":
                enc.system_spans.append(span)
            elif kind in ("args", "value"):
                s0 = enc.args_spans.get(key, span)[0]
                enc.args_spans[key] = (s0, span[1])
                if kind == "value":
                    enc.value_positions.setdefault(key, []).extend(range(*span))
        out.append(enc)
    return out


def train_probe(texts: Sequence[str], encoded_fn: Callable[["PreTrainedTokenizerFast"], list[Encoded]],
                spec: "ProbeSpec", progress: Callable[[int, int], None] | None = None) -> ProbeLM:
    """Train the tokenizer and the probe LM once on a sample.

    Parameters
    ----------
    texts : sequence of str
        Rendered sample trajectories (tokenizer corpus).
    encoded_fn : callable
        ``tokenizer -> list[Encoded]`` of the sample (training sequences).
    spec : ProbeSpec
        Model shape, steps, batch size, learning rate, window and seed.
    progress : callable, optional
        ``progress(done_steps, total_steps)``, called every 10 steps and at the end.

    Notes
    -----
    Next-token cross-entropy on every token of a window of ``max_seq_len`` tokens (a random
    window for longer trajectories), AdamW, linear warm-up over the first 10 % of the steps
    then cosine decay. Training tokens counted are the non-padding tokens of every batch.
    """
    import torch

    from toolscale.config import ModelSize
    from train.models import PAD_TOKEN_ID, build_model, count_params
    from train.tokenizer import train_tokenizer

    tokenizer = train_tokenizer(texts, spec.vocab_size)
    seqs = [e.ids for e in encoded_fn(tokenizer) if len(e.ids) >= 2]
    size = ModelSize(name="probe", hidden_size=spec.hidden_size, num_layers=spec.num_layers,
                     num_heads=spec.num_heads, vocab_size=max(len(tokenizer), 256), max_seq_len=spec.max_seq_len)
    model = build_model(size, len(tokenizer), seed=spec.seed)
    params, _ = count_params(model)
    if not seqs:
        return ProbeLM(model=model.eval(), tokenizer=tokenizer, params=params, train_tokens=0, final_loss=math.nan)
    gen = torch.Generator().manual_seed(spec.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.0, betas=(0.9, 0.95))
    warm = max(1, spec.train_steps // 10)

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        frac = (step - warm) / max(1, spec.train_steps - warm)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    model.train()
    L, tokens, losses = spec.max_seq_len, 0, []
    for step in range(spec.train_steps):
        idx = torch.randint(len(seqs), (spec.batch_size,), generator=gen).tolist()
        batch = []
        for i in idx:
            s = seqs[i]
            if len(s) > L:
                start = int(torch.randint(len(s) - L + 1, (1,), generator=gen))
                s = s[start:start + L]
            batch.append(s)
        width = max(len(s) for s in batch)
        ids = torch.full((len(batch), width), PAD_TOKEN_ID, dtype=torch.long)
        att = torch.zeros((len(batch), width), dtype=torch.long)
        for r, s in enumerate(batch):
            ids[r, :len(s)] = torch.tensor(s)
            att[r, :len(s)] = 1
        loss = model(input_ids=ids, attention_mask=att, labels=ids.masked_fill(att == 0, -100)).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        tokens += int(att.sum())
        losses.append(float(loss.detach()))
        if progress is not None and ((step + 1) % 10 == 0 or step + 1 == spec.train_steps):
            progress(step + 1, spec.train_steps)
    model.eval()
    return ProbeLM(model=model, tokenizer=tokenizer, params=params, train_tokens=tokens,
                   final_loss=float(sum(losses[-10:]) / len(losses[-10:])))


def groundedness(logp_full: float, logp_masked: float, logp_control: float) -> float:
    """Normalised collapse ``1 - exp(-max(0, (full - masked) - (full - control)))`` (see module docstring)."""
    return 1.0 - math.exp(-max(0.0, logp_control - logp_masked))


@dataclass
class _Variant:
    ids: list[int]
    positions: list[int]  # positions (in ids) of the scored tokens: the argument values
    key: tuple[int, str, str]  # (trajectory, call id, kind)


def _take(spans: Sequence[tuple[int, int]], n: int) -> list[int]:
    """Up to ``n`` positions from ``spans``, later spans first, from each span's end."""
    out: list[int] = []
    for s, e in sorted(spans, key=lambda x: -x[1]):
        for p in range(e - 1, s - 1, -1):
            if len(out) == n:
                return out
            out.append(p)
    return out


MaskStrategy = Callable[[Encoded, ActionProvenance], list[tuple[int, int]]]
"""``strategy(encoded, action) -> token spans to mask`` (the action's presumed support)."""

MASK_STRATEGIES: dict[str, MaskStrategy] = {}
"""Registered masking strategies by name (``ProbeSpec.mask``)."""


def register_mask(name: str) -> Callable[[MaskStrategy], MaskStrategy]:
    """Decorator registering a masking strategy under ``name``."""
    def deco(fn: MaskStrategy) -> MaskStrategy:
        MASK_STRATEGIES[name] = fn
        return fn
    return deco


def get_mask_strategy(name: str) -> MaskStrategy:
    """The strategy ``name``; :class:`UsageError` listing the known ones otherwise."""
    try:
        return MASK_STRATEGIES[name]
    except KeyError:
        raise UsageError(f"unknown probe mask strategy {name!r}; known: {', '.join(sorted(MASK_STRATEGIES))}") from None


def _latest(enc: Encoded, a: ActionProvenance) -> list[tuple[int, int]]:
    before = [j for j in enc.obs_spans if j < a.message_index]
    return [enc.obs_spans[max(before)]] if before else []


@register_mask("support")
def _mask_support(enc: Encoded, a: ActionProvenance) -> list[tuple[int, int]]:
    """Observations symbolic provenance found the argument values in; the latest one if none."""
    return [enc.obs_spans[j] for j in a.supports if j in enc.obs_spans] or _latest(enc, a)


@register_mask("latest")
def _mask_latest(enc: Encoded, a: ActionProvenance) -> list[tuple[int, int]]:
    """The latest observation before the action, whatever provenance says (label-free)."""
    return _latest(enc, a)


def _plan(enc: Encoded, prov: TrajectoryProvenance, L: int, mask_id: int,
          errors: dict[tuple[int, str], str], counts: dict[tuple[int, str], tuple[int, int]],
          strategy: MaskStrategy = _mask_support) -> list[_Variant]:
    variants: list[_Variant] = []
    shared_end = min(len(enc.ids), L)
    shared = False
    for a in prov.actions:
        key = (prov.index, a.call_id)
        if a.status != "ok":
            errors[key] = f"not scored: {a.reason}"
            continue
        span = enc.args_spans.get(a.call_id)
        if span is None or span[1] - span[0] == 0:
            errors[key] = "not scored: no argument tokens"
            continue
        s, e = span
        w0 = max(0, e - L)
        scored = enc.value_positions.get(a.call_id) or list(range(s, e))
        support = strategy(enc, a)
        mask = sorted({p for x0, x1 in support for p in range(max(x0, w0), min(x1, s))})
        if not mask:
            errors[key] = "not scored: no support inside the probe window"
            continue
        sup_set = {tuple(x) for x in support}
        others = [x for j, x in enc.obs_spans.items() if tuple(x) not in sup_set and x[0] < s]
        others += enc.system_spans
        others = [(max(x0, w0), min(x1, s)) for x0, x1 in others if min(x1, s) > max(x0, w0)]
        control = _take(others, len(mask))
        counts[key] = (len(mask), len(control))
        base = enc.ids[w0:e]
        for kind, pos in (("masked", mask), ("control", control)):
            ids = list(base)
            for p in pos:
                ids[p - w0] = mask_id
            variants.append(_Variant(ids, [p - w0 for p in scored], (prov.index, a.call_id, kind)))
        if w0 == 0 and e <= shared_end:
            shared = True
            variants.append(_Variant([], list(scored), (prov.index, a.call_id, "full@shared")))
        else:
            variants.append(_Variant(base, [p - w0 for p in scored], (prov.index, a.call_id, "full")))
    if shared:
        variants.append(_Variant(enc.ids[:shared_end], [], (prov.index, "", "shared")))
    return variants


def scoring_tokens(enc: Encoded, prov: TrajectoryProvenance, *, max_seq_len: int, mask: str = "support") -> int:
    """Tokens :func:`score_dataset` runs through the model for one trajectory (for budgeting)."""
    variants = _plan(enc, prov, max_seq_len, 0, {}, {}, get_mask_strategy(mask))
    return sum(len(v.ids) for v in variants)


def score_dataset(lm: ProbeLM, encoded: Sequence[Encoded], provs: Sequence[TrajectoryProvenance], *,
                  max_seq_len: int, batch_size: int, mask: str = "support",
                  progress: Callable[[int, int], None] | None = None) -> tuple[list[ActionScore], int]:
    """Score every action of every trajectory; returns the scores and the scoring tokens processed.

    Forward passes run in batches of ``batch_size`` sequences sorted by length; each
    trajectory's unmasked pass is shared by all its actions that fit the window.
    ``progress(done, total)`` is called after each batch (sequences).
    """
    import torch

    from train.models import PAD_TOKEN_ID

    mask_id = PAD_TOKEN_ID
    strategy = get_mask_strategy(mask)
    errors: dict[tuple[int, str], str] = {}
    counts: dict[tuple[int, str], tuple[int, int]] = {}
    variants: list[_Variant] = []
    for enc, prov in zip(encoded, provs, strict=True):
        variants.extend(_plan(enc, prov, max_seq_len, mask_id, errors, counts, strategy))
    runnable = [v for v in variants if v.ids]
    runnable.sort(key=lambda v: len(v.ids))
    token_logps: dict[tuple[int, str, str], Any] = {}
    tokens = 0
    model = lm.model
    with torch.no_grad():
        for b0 in range(0, len(runnable), batch_size):
            batch = runnable[b0:b0 + batch_size]
            width = max(len(v.ids) for v in batch)
            ids = torch.full((len(batch), width), PAD_TOKEN_ID, dtype=torch.long)
            att = torch.zeros((len(batch), width), dtype=torch.long)
            for r, v in enumerate(batch):
                ids[r, :len(v.ids)] = torch.tensor(v.ids)
                att[r, :len(v.ids)] = 1
            try:
                logits = model(input_ids=ids, attention_mask=att).logits.float()
            except RuntimeError as err:  # a failed batch scores nothing: its actions stay ungrounded
                for v in batch:
                    errors.setdefault(v.key[:2], f"probe forward failed: {str(err).splitlines()[0][:120]}")
                continue
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
            tokens += int(att.sum())
            for r, v in enumerate(batch):
                token_logps[v.key] = logp[r].clone()
            if progress is not None:
                progress(min(b0 + batch_size, len(runnable)), len(runnable))

    def mean_logp(row_logp: Any, positions: list[int]) -> float:
        pos = [p - 1 for p in positions if p >= 1]
        return float(row_logp[pos].mean()) if pos else math.nan

    by_key = {v.key: v for v in variants}
    out: list[ActionScore] = []
    for prov in provs:
        injected = set(prov.injected) if prov.injected is not None else None
        for a in prov.actions:
            key = (prov.index, a.call_id)
            lab = None if injected is None else a.call_id in injected
            span: list[int] | None = None
            err = errors.get(key)
            vals: dict[str, float] = {}
            if err is None:
                for kind in ("masked", "control", "full"):
                    var = by_key.get((prov.index, a.call_id, kind))
                    v_logp = token_logps.get((prov.index, a.call_id, kind))
                    if kind == "full" and var is None:
                        var = by_key.get((prov.index, a.call_id, "full@shared"))
                        v_logp = token_logps.get((prov.index, "", "shared"))
                    if v_logp is None or var is None:
                        err = "probe forward failed"
                        break
                    span = var.positions
                    vals[kind] = mean_logp(v_logp, span)
                if err is None and not all(math.isfinite(x) for x in vals.values()):
                    err = "non-finite log-probability"
            n_tok = 0 if span is None else len(span)
            m, c = counts.get(key, (0, 0))
            if err is not None:
                out.append(ActionScore(trajectory=prov.index, call_id=a.call_id, n_tokens=n_tok, mask_tokens=m,
                                       control_tokens=c, derivable=a.derivable, injected=lab, error=err))
                continue
            out.append(ActionScore(trajectory=prov.index, call_id=a.call_id, n_tokens=n_tok,
                                   logp_full=vals["full"], logp_masked=vals["masked"],
                                   logp_control=vals["control"], mask_tokens=m, control_tokens=c,
                                   groundedness=groundedness(vals["full"], vals["masked"], vals["control"]),
                                   derivable=a.derivable, injected=lab))
    return out, tokens
