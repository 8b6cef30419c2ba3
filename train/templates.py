"""Chat templates that train: assistant masks from ``{% generation %}`` blocks, found by parsing.

A pretrained model's own template (Qwen3, Qwen2.5, Llama 3) usually has no ``{% generation %}`` block, so
``return_assistant_tokens_mask=True`` gives all-zero masks and every row would be dropped. A substring test
(``"generation" in template``) passes on any template that mentions ``add_generation_prompt``, which they all
do. Here:

* :func:`has_generation_block` tokenizes the template with Jinja's own lexer and looks for a ``generation``
  *block tag*; a comment, a string or a variable name that contains the word does not count.
* :func:`training_template` returns the template to train with: the model's own when it has the block, else
  TRL's stored training variant of that exact template (``trl.chat_template_utils``, which ships
  ``qwen3_training.jinja``, ``qwen2_5_training.jinja``, ...); a template TRL does not know is refused with
  :class:`TemplateError` naming it.
* :func:`prepare_tokenizer` puts the training template on a tokenizer (so ``save_pretrained`` stores it beside
  the model: serving and eval render prompts the way training did).
* :func:`check_loss_tokens` tokenizes sample rows and refuses a template that leaves zero loss tokens.

Nothing here downloads: the stored templates ship inside the pinned TRL wheel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from train.errors import TrainError

if TYPE_CHECKING:  # pragma: no cover
    from transformers import PreTrainedTokenizerBase

__all__ = ["has_generation_block", "training_template", "prepare_tokenizer", "check_loss_tokens",
           "template_name", "TemplateError", "SAMPLE_ROWS"]


class TemplateError(TrainError):
    """A chat template that cannot put the loss on assistant tokens (no markers, no known training variant)."""


def has_generation_block(template: str | dict[str, str] | None) -> bool:
    """True when ``template`` opens a ``{% generation %}`` block (any whitespace-control variant).

    Parsed with Jinja's lexer: the token after a block opener must be the name ``generation``. Mentions
    of the word anywhere else (``add_generation_prompt``, ``{# generation #}``, ``'generation'``) do not count.
    A template shipped as named variants (a dict) is judged by its ``default`` variant.
    """
    import jinja2

    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        return False
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
    previous = None
    try:
        for _, kind, value in env.lex(template):
            if previous == "block_begin" and kind == "name" and value == "generation":
                return True
            if kind not in ("whitespace",):
                previous = kind
    except jinja2.TemplateSyntaxError as err:
        raise TemplateError(f"the chat template does not parse as Jinja: {err}") from None
    return False


def template_name(template: str | None) -> str:
    """A short name of a template for messages: the TRL file it equals, else ``sha256:<12 hex>``."""
    if not template:
        return "<none>"
    for name, text in _stored_templates().items():
        if text == template:
            return name
    return "sha256:" + hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]


def _stored_templates() -> dict[str, str]:
    """TRL's stored templates, file name -> text (read from the installed wheel, no download)."""
    from pathlib import Path

    import trl.chat_template_utils as ctu

    folder = Path(ctu.__file__).parent / "chat_templates"
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.jinja"))}


def training_template(tokenizer: "PreTrainedTokenizerBase", *, source: str = "the model") -> str:
    """The chat template to train ``tokenizer``'s model with (see the module docstring).

    Raises :class:`TemplateError` naming ``source`` and the template when it has no ``{% generation %}`` block
    and TRL has no training variant of it.
    """
    template = tokenizer.chat_template
    if isinstance(template, dict):
        template = template.get("default")
    if not template:
        raise TemplateError(f"{source} has no chat template; assistant-only loss needs one with "
                            "{% generation %} markers")
    if has_generation_block(template):
        return template
    from trl.chat_template_utils import get_training_chat_template

    try:
        patched = get_training_chat_template(tokenizer)
    except ValueError:
        patched = None
    if patched is None or not has_generation_block(patched):
        raise TemplateError(f"the chat template of {source} ({template_name(template)}) has no {{% generation %}} "
                            "markers and TRL ships no training variant of it; add the markers around the "
                            "assistant turns (see trl/chat_templates/*_training.jinja)")
    return patched


def prepare_tokenizer(tokenizer: "PreTrainedTokenizerBase", *, source: str = "the model") -> str:
    """Set ``tokenizer.chat_template`` to :func:`training_template` (and a pad token); returns the template's name.

    The template then travels with ``tokenizer.save_pretrained`` (``chat_template.jinja``)."""
    template = training_template(tokenizer, source=source)
    before = tokenizer.chat_template
    tokenizer.chat_template = template
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return template_name(template) if template != before else "own"


SAMPLE_ROWS: tuple[dict[str, Any], ...] = (
    {"messages": [
        {"role": "system", "content": "You are a helpful assistant that uses tools."},
        {"role": "user", "content": "What is the weather in Oslo?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
        {"role": "tool", "content": "{\"city\": \"Oslo\", \"sky\": \"sunny\"}", "tool_call_id": "call_1",
         "name": "get_weather"},
        {"role": "assistant", "content": "It is sunny in Oslo."}],
     "tools": "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Current "
              "weather of a city.\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
              "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}]"},
)
"""A tool-call conversation (pinned interface 1) every template check and preflight tokenizes."""


def check_loss_tokens(tokenizer: "PreTrainedTokenizerBase", rows: Iterable[dict[str, Any]] | None = None, *,
                      max_len: int = 1 << 20, source: str = "the model", limit: int = 32) -> int:
    """Loss tokens of the first ``limit`` rows under ``tokenizer``'s current template; refuses zero.

    Raises :class:`TemplateError` naming ``source`` and the template when the assistant masks are all zero
    (the run would drop every row), and returns the count otherwise.
    """
    from train.data import tokenize_rows

    picked: Sequence[dict[str, Any]] = list(rows or SAMPLE_ROWS)[:limit]
    data = tokenize_rows(picked, tokenizer, max_len)
    if data["loss_tokens"] == 0:
        raise TemplateError(f"the chat template of {source} ({template_name(tokenizer.chat_template)}) gives zero "
                            f"loss tokens on {len(picked)} rows: its assistant masks are empty "
                            "(no {% generation %} block around the assistant turns)")
    return int(data["loss_tokens"])
