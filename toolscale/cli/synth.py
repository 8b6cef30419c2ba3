"""``toolscale collect`` (tool documents from MCP servers) and ``toolscale synth`` (one grid point's dataset)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from toolscale.cli._common import (Formatter, add_registry_args, config_of, emit_json, print_table, registry_path,
                                   seed_int)
from toolscale.errors import UsageError

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collect", help="list the tools of MCP servers over stdio, quarantine bad ones, store them",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale collect --json                    # the bundled servers\n"
                              "  toolscale collect --server 'python -m synth.servers.run travel' --json\n"
                              "  toolscale collect --astra mcp_servers.jsonl --registry reg.duckdb")
    p.add_argument("--server", action="append", default=[], metavar="'COMMAND [ARGS...]'",
                   help="a stdio MCP server command line (repeatable; the config's [synth].servers are added)")
    p.add_argument("--astra", action="append", default=[], metavar="FILE",
                   help="import document-only servers from ASTRA's mcp_servers.jsonl (repeatable)")
    p.add_argument("--bundled", action="store_true",
                   help="also collect the bundled servers (the default when no server or file is given)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per server request (default 30)")
    p.add_argument("--no-store", action="store_true", help="do not write to the registry")
    add_registry_args(p)
    p.add_argument("--json", action="store_true", help="servers with their tool names, quarantined ones with reasons")
    p.set_defaults(func=_collect)

    p = sub.add_parser("synth", help="synthesise the SFT dataset of one grid point from a recipe",
                       formatter_class=Formatter,
                       epilog="examples:\n  toolscale synth --example-recipe > point.toml\n"
                              "  toolscale synth --recipe point.toml --out data/point0 --json\n"
                              "  toolscale synth --recipe point.toml --out data/p1 --set repair_rate=0.5 --seed 1\n"
                              "  toolscale synth --recipe point.toml --out data/git \\\n"
                              "      --server 'python -m mcp_server_git --repository /data/repo' --set "
                              "'arg_values={repo_path=[\"/data/repo\"]}'\n"
                              "  toolscale synth --recipe llm.toml --out data/p2 --llm-cache /shared/llm-cache --json"
                              "   # [llm.<role>]: docs/llm.md\n"
                              "  toolscale synth --example-recipe --domain code > code.toml && "
                              "toolscale synth --recipe code.toml --out data/code0")
    p.add_argument("--example-recipe", action="store_true", help="print a documented recipe and exit")
    p.add_argument("--domain", choices=["tools", "code"], default="tools",
                   help="which domain's example --example-recipe prints (a recipe file names its own domain: "
                        "domain = \"code\" builds code tasks)")
    p.add_argument("--recipe", metavar="RECIPE.toml", help="the recipe (knobs) to build")
    p.add_argument("--out", metavar="DIR", help="output folder for train.jsonl and manifest.json")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                   help="override a recipe knob (repeatable), e.g. --set task_count=64")
    p.add_argument("--seed", type=seed_int, help="override the recipe's seed")
    p.add_argument("--with-collected", action="store_true",
                   help="also draw from document-only servers stored in the registry (emulated)")
    p.add_argument("--server", action="append", default=[], metavar="'COMMAND [ARGS...]'",
                   help="a stdio MCP server of yours, collected and executed live (repeatable; joins the "
                        "recipe's servers and the config's [synth].servers)")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 2, nothing written) when one of your servers contributes no task; "
                        "a warning otherwise")
    p.add_argument("--llm-cache", metavar="DIR",
                   help="LLM response cache folder (default: $TOOLSCALE_LLM_CACHE, else ~/.cache/toolscale/llm)")
    add_registry_args(p)
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(func=_synth)


def _collect(args: argparse.Namespace) -> int:
    from synth.collect import collect_bundled, collect_stdio, import_astra, store_report
    from synth.models import CollectReport

    config = config_of(args)
    servers = list(args.server) + (list(config.synth.servers) if config else [])
    reports = []
    if args.bundled or (not servers and not args.astra):
        reports.append(collect_bundled(timeout_s=args.timeout))
    if servers:
        reports.append(collect_stdio(servers, timeout_s=args.timeout))
    for path in args.astra:
        reports.append(import_astra(path, min_tools=config.synth.min_tools if config else 3))
    report = CollectReport(servers=[s for r in reports for s in r.servers],
                           quarantined=[q for r in reports for q in r.quarantined])
    if not args.no_store:
        from grid.registry import Registry
        with Registry(registry_path(args, config)) as reg:
            store_report(report, reg)
    if args.json:
        emit_json({"servers": [{"server": s.server, "source": s.source, "tools": [t.name for t in s.tools]}
                               for s in report.servers],
                   "quarantined": [q.model_dump() for q in report.quarantined],
                   "counts": {"servers": len(report.servers), "tools": report.n_tools,
                              "quarantined": len(report.quarantined)}})
    else:
        print_table([{"server": s.server, "tools": len(s.tools), "source": s.source} for s in report.servers],
                    title="collected servers")
        if report.quarantined:
            print_table([q.model_dump() for q in report.quarantined], title="quarantined")
    return 0


def _parse_set(items: list[str]) -> dict[str, Any]:
    import tomllib

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set expects KNOB=VALUE, got {item!r}")
        try:
            out[key.strip()] = tomllib.loads(f"v = {value}")["v"]
        except (tomllib.TOMLDecodeError, RecursionError):
            out[key.strip()] = value
    return out


def _synth(args: argparse.Namespace) -> int:
    from synth.recipe_io import EXAMPLE_RECIPE, load_recipe, parse_recipe

    if args.example_recipe:
        from toolscale.cli.synth_code import EXAMPLE_CODE_RECIPE

        sys.stdout.write(EXAMPLE_CODE_RECIPE if args.domain == "code" else EXAMPLE_RECIPE)
        return 0
    if not args.recipe or not args.out:
        raise UsageError("synth needs --recipe RECIPE.toml and --out DIR (or --example-recipe)")
    from synth.errors import RecipeError
    from toolscale.cli.synth_code import is_code_recipe, synth_code
    from toolscale.config import read_toml

    data = read_toml(args.recipe, kind="recipe", error=RecipeError,
                     hint="; write one with `toolscale synth --example-recipe`")
    if is_code_recipe(data):
        return synth_code(args, data, _parse_set(args.set))
    recipe = load_recipe(args.recipe)
    if args.set or args.seed is not None:
        data = recipe.model_dump()
        data.update(_parse_set(args.set))
        if args.seed is not None:
            data["seed"] = args.seed
        recipe = parse_recipe(data, source="--set")
    from synth.dataset import build_dataset
    from synth.models import ToolDoc

    config = config_of(args)
    servers = list(dict.fromkeys([*recipe.servers, *args.server, *(config.synth.servers if config else [])]))
    if tuple(servers) != recipe.servers:
        recipe = recipe.model_copy(update={"servers": list(servers)})
    use_registry = bool(getattr(args, "registry", None) or config)
    extra: list[ToolDoc] = []
    if args.with_collected:
        from grid.registry import Registry
        from synth.servers.catalog import SERVERS
        with Registry(registry_path(args, config), read_only=True) as reg:
            extra = [ToolDoc.model_validate({k: v for k, v in d.items()})
                     for d in reg.tool_docs() if d["server"] not in SERVERS]
    with _progress("synthesising", enabled=sys.stderr.isatty() and not args.json) as progress:
        manifest = build_dataset(recipe, args.out, extra_docs=extra, progress=progress, llm_cache=args.llm_cache,
                                 strict=args.strict)
    for w in manifest.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if use_registry:
        from grid.registry import Registry
        with Registry(registry_path(args, config)) as reg:
            reg.save_dataset(manifest.dataset_id, experiment=config.experiment.name if config else None,
                             recipe=recipe.model_dump(mode="json"), seed=recipe.seed, path=str(args.out),
                             manifest=manifest.model_dump(mode="json"))
    if args.json:
        emit_json(manifest)
    else:
        rows = [{"axis": k, "requested": v, "measured": manifest.measured.get(k)} for k, v in manifest.requested.items()]
        print_table(rows, title=f"dataset {manifest.dataset_id} -> {args.out}")
        c = manifest.counts
        print(f"{c['accepted']} trajectories kept of {c['trajectories']} ({c['rejected']} rejected), "
              f"{c['tool_calls']} tool calls, ~{c['tokens']} tokens; judge failures "
              f"{manifest.judge_failure_rate:.1%}, fallback parses {manifest.judge_fallback_rate:.1%}; "
              f"roles {', '.join(f'{k}={v}' for k, v in manifest.roles.items())}; "
              f"rejected tasks and reasons in {args.out}/rejected.jsonl")
        if manifest.llm:
            print_table([{"role": r, "requests": u.requests, "cache hits": u.cache_hits, "retries": u.retries,
                          "tokens in": u.tokens_in, "tokens out": u.tokens_out, "dollars": u.dollars,
                          "$ / accepted": u.dollars_per_accepted} for r, u in manifest.llm.items()],
                        title="LLM usage per role")
    return 0


class _progress:
    """A rich progress bar on stderr (only on a TTY); yields a ``progress(done, total)`` callback or None."""

    def __init__(self, label: str, enabled: bool):
        self.label, self.enabled, self._bar = label, enabled, None

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import Progress
        self._bar = Progress(transient=True)
        self._bar.start()
        task = self._bar.add_task(self.label, total=None)

        def update(done: int, total: int) -> None:
            self._bar.update(task, completed=done, total=total)
        return update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
