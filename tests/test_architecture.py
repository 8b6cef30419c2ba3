"""The layer rule, as import-linter contracts in pyproject.toml: kept by the code, and able to fail.

The rule: ``toolscale.cli`` imports the packages; the packages import only the contracts
(``toolscale.config``, ``toolscale.errors``, each other's ``models.py``; the known exceptions
are listed one by one in pyproject.toml); nothing imports ``toolscale.cli``; no import cycles.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("toolscale", "synth", "probes", "grid", "fit", "allocator", "train", "eval", "slurm", "pipeline")


def _lint(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT), "--no-cache", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def _contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_are_kept() -> None:
    out = _lint(REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    names = [c["name"] for c in _contracts()]
    assert {c["type"] for c in _contracts()} >= {"forbidden", "layers", "independence", "acyclic_siblings"}
    for name in names:
        assert f"{name} KEPT" in " ".join(out.stdout.split()), f"{name!r} not reported as kept:\n{out.stdout}"


def test_the_contracts_cover_every_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert set(config["root_packages"]) == set(PACKAGES)
    layered = {m.strip() for c in _contracts() if c["type"] == "layers" for layer in c["layers"]
               for m in layer.replace(":", "|").split("|")}
    assert set(PACKAGES) - {"toolscale"} <= layered
    assert {"toolscale.cli", "toolscale.config", "toolscale.errors"} <= layered


def test_a_library_module_importing_the_cli_breaks_the_contracts(tmp_path) -> None:
    """The same config over a copy of the tree where allocator/ imports toolscale.cli: lint-imports fails."""
    for pkg in PACKAGES:
        if pkg == "allocator":
            shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (tmp_path / pkg).symlink_to(REPO / pkg, target_is_directory=True)
    (tmp_path / "allocator" / "bad_import.py").write_text("from toolscale.cli.allocate import register\n")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    out = _lint(tmp_path)
    text = " ".join(out.stdout.split())
    assert out.returncode == 1, out.stdout + out.stderr
    assert "nothing imports toolscale.cli BROKEN" in text
    assert "allocator.bad_import -> toolscale.cli.allocate" in text


def test_no_import_cycle_between_any_two_modules() -> None:
    """Stronger than the per-package contract: no strongly connected set of modules in the whole import graph
    (lazy imports inside functions included, as grimp reads them)."""
    import grimp
    import networkx as nx

    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    g = nx.DiGraph()
    for module in graph.modules:
        g.add_node(module)
        g.add_edges_from((module, imported) for imported in graph.find_modules_directly_imported_by(module))
    assert g.number_of_nodes() > 100  # the whole library was read
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert cycles == [], f"import cycles: {cycles}"


STAGES = ("synth", "probes", "grid", "fit", "allocator", "train", "eval", "slurm", "pipeline")


def test_every_package_declares_a_public_surface_that_resolves() -> None:
    """Each stage package lists its public names in ``__all__`` (other packages import those or its models.py),
    and every listed name loads."""
    import importlib

    for name in STAGES:
        pkg = importlib.import_module(name)
        assert isinstance(getattr(pkg, "__all__", None), list | tuple) and pkg.__all__, f"{name}/__init__.py: no __all__"
        for public in pkg.__all__:
            assert getattr(pkg, public) is not None, f"{name}.{public} does not resolve"


def test_the_contracts_list_at_most_three_exceptions_each_with_a_reason() -> None:
    """Every contract's ``ignore_imports`` together, the two surface rules aside (``pkg.models`` and ``pkg``), hold at
    most three exceptions, and each has a one-line reason: a comment on its line in pyproject.toml, or above the
    exceptions it is listed with."""
    surfaces = ("** -> **.models", "** -> *")
    listed = [i for c in _contracts() for i in c.get("ignore_imports", []) if i not in surfaces]
    assert len(listed) <= 3, listed
    lines = (REPO / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for item in listed:
        (at,) = [n for n, line in enumerate(lines) if line.strip().startswith(f'"{item}"')]
        above = at  # a comment may give the reason of the exceptions listed right below it
        while "#" not in lines[above] and lines[above - 1].strip().startswith(("#", '"')):
            above -= 1
        assert "#" in lines[above], f"{item}: no reason given"


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
"""A function's lines without its docstring (the docstring carries the mathematics and may be long)."""


def _rooms():
    import ast

    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            yield path, path.read_text(encoding="utf-8"), ast


def _function_lines(node) -> int:
    import ast

    n = node.end_lineno - node.lineno + 1
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        n -= first.end_lineno - first.lineno + 1
    return n


def test_rooms_fit_on_a_screen() -> None:
    """No module over 600 lines, no function over 80 (issue 34); the offenders are named."""
    import ast

    big, long = [], []
    for path, text, _ in _rooms():
        rel = path.relative_to(REPO)
        if text.count("\n") > MAX_MODULE_LINES:
            big.append(f"{rel} ({text.count(chr(10))} lines)")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _function_lines(node) > MAX_FUNCTION_LINES:
                long.append(f"{rel}:{node.lineno} {node.name} ({_function_lines(node)} lines)")
    assert not big and not long, "modules: " + "; ".join(big) + " | functions: " + "; ".join(long)
