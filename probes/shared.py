"""The amortised ``lm`` probe: trained once per experiment on a pooled sample across its datasets.

:func:`train_shared` splits an experiment's dataset folders into ``k = min(spec.folds, n)`` folds (seeded)
and trains one ``lm`` probe per fold on a sample pooled evenly across the datasets *outside* the fold
(:func:`probes.masking.train_probe`: learned mask, copy curriculum). Each probe is saved as a causal LM
folder, so every dataset is then scored by the probe that never saw it, through the ``hf:MODEL_DIR`` kind
(:func:`probe_with_shared`). Training is paid once for the experiment: its FLOPs (``6 N D``) and every
dataset's scoring FLOPs (``2 N D``) are compared with the experiment's total training FLOPs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from probes.models import ProbeSummary, SharedProbe
from toolscale.config import ProbeSpec, training_flops
from toolscale.errors import UsageError

__all__ = ["train_shared", "probe_with_shared", "SHARED_FILE"]

SHARED_FILE = "shared_probe.json"
"""The :class:`SharedProbe` record written beside the fold folders."""


def train_shared(data_dirs: Sequence[str | Path], spec: ProbeSpec, out_dir: str | Path, *,
                 progress: Callable[[str, int, int], None] | None = None) -> SharedProbe:
    """Train and save the experiment's cross-fitted probes; returns (and writes) the record."""
    from probes.masking import MASK_TOKEN, encode, render_pieces, train_probe
    from probes.measure import read_dataset

    dirs = sorted(str(Path(d)) for d in data_dirs)
    if len(dirs) < 2:
        raise UsageError(f"a shared probe needs at least 2 dataset folders to cross-fit, got {len(dirs)}")
    rows = {d: read_dataset(d)[0] for d in dirs}
    k = min(max(spec.folds, 2), len(dirs))
    perm = random.Random(spec.seed).sample(dirs, len(dirs))
    fold_of = {d: n % k for n, d in enumerate(perm)}
    out = Path(out_dir)
    models: dict[str, str] = {}
    trained_on: dict[str, list[str]] = {}
    params = tokens = 0.0
    rng = random.Random(spec.seed)
    for f in range(k):
        pool = [d for d in dirs if fold_of[d] != f]
        queues = {d: rng.sample(range(len(rows[d])), len(rows[d])) for d in pool}
        sample: list[tuple[str, int]] = []
        while len(sample) < spec.sample_size and any(queues.values()):  # round-robin: every dataset counts
            for d in pool:
                if queues[d] and len(sample) < spec.sample_size:
                    sample.append((d, queues[d].pop()))
        pieces = [render_pieces(rows[d][i]) for d, i in sample]
        cb = (lambda done, total, f=f: progress(f"train shared {f + 1}/{k}", done, total)) if progress else None
        lm = train_probe(["".join(p[0] for p in ps) for ps in pieces], lambda tok, ps=pieces: encode(ps, tok), spec,
                         progress=cb)
        lm.tokenizer.mask_token = MASK_TOKEN
        folder = out / f"fold{f}"
        folder.mkdir(parents=True, exist_ok=True)
        lm.model.save_pretrained(folder)
        lm.tokenizer.save_pretrained(folder)
        params = float(lm.params)
        tokens += lm.train_tokens
        trained_on[str(folder)] = pool
        for d in dirs:
            if fold_of[d] == f:
                models[d] = str(folder)
    rec = SharedProbe(models=models, trained_on=trained_on, params=params, train_tokens=tokens,
                      train_flops=training_flops(params, tokens))
    (out / SHARED_FILE).write_text(json.dumps(rec.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    return rec


def probe_with_shared(data_dir: str | Path, shared: SharedProbe, spec: ProbeSpec,
                      experiment_train_flops: float) -> ProbeSummary:
    """Probe one dataset with the shared probe that did not train on it.

    ``probe_cost_share`` is this dataset's scoring FLOPs over the experiment's total training FLOPs; the
    one-off training share is ``shared.train_flops / experiment_train_flops``.
    """
    from probes.measure import probe_dataset

    key = str(Path(data_dir))
    if key not in shared.models:
        raise UsageError(f"dataset {key!r} is not one of the shared probe's datasets "
                         f"({', '.join(sorted(shared.models))})")
    return probe_dataset(data_dir, spec=spec.model_copy(update={"kind": f"hf:{shared.models[key]}"}),
                         target_train_flops=experiment_train_flops,
                         target_name="the experiment's total training FLOPs (shared probe, training paid once)")
