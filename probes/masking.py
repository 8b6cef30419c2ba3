"""Counterfactual-masking LM probe: does the action's probability collapse when the history is hidden?

A small causal LM (a proxy rung built by :func:`train.proxy.build_model`, with a byte-level BPE from
:func:`train.tokenizer.train_tokenizer` plus a learned ``<|mask|>`` token) is trained on a sample of
rendered trajectories with plain next-token loss, where each observation's content is replaced by mask
tokens with probability ``ProbeSpec.mask_drop`` (so the model learns what a hidden observation looks like
and that a value it cannot see cannot be copied). Scoring (:func:`score_dataset`) runs every action's
window twice, batched:

- ``full``: log p(argument values | full history);
- ``masked``: the history's content replaced by mask tokens (same length, same positions). Which spans
  is a registered strategy (``ProbeSpec.mask``) and none reads provenance labels: ``all`` (default)
  masks every earlier observation (user turns, tool outputs) *and* the values of earlier tool calls
  (which may repeat the value); ``latest`` masks the latest observation only.

With :math:`\\ell_\\mathrm{full}(t)`, :math:`\\ell_\\mathrm{masked}(t)` the log-probabilities of value token t,
argument a's evidence is the summed drop and the action's score is its weakest argument's:

.. math:: \\Delta_a = \\sum_{t \\in a} \\bigl(\\ell_\\mathrm{full}(t) - \\ell_\\mathrm{masked}(t)\\bigr), \\qquad
          g = \\min_a \\Delta_a \\quad \\text{(nats)}.

A derivable action copies from its history and collapses when it is hidden (g large); an action that
no visible observation determines does not (g near 0). An action the probe cannot score (malformed
arguments, unknown tool, nothing to mask inside the window, a model error) gets ``g = None`` and is
never grounded. The same scoring serves any saved causal LM (``hf:MODEL_DIR``, :mod:`probes.hfprobe`).

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
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from probes.models import ActionProvenance, ActionScore, TrajectoryProvenance
from probes.provenance import ParsedRow
from toolscale.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedModel, PreTrainedTokenizerFast

    from toolscale.config import ProbeSpec

__all__ = ["Encoded", "ProbeLM", "render_pieces", "encode", "train_probe", "score_dataset", "argument_score",
           "MASK_TOKEN", "copy_exercise", "MASK_STRATEGIES", "register_mask", "get_mask_strategy", "scoring_tokens"]

MASK_TOKEN = "<|mask|>"
"""The learned mask token added to the ``lm`` probe's tokenizer."""

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
    value_leaves: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    """Call id -> argument path -> token positions of that argument's value."""


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
    mask_id: int = 0
    """Token id that replaces masked content (the learned ``<|mask|>`` for ``lm``)."""
    pad_id: int = 0
    """Token id of padding."""


def _json_pieces(obj: Any, key: str, path: str = "") -> list[Piece]:
    """``json.dumps(obj, ensure_ascii=False)`` as pieces; value text is kind ``value`` keyed ``(call id, dotted
    path)``, the rest ``args`` keyed by the call id."""
    if isinstance(obj, dict):
        out: list[Piece] = [("{", "args", key)]
        for i, (k, v) in enumerate(obj.items()):
            out.append(((", " if i else "") + json.dumps(str(k), ensure_ascii=False) + ": ", "args", key))
            out.extend(_json_pieces(v, key, f"{path}.{k}" if path else str(k)))
        return out + [("}", "args", key)]
    if isinstance(obj, list):
        out = [("[", "args", key)]
        for i, v in enumerate(obj):
            if i:
                out.append((", ", "args", key))
            out.extend(_json_pieces(v, key, f"{path}.{i}" if path else str(i)))
        return out + [("]", "args", key)]
    if isinstance(obj, str):
        return [('"', "args", key), (json.dumps(obj, ensure_ascii=False)[1:-1], "value", (key, path)),
                ('"', "args", key)]
    if obj is None or isinstance(obj, bool):  # fixed by the tool schema: not scored
        return [(json.dumps(obj), "args", key)]
    return [(json.dumps(obj, ensure_ascii=False), "value", (key, path))]


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
                cid, path = key if kind == "value" else (key, None)
                s0 = enc.args_spans.get(cid, span)[0]
                enc.args_spans[cid] = (s0, span[1])
                if kind == "value":
                    enc.value_positions.setdefault(cid, []).extend(range(*span))
                    enc.value_leaves.setdefault(cid, {}).setdefault(path, []).extend(range(*span))
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
    window for longer trajectories); each observation's content is replaced by the ``<|mask|>`` token
    with probability ``spec.mask_drop`` (the learned mask); during the first ``spec.copy_curriculum``
    share of the steps, half of the rows are :func:`copy_exercise` rows (the copy curriculum). AdamW,
    linear warm-up over the first 10 % of the steps, then cosine decay. Training tokens counted are the non-padding tokens of every batch.
    """
    import torch

    from toolscale.config import ModelSize
    from train import PAD_TOKEN_ID, build_model, count_params
    from train import train_tokenizer

    tokenizer = train_tokenizer(texts, spec.vocab_size)
    tokenizer.add_tokens([MASK_TOKEN], special_tokens=True)
    tokenizer.mask_token = MASK_TOKEN  # saved with the tokenizer, so hf: loads the same mask
    mask_id = tokenizer.convert_tokens_to_ids(MASK_TOKEN)
    encs = [e for e in encoded_fn(tokenizer) if len(e.ids) >= 2]
    seqs = [e.ids for e in encs]
    drop_rng = random.Random(spec.seed)
    size = ModelSize(name="probe", hidden_size=spec.hidden_size, num_layers=spec.num_layers,
                     num_heads=spec.num_heads, vocab_size=max(len(tokenizer), 256), max_seq_len=spec.max_seq_len)
    model = build_model(size, len(tokenizer), seed=spec.seed)
    params, _ = count_params(model)
    if not seqs:
        return ProbeLM(model=model.eval(), tokenizer=tokenizer, params=params, train_tokens=0, final_loss=math.nan,
                       mask_id=mask_id, pad_id=PAD_TOKEN_ID)
    gen = torch.Generator().manual_seed(spec.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=0.0, betas=(0.9, 0.95))
    warm = max(1, spec.train_steps // 10)

    def lr_at(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        frac = (step - warm) / max(1, spec.train_steps - warm)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    n_copy = int(spec.copy_curriculum * spec.train_steps)
    model.train()
    L, tokens, losses = spec.max_seq_len, 0, []
    for step in range(spec.train_steps):
        idx = torch.randint(len(seqs), (spec.batch_size,), generator=gen).tolist()
        batch = []
        for i in idx:
            s = list(seqs[i])
            for x0, x1 in encs[i].obs_spans.values():  # observation dropout teaches the mask token
                if drop_rng.random() < spec.mask_drop:
                    s[x0:x1] = [mask_id] * (x1 - x0)
            if step < n_copy and drop_rng.random() < 0.5:
                s = copy_exercise(s, L, drop_rng)
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
                   final_loss=float(sum(losses[-10:]) / len(losses[-10:])), mask_id=mask_id, pad_id=PAD_TOKEN_ID)


def copy_exercise(seq: Sequence[int], max_len: int, rng: random.Random) -> list[int]:
    """A copy-curriculum row: a prefix of ``seq`` followed by a copy of one of its spans (3-12 tokens).

    Predicting the appended span needs an induction mechanism (find the earlier occurrence of the
    current tokens, continue from there), the skill a copy-aware probe relies on.
    """
    k = rng.randint(3, 12)
    cut = rng.randint(min(len(seq), k + 1), max(min(len(seq), max_len - k), k + 1))
    prefix = list(seq[:cut])
    if len(prefix) <= k:
        return list(seq[:max_len])
    start = rng.randrange(0, len(prefix) - k)
    return (prefix + prefix[start:start + k])[-max_len:]


def argument_score(full: Sequence[float], masked: Sequence[float]) -> float:
    """:math:`\\Delta_a = \\sum_t (\\ell_\\mathrm{full}(t) - \\ell_\\mathrm{masked}(t))` over one argument's tokens (nats)."""
    return float(sum(f - m for f, m in zip(full, masked, strict=True)))


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


@register_mask("all")
def _mask_all(enc: Encoded, a: ActionProvenance) -> list[tuple[int, int]]:
    """Every observation before the action and the values of every earlier tool call (label-free)."""
    start = enc.args_spans.get(a.call_id, (len(enc.ids), 0))[0]
    spans = [x for j, x in enc.obs_spans.items() if j < a.message_index]
    spans += [(p, p + 1) for cid, pos in enc.value_positions.items() for p in pos if p < start and cid != a.call_id]
    return spans


@register_mask("latest")
def _mask_latest(enc: Encoded, a: ActionProvenance) -> list[tuple[int, int]]:
    """The latest observation before the action (label-free)."""
    return _latest(enc, a)


def _plan(enc: Encoded, prov: TrajectoryProvenance, L: int, mask_id: int,
          errors: dict[tuple[int, str], str], counts: dict[tuple[int, str], tuple[int, int]],
          strategy: MaskStrategy = _mask_all) -> list[_Variant]:
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
        scored = enc.value_positions.get(a.call_id) or []
        mask = sorted({p for x0, x1 in strategy(enc, a) for p in range(max(x0, w0), min(x1, s))})
        if not mask:
            errors[key] = "not scored: nothing to mask inside the probe window"
            continue
        counts[key] = (len(mask), 0)
        base = enc.ids[w0:e]
        ids = list(base)
        for p in mask:
            ids[p - w0] = mask_id
        variants.append(_Variant(ids, [p - w0 for p in scored], (prov.index, a.call_id, "masked")))
        if w0 == 0 and e <= shared_end:
            shared = True
            variants.append(_Variant([], list(scored), (prov.index, a.call_id, "full@shared")))
        else:
            variants.append(_Variant(base, [p - w0 for p in scored], (prov.index, a.call_id, "full")))
    if shared:
        variants.append(_Variant(enc.ids[:shared_end], [], (prov.index, "", "shared")))
    return variants


def scoring_tokens(enc: Encoded, prov: TrajectoryProvenance, *, max_seq_len: int, mask: str = "all") -> int:
    """Tokens :func:`score_dataset` runs through the model for one trajectory (for budgeting)."""
    variants = _plan(enc, prov, max_seq_len, 0, {}, {}, get_mask_strategy(mask))
    return sum(len(v.ids) for v in variants)


def score_dataset(lm: ProbeLM, encoded: Sequence[Encoded], provs: Sequence[TrajectoryProvenance], *,
                  max_seq_len: int, batch_size: int, mask: str = "all",
                  progress: Callable[[int, int], None] | None = None) -> tuple[list[ActionScore], int]:
    """Score every action of every trajectory; returns the scores and the scoring tokens processed.

    Forward passes run in batches of ``batch_size`` sequences sorted by length; each trajectory's
    unmasked pass is shared by all its actions that fit the window. An action without any scored value
    (only booleans and nulls, or no arguments) has nothing that could be fabricated and gets the copy
    probe's :data:`probes.copyprobe.NOTHING_TO_SCORE`. ``progress(done, total)`` is called after each
    batch (sequences).
    """
    strategy = get_mask_strategy(mask)
    errors: dict[tuple[int, str], str] = {}
    counts: dict[tuple[int, str], tuple[int, int]] = {}
    variants: list[_Variant] = []
    for enc, prov in zip(encoded, provs, strict=True):
        variants.extend(_plan(enc, prov, max_seq_len, lm.mask_id, errors, counts, strategy))
    runnable = [v for v in variants if v.ids]
    runnable.sort(key=lambda v: len(v.ids))
    token_logps, tokens = _forward(lm, runnable, batch_size, errors, progress)

    return _action_scores(encoded, provs, variants, token_logps, errors, counts), tokens


def _forward(lm: ProbeLM, runnable: Sequence[_Variant], batch_size: int, errors: dict[tuple[int, str], str],
             progress: Callable[[int, int], None] | None) -> tuple[dict[tuple[int, str, str], Any], int]:
    """Per-token log-probabilities of every variant (batches of ``batch_size`` padded sequences) and the tokens
    processed; a batch whose forward pass fails records its actions in ``errors`` and scores nothing."""
    import torch

    token_logps: dict[tuple[int, str, str], Any] = {}
    tokens = 0
    model = lm.model
    device = next(model.parameters()).device
    with torch.no_grad():
        for b0 in range(0, len(runnable), batch_size):
            batch = runnable[b0:b0 + batch_size]
            width = max(len(v.ids) for v in batch)
            ids = torch.full((len(batch), width), lm.pad_id, dtype=torch.long)
            att = torch.zeros((len(batch), width), dtype=torch.long)
            for r, v in enumerate(batch):
                ids[r, :len(v.ids)] = torch.tensor(v.ids)
                att[r, :len(v.ids)] = 1
            try:
                logits = model(input_ids=ids.to(device), attention_mask=att.to(device)).logits.float().cpu()
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

    return token_logps, tokens


def _action_scores(encoded: Sequence[Encoded], provs: Sequence[TrajectoryProvenance], variants: Sequence[_Variant],
                   token_logps: dict[tuple[int, str, str], Any], errors: dict[tuple[int, str], str],
                   counts: dict[tuple[int, str], tuple[int, int]]) -> list[ActionScore]:
    """Each action's score from its masked and full passes: the weakest argument's difference in log-probability
    (:func:`argument_score`), or the error that kept it from being scored."""
    from probes.copyprobe import NOTHING_TO_SCORE

    by_key = {v.key: v for v in variants}
    enc_of = {prov.index: enc for enc, prov in zip(encoded, provs, strict=True)}
    out: list[ActionScore] = []
    for prov in provs:
        injected = set(prov.injected) if prov.injected is not None else None
        enc = enc_of[prov.index]
        for a in prov.actions:
            key = (prov.index, a.call_id)
            lab = None if injected is None else a.call_id in injected
            base = dict(trajectory=prov.index, call_id=a.call_id, derivable=a.derivable, injected=lab)
            err = errors.get(key)
            rows: dict[str, tuple[Any, int]] = {}
            if err is None:
                for kind in ("masked", "full"):
                    var, row = by_key.get((prov.index, a.call_id, kind)), token_logps.get((prov.index, a.call_id, kind))
                    if kind == "full" and var is None:
                        var = by_key.get((prov.index, a.call_id, "full@shared"))
                        row = token_logps.get((prov.index, "", "shared"))
                    if var is None or row is None:
                        err = "probe forward failed"
                        break
                    offset = (var.positions[0] - enc.value_positions[a.call_id][0]) if var.positions else 0
                    rows[kind] = (row, offset)
            m, _ = counts.get(key, (0, 0))
            if err is not None:
                out.append(ActionScore(n_tokens=0, mask_tokens=m, error=err, **base))
                continue
            leaves = {path: pos for path, pos in (enc.value_leaves.get(a.call_id) or {}).items() if pos}
            if not leaves:
                out.append(ActionScore(n_tokens=0, mask_tokens=m, groundedness=NOTHING_TO_SCORE, **base))
                continue
            best: tuple[float, str, float, float] | None = None
            for path, pos in leaves.items():
                full = [float(rows["full"][0][p + rows["full"][1] - 1]) for p in pos if p + rows["full"][1] >= 1]
                masked = [float(rows["masked"][0][p + rows["masked"][1] - 1]) for p in pos
                          if p + rows["masked"][1] >= 1]
                if len(full) != len(pos) or len(masked) != len(pos):
                    continue
                d = argument_score(full, masked)
                if best is None or d < best[0]:
                    best = (d, path, sum(full), sum(masked))
            if best is None or not all(math.isfinite(x) for x in (best[0], best[2], best[3])):
                out.append(ActionScore(n_tokens=0, mask_tokens=m, error="non-finite log-probability", **base))
                continue
            out.append(ActionScore(n_tokens=sum(len(p) for p in leaves.values()), logp_full=best[2],
                                   logp_masked=best[3], mask_tokens=m, groundedness=best[0],
                                   weakest_argument=best[1], **base))
    return out
