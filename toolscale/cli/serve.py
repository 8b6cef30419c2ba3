"""``toolscale serve-model``: an OpenAI-compatible chat-completions server over a saved model, on CPU."""

from __future__ import annotations

import argparse
import socket
import sys

from toolscale.cli._common import Formatter, positive_int
from toolscale.errors import ToolscaleError, UsageError

__all__ = ["register"]

EPILOG = """\
examples:
  toolscale serve-model runs/r1/model                      # http://127.0.0.1:8000/v1, model name 'model'
  toolscale serve-model runs/r1/model --port 0             # any free port (printed on stderr)
  toolscale serve-model runs/r1/model --model-name proxy --port 8100

then point any OpenAI client, or a recipe's LLM role, at it:
  curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \\
       -d '{"model": "model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 32}'
  [llm.policy]
  base_url = "http://127.0.0.1:8000/v1"
  model = "model"

Tool calls: the model's chat template renders `tools`, and <tool_call>{...}</tool_call> blocks in the
completion come back as `tool_calls` (as vLLM's hermes parser does). Binds to 127.0.0.1 unless --host."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``serve-model`` to the CLI."""
    p = sub.add_parser("serve-model", help="serve a saved model over OpenAI chat completions (CPU)",
                       formatter_class=Formatter, epilog=EPILOG)
    p.add_argument("model_dir", metavar="MODEL_DIR", help="folder written by save_pretrained (model + tokenizer)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1, this machine only; 0.0.0.0 exposes it)")
    p.add_argument("--model-name", metavar="NAME", help="model name clients send (default: the folder's name)")
    p.add_argument("--threads", type=positive_int, default=1, help="torch CPU threads (default 1)")
    p.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if not Path(args.model_dir).is_dir():
        raise UsageError(f"MODEL_DIR {args.model_dir!r} is not a folder; expected one written by save_pretrained")
    from eval.serve import ModelServer, build_app

    server = ModelServer(args.model_dir, model_name=args.model_name, threads=args.threads)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(2048)  # before the URL is printed: a client that connects at once waits in the backlog
    except OSError as err:
        sock.close()
        raise ToolscaleError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
    import uvicorn

    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"serving {server.model_name!r} at http://{shown}:{port}/v1 (Ctrl-C stops)", file=sys.stderr, flush=True)
    config = uvicorn.Config(build_app(server), log_level="warning", access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
