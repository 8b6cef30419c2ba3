"""The user's servers as first-class citizens: what their tools return, where argument values come from, and
which of their tools may run at all.

**Effects.** :func:`effect` classifies a tool as ``read``, ``write`` or ``destructive`` from its MCP
annotations (``readOnlyHint``, ``destructiveHint``) and, without them, from its name (:data:`READ_VERBS`,
:data:`DESTRUCTIVE_VERBS`; an unknown verb counts as a write: when in doubt, never run it on real data).

**Observation.** Before planning, :func:`harvest` calls each *read-only* tool of a user server whose
required arguments are all known -- values the user gave (``arg_values``), a schema ``enum``, values the
parameter's description quotes (``'local'``, ``'remote'``), paths on the server's command line -- and
records what came back. A JSON result gives its fields; a text result is read by :func:`text_fields`
(``Key: value`` lines, ``Section:`` headers with indented items, bare list lines). The fields a tool was
seen to return (and those its ``outputSchema`` declares) become its output fields, so the tool graph gets
edges (``git_branch`` -> ``git_checkout``), and the values seen become the values a request may state
for a matching parameter (:func:`value_sources`). No value is invented: a parameter with no observed or
given value can only be filled from an earlier call's output in the same task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from synth.models import ToolDoc

__all__ = ["READ_VERBS", "DESTRUCTIVE_VERBS", "effect", "creates", "text_fields", "tool_noun", "given_values",
           "Observations", "harvest", "user_match", "value_sources"]

READ_VERBS = frozenset({"get", "list", "search", "find", "show", "read", "describe", "fetch", "query", "status",
                        "log", "diff", "view", "lookup", "check", "count", "current", "convert", "inspect", "info",
                        "branch", "stat", "head", "cat", "ls", "grep", "tree", "explain"})
"""Name words of read-only tools (used only when the server gives no annotations)."""

DESTRUCTIVE_VERBS = frozenset({"delete", "remove", "drop", "reset", "cancel", "close", "destroy", "purge",
                               "revoke", "truncate", "erase", "kill", "terminate", "wipe", "clear", "rm", "trash"})
"""Name words of destructive tools (without annotations)."""

_KV = re.compile(r"^\s*([A-Za-z][A-Za-z _-]{0,30}):\s+(\S.*)$")
_SECTION = re.compile(r"^([A-Za-z][A-Za-z _-]{0,40}):\s*$")
_ITEM = re.compile(r"^\s*(?:[*+-]\s+)?([^\s()]{1,120})\s*$")
_QUOTED = re.compile(r"'([A-Za-z0-9_.:/-]{1,40})'")


def effect(doc: ToolDoc) -> str:
    """``read``, ``write`` or ``destructive`` (see the module docstring)."""
    if doc.read_only is True:
        return "read"
    if doc.destructive is True:
        return "destructive"
    if doc.read_only is False:
        return "write"
    words = {w for w in re.split(r"[_\W]+", doc.name.lower()) if w}
    if words & DESTRUCTIVE_VERBS:
        return "destructive"
    if words & _WRITE_VERBS or not words & READ_VERBS:
        return "write"
    return "read"


_WRITE_VERBS = frozenset({"create", "add", "update", "set", "commit", "checkout", "push", "write", "move", "rename",
                          "send", "post", "put", "patch", "approve", "assign", "share", "merge", "apply", "install",
                          "insert", "book", "place", "transfer", "edit", "upload", "save", "run", "exec", "execute"})


def tool_noun(name: str) -> str:
    """The noun a tool's name lists (``git_branch`` -> ``branch``, ``list_files`` -> ``file``)."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if w and w not in {"git", "mcp", "list", "get", "show"}]
    noun = words[-1] if words else "item"
    return noun[:-1] if noun.endswith("s") and len(noun) > 3 else noun


def text_fields(text: str) -> dict[str, list[str]]:
    """Fields of a text result: ``Key: value`` lines, ``Section:`` headers with their indented items, and bare
    one-token lines (under ``items``); parenthesised hint lines are skipped. Values keep their order."""
    out: dict[str, list[str]] = {}
    section: str | None = None
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        if not line.strip() or line.strip().startswith("("):
            continue
        m = _SECTION.match(line)
        if m:
            section = m.group(1).strip().lower().replace(" ", "_").replace("-", "_")
            continue
        m = _KV.match(line)
        if m and not line.startswith(("\t", "    ")):
            key = m.group(1).strip().lower().replace(" ", "_").replace("-", "_")
            out.setdefault(key, []).append(m.group(2).strip())
            continue
        m = _ITEM.match(line)
        if m:
            indented = line[:1] in ("\t", " ")
            key = section if (section and indented) else "items"
            out.setdefault(key, []).append(m.group(1))
    return out


def _fields_of(result: Any) -> dict[str, list[Any]]:
    if not isinstance(result, dict):
        return {}
    if set(result) == {"result"} and isinstance(result["result"], str):
        return text_fields(result["result"])
    out: dict[str, list[Any]] = {}
    for k, v in result.items():
        if isinstance(v, list):
            for item in v:
                if isinstance(item, dict):
                    for f, x in item.items():
                        if isinstance(x, str | int | float) and not isinstance(x, bool):
                            out.setdefault(f, []).append(x)
                elif isinstance(item, str | int | float):
                    out.setdefault(k, []).append(item)
        elif isinstance(v, str | int | float) and not isinstance(v, bool):
            out.setdefault(k, []).append(v)
    return out


def given_values(doc: ToolDoc, param: str, arg_values: dict[str, list], command: str = "") -> list[Any]:
    """Values of ``param`` that need no observation: the user's ``arg_values``, the schema's ``enum``, values
    its description quotes, and (for path-like parameters) paths on the server's command line."""
    spec = doc.parameters.get("properties", {}).get(param, {})
    if arg_values.get(param):
        return list(arg_values[param])
    if isinstance(spec, dict) and spec.get("enum"):
        return list(spec["enum"])
    quoted = _QUOTED.findall(str(spec.get("description", ""))) if isinstance(spec, dict) else []
    if quoted:
        return list(dict.fromkeys(quoted))
    if _pathlike(param):
        return [t for t in command.split() if t.startswith("/")][-1:]
    return []


class Observations:
    """What the read-only tools of one user server returned when called with known values."""

    def __init__(self) -> None:
        self.fields: dict[str, dict[str, list[Any]]] = {}
        """``tool -> {field: values seen}`` (bare text items under the tool's noun)."""
        self.calls = 0
        """Observation calls made."""
        self.failed: dict[str, str] = {}
        """``tool -> error`` of observation calls that failed."""

    def values(self) -> dict[str, list[Any]]:
        """Every field's values over all tools."""
        out: dict[str, list[Any]] = {}
        for per in self.fields.values():
            for f, vals in per.items():
                out.setdefault(f, [])
                out[f] += [v for v in vals if v not in out[f]]
        return out


def harvest(docs: list[ToolDoc], call: Callable[[str, dict], dict], arg_values: dict[str, list],
            command: str = "") -> Observations:
    """Call each read-only tool whose required arguments all have given values once (see the module
    docstring); ``call(tool, arguments) -> result`` raises on a tool error."""
    obs = Observations()
    for doc in docs:
        if effect(doc) != "read":
            continue
        args = {}
        for p in doc.required:
            vals = given_values(doc, p, arg_values, command)
            if not vals:
                break
            args[p] = vals[0] if _type(doc, p) != "array" else [vals[0]]
        else:
            obs.calls += 1
            try:
                result = call(doc.name, args)
            except Exception as err:  # noqa: BLE001 - a tool that fails to answer just gives no observations
                obs.failed[doc.name] = str(err)[:200]
                continue
            fields = _fields_of(result)
            if "items" in fields:
                fields[tool_noun(doc.name)] = fields.pop("items")
            obs.fields[doc.name] = {f: v[:20] for f, v in fields.items() if v}
    return obs


def _type(doc: ToolDoc, param: str) -> str:
    spec = doc.parameters.get("properties", {}).get(param, {})
    return str(spec.get("type", "string")) if isinstance(spec, dict) else "string"


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}


def user_match(field: str, param: str, param_description: str, tool_description: str) -> float:
    """How well an observed field fills a parameter of a user tool: 1.0 same name; 0.8 the parameter names
    the field's entity (``branch`` -> ``branch_name``, ``base_branch``; ``untracked_files`` -> ``files``);
    0.6 the parameter's description (or, without one, its tool's) names the field; else 0."""
    f, p = field.lower(), param.lower()
    if f == p:
        return 1.0
    if p in (f"{f}_name", f"{f}_id") or p.endswith("_" + f) or f.endswith("_" + p):
        return 0.8
    if f in ("items", "result", "date", "message", "author", "name", "status") or _pathlike(p):
        return 0.0
    if param_description:
        return 0.6 if f.rstrip("s") in _words(param_description) else 0.0
    return 0.6 if f.rstrip("s") in _words(tool_description) else 0.0


def _pathlike(param: str) -> bool:
    return any(w in param.lower() for w in ("path", "repo", "dir", "root"))


def creates(doc: ToolDoc) -> bool:
    """Whether a tool makes a new named thing (its ``*_name`` parameters want a new name, never a seen one)."""
    return any(w in doc.name.lower() for w in ("create", "new", "make", "init"))


def value_sources(doc: ToolDoc, arg_values: dict[str, list], command: str, observed: dict[str, list[Any]]
                  ) -> dict[str, str]:
    """``param -> pick:JSON`` for each required parameter with given or observed values (never generated)."""
    out: dict[str, str] = {}
    props = doc.parameters.get("properties", {})
    for p in doc.required:
        vals = given_values(doc, p, arg_values, command)
        if not vals and not (creates(doc) and p.endswith("_name")):
            spec = props.get(p, {}) if isinstance(props.get(p), dict) else {}
            best = sorted(((user_match(f, p, str(spec.get("description", "")), doc.description), f)
                           for f in observed), reverse=True)
            vals = observed[best[0][1]] if best and best[0][0] > 0 else []
        vals = [v for v in vals if isinstance(v, str | int | float) and not isinstance(v, bool)][:20]
        if vals:
            out[p] = "pick:" + json.dumps(vals)
    return out
