"""The scripted policy's final answer: it answers what was asked, in the asked language and length.

The answer states the value of every field the request asks for (:func:`synth.rules.requested_fields`),
then, when nothing was asked by name, the main facts of the last results (a new record's id and status,
a search's count and first hit, a lookup's leading fields in the tool's own order). Calls that could not
be completed are admitted with the reason (timed out, unreachable, the tool's error). A request that asks
for a short answer gets one sentence of at most :data:`synth.rules.SHORT_WORDS` words; one that asks for
French, Spanish or German gets that language's frame (:data:`FRAMES`).
"""

from __future__ import annotations

import random
from typing import Any

from synth.rules import SHORT_WORDS, constraints, field_words, output_pairs, requested_fields

__all__ = ["FRAMES", "final_answer"]

FRAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "English": {"lead": ("Here's what I found: {f}.", "{F}.", "Done. {F}.", "Sure: {f}.", "All set: {f}.",
                         "I checked, and {f}."),
                "fact": ("the {k} is {v}", "{k}: {v}"), "join": ("; ", ", and "),
                "fail": ("I could not {t}: {why}.", "{T} did not go through: {why}."),
                "none": ("I could not get any results.",),
                "why": {"timeout": "the service timed out", "unreachable": "the service was unreachable",
                        "blocked": "a value it needed was unavailable", "tool_error": "the tool returned an error"}},
    "French": {"lead": ("Voici le résultat : {f}.", "C'est fait. {F}."), "fact": ("le champ {k} est {v}",),
               "join": ("; ",), "fail": ("Je n'ai pas pu {t} : {why}.",), "none": ("Je n'ai pu obtenir aucun résultat.",),
               "why": {"timeout": "le service n'a pas répondu à temps", "unreachable": "le service était injoignable",
                       "blocked": "une valeur nécessaire manquait", "tool_error": "l'outil a renvoyé une erreur"}},
    "Spanish": {"lead": ("Esto es lo que encontré: {f}.", "Listo. {F}."), "fact": ("el campo {k} es {v}",),
                "join": ("; ",), "fail": ("No pude {t}: {why}.",), "none": ("No pude obtener ningún resultado.",),
                "why": {"timeout": "el servicio no respondió a tiempo", "unreachable": "el servicio no estaba disponible",
                        "blocked": "faltaba un valor necesario", "tool_error": "la herramienta devolvió un error"}},
    "German": {"lead": ("Das habe ich gefunden: {f}.", "Erledigt. {F}."), "fact": ("das Feld {k} ist {v}",),
               "join": ("; ",), "fail": ("Ich konnte {t} nicht: {why}.",), "none": ("Ich konnte keine Ergebnisse abrufen.",),
               "why": {"timeout": "der Dienst hat nicht rechtzeitig geantwortet",
                       "unreachable": "der Dienst war nicht erreichbar",
                       "blocked": "ein benötigter Wert fehlte", "tool_error": "das Werkzeug meldete einen Fehler"}},
}
"""Answer frames per language: leads, fact forms, joints, failure forms and failure reasons."""


def _label(field: str) -> str:
    words = field_words(field)
    return words[0] if words else field.replace("_", " ")


def _value(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def _main_facts(tool: str, out: dict) -> list[tuple[str, str]]:
    """The leading facts of one result when nothing was asked by name (tool's own field order); a text
    result gives its first lines, quoted."""
    if set(out) == {"result"} and isinstance(out["result"], str):
        lines = [ln.strip() for ln in out["result"].splitlines() if ln.strip() and not ln.strip().startswith("(")]
        text = "; ".join(lines[:3])
        return [("result", f'"{text[:100]}"')] if text else []
    lists = [(k, v) for k, v in out.items() if isinstance(v, list)]
    if lists:
        k, items = lists[0]
        facts = [(f"number of {k}", _value(out.get("count", len(items))))]
        if items and isinstance(items[0], dict):
            facts += [(f"first {f.replace('_', ' ')}", _value(x)) for f, x in list(items[0].items())[:2]
                      if x is not None and not isinstance(x, dict | list)]
        return facts
    pairs = [(f, x) for f, x in output_pairs(out) if x is not None and not isinstance(x, bool)]
    return [(_label(f), _value(x)) for f, x in pairs[:3] if len(_value(x)) <= 60]


def final_answer(query: str, done: list[tuple[str, dict]], failed: list[tuple[str, str]],
                 phrase: dict[str, str], rng: random.Random) -> str:
    """The answer to ``query``.

    Parameters
    ----------
    query : str
        The user's request.
    done : list of (tool, output)
        Successful results in call order.
    failed : list of (tool, kind)
        Calls that could not be completed, with ``timeout``, ``unreachable``, ``blocked`` or ``tool_error``.
    phrase : dict
        ``tool -> what it does`` in words (the intent with references), for the failure sentence.
    rng : random.Random
        Chooses the frames.
    """
    c = constraints(query)
    frames = FRAMES[c.language or "English"]
    want = requested_fields(query, [o for _, o in done])
    facts = [(_label(f), vals[-1]) for f, vals in want.items()]
    if not facts and done:
        facts = [kv for _, out in done[-2:] for kv in _main_facts("", out)]
        if c.short:
            facts = facts[:2]
    fact_form = rng.choice(frames["fact"])
    joint = rng.choice(frames["join"])
    parts = [fact_form.format(k=k, v=v) for k, v in facts]
    text = ""
    if parts:
        body = joint.join(parts)
        text = rng.choice(frames["lead"]).format(f=body, F=body[:1].upper() + body[1:])
    fails = []
    for tool, kind in dict.fromkeys(failed):
        what = phrase.get(tool, tool.replace("_", " "))
        form = frames["fail"][0] if c.short else rng.choice(frames["fail"])
        fails.append(form.format(t=what, T=what[:1].upper() + what[1:],
                                 why=frames["why"].get(kind, frames["why"]["tool_error"])))
    tail = " ".join(fails)
    if c.short:  # the admission of what failed is never cut; the facts are
        room = SHORT_WORDS - 1 - len(tail.split())
        words = text.split()
        text = " ".join(words[:max(room, 0)]).rstrip(",;:") + ("." if 0 < room < len(words) else "")
        if len(tail.split()) >= SHORT_WORDS:
            tail = frames["fail"][0].format(t="finish", T="Finish", why=frames["why"]["tool_error"])
    text = (text + " " + tail).strip() if tail else text
    return text or frames["none"][0]
