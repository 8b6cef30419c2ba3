"""The ``hf:MODEL_DIR`` probe: any saved causal LM (``from_pretrained``) scored as is, for the research
plan's 60M-500M probes on a GPU.

The model is not trained, so every trajectory is scored by a model that never saw it and no folds are
needed. Rendering, masks (``ProbeSpec.mask``, label-free) and the score (the weakest argument's summed
log-probability drop when the history is hidden, nats) are those of :mod:`probes.masking`; masked tokens
are the tokenizer's ``mask_token``, else its ``unk_token``, else the token of a single space. The model
runs on CUDA when one is available, else on the CPU. FLOPs: ``2 N`` per scored token, no training.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probes.kinds import ProbeRun, Progress
from probes.models import TrajectoryProvenance
from probes.provenance import ParsedRow
from toolscale.config import ProbeSpec
from toolscale.errors import UsageError

__all__ = ["run_hf", "model_dir", "load_hf"]

_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


def model_dir(kind: str) -> Path:
    """The folder of ``hf:MODEL_DIR``; UsageError naming the path when it holds no saved model."""
    path = Path(kind[3:]).expanduser()
    if not path.is_dir():
        raise UsageError(f"probe kind {kind!r}: {str(path)!r} is not a directory (expected a saved causal LM)")
    if not (path / "config.json").is_file() or not any((path / w).is_file() for w in _WEIGHTS):
        raise UsageError(f"probe kind {kind!r}: {str(path)!r} holds no saved model (config.json and "
                         f"{' or '.join(_WEIGHTS[::2])} expected)")
    return path


def load_hf(path: Path):
    """``(model, tokenizer, mask_id, pad_id)`` of a saved causal LM, on CUDA when available."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot load the probe model in {str(path)!r}: {str(err).splitlines()[0][:200]}") from None
    model = model.to("cuda" if torch.cuda.is_available() else "cpu").eval()
    mask_id = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else tokenizer.unk_token_id
    if mask_id is None:
        mask_id = tokenizer(" ", add_special_tokens=False)["input_ids"][0]
    pad_id = next((t for t in (tokenizer.pad_token_id, tokenizer.eos_token_id) if t is not None), 0)
    return model, tokenizer, int(mask_id), int(pad_id)


def run_hf(rows: Sequence[ParsedRow], provs: Sequence[TrajectoryProvenance], spec: ProbeSpec,
           target_train_flops: float | None, progress: Progress | None = None) -> ProbeRun:
    """Score every action with the saved model of ``spec.kind`` within the FLOP budget."""
    from probes.lmprobe import score_folds
    from probes.masking import ProbeLM, encode, render_pieces

    path = model_dir(spec.kind)
    model, tokenizer, mask_id, pad_id = load_hf(path)
    params = float(sum(p.numel() for p in model.parameters()))
    lm = ProbeLM(model=model, tokenizer=tokenizer, params=int(params), train_tokens=0, final_loss=float("nan"),
                 mask_id=mask_id, pad_id=pad_id)
    encoded = dict(enumerate(encode([render_pieces(r) for r in rows], tokenizer)))
    scores, score_tok, problems = score_folds([(0, lm, encoded)], provs, spec, target_train_flops, params, 0.0,
                                              progress)
    order = {(p.index, a.call_id): n for n, (p, a) in enumerate((p, a) for p in provs for a in p.actions)}
    scores.sort(key=lambda s: order[(s.trajectory, s.call_id)])
    return ProbeRun(scores=scores, params=params, score_tokens=score_tok,
                    data_tokens=float(sum(len(e.ids) for e in encoded.values())), problems=problems)
