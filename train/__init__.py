"""train: SFT and GRPO runs of the model ladder with TRL, and their accounting.

Modules
-------
``chat``        the chat template (pinned interface 3): tools, ``<tool_call>`` blocks, tool turns, generation markers
``tokenizer``   byte-level BPE trained locally (:func:`train_tokenizer`) and a loader that avoids the Qwen2 trap
``models``      the contracts: the ``[train]`` and ``[lr_scan]`` settings (``TrainSpec``, ``LRScanSpec``), ``STAGES``
``proxy``       proxy models built from config with exactly ``ModelSize.approx_params`` parameters; ``load_model``
``data``        trajectory JSONL (pinned interface 1) -> validated rows -> token ids and assistant masks
``sft``         :func:`train_sft` (pinned interface 4) with TRL's ``SFTTrainer``
``grpo``        :func:`train_grpo` with TRL's ``GRPOTrainer`` on synth's executable environments (F1 reward)
``accounting``  N, D, ``6 N D``, wall time across preemptions, loss curves
``checkpoint``  run-folder layout and the checkpoint a resumed run picks up

Heavy libraries (torch, transformers, trl, datasets) are imported inside functions.
"""

from toolscale.exports import lazy_exports

_EXPORTS: dict[str, str] = {
    'PAD_TOKEN_ID': 'train.proxy',
    'build_model': 'train.proxy',
    'count_params': 'train.proxy',
    'load_tokenizer': 'train.tokenizer',
    'tokenizer_fingerprint': 'train.tokenizer',
    'normalize_messages': 'train.chat',
    'train_grpo': 'train.grpo',
    'train_sft': 'train.sft',
    'train_tokenizer': 'train.tokenizer',
}
"""Public names and the modules that define them: other packages import these (or ``train.models``)."""

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
