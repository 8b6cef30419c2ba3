"""The library APIs of the code domain: what a function of a task may call, with a trusted reference.

Each :class:`Api` is one standard-library operation a generated function applies to its input: its
input and output *kind* (``text``, ``words``, ``ints``, ``int``, ``num``), the Python expression the
golden code writes (``code``, over the variable ``{x}`` and an optional constant ``{k}``), the phrase a
natural-language spec uses for it (``phrase``), and a **reference** written separately in this module
(``ref``), which computes the expected values of the hidden tests. The rendered code runs only in the
jail (:mod:`synth.code.runner`); the references are this package's own code, so a golden module whose
tests pass shows that the rendering and the reference agree.

``tool_diversity`` counts these APIs (the code domain's "tools"); :data:`HELDOUT_APIS` are reserved
for the held-out benchmark and never drawn for training data.
"""

from __future__ import annotations

import base64
import bisect
import calendar
import collections
import datetime
import functools
import hashlib
import heapq
import itertools
import math
import operator
import os.path
import random
import re
import statistics
import string
import textwrap
import urllib.parse
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Api", "KINDS", "ROOT_KINDS", "API_CATALOG", "HELDOUT_APIS", "training_apis", "heldout_apis", "api",
           "api_order", "make_input", "PY_TYPES", "PARAM_NAMES"]

KINDS: tuple[str, ...] = ("text", "words", "ints", "int", "num")
"""Value kinds: a string, a list of strings, a list of integers, an integer, a float (rounded)."""
ROOT_KINDS: tuple[str, ...] = ("text", "words", "ints", "int")
"""Kinds a test can generate an input of (a function that depends on nothing takes one of these)."""
PY_TYPES: dict[str, str] = {"text": "str", "words": "list[str]", "ints": "list[int]", "int": "int", "num": "float"}
"""Type hint of each kind."""
PARAM_NAMES: dict[str, str] = {"text": "text", "words": "words", "ints": "values", "int": "n", "num": "x"}
"""Parameter name a function taking each kind uses."""


@dataclass(frozen=True)
class Api:
    """One library API: ``code`` applied to an input of kind ``kin`` gives a value of kind ``kout``."""

    name: str
    """Identifier, e.g. ``heapq.nlargest`` (the API counted by ``tool_diversity``)."""
    imports: tuple[str, ...]
    """Modules the code needs (``import X`` lines)."""
    kin: str
    """Input kind."""
    kout: str
    """Output kind."""
    code: str
    """Python expression over ``{x}`` (a variable name) and ``{k}`` (the constant, when ``consts``)."""
    ref: Callable[[Any, Any], Any]
    """Reference ``ref(x, k)``: the expected value (this module's code, never the rendered source)."""
    phrase: str
    """Spec phrase over ``{x}`` (how the input is named) and ``{k}``."""
    stem: str
    """Function name stem."""
    consts: tuple[Any, ...] = ()
    """Constants ``{k}`` may take (empty: the API has none)."""


def _ints_in(text: str) -> list[int]:
    out, cur = [], ""
    for c in text + " ":
        if c.isdigit():
            cur += c
        elif cur:
            out.append(int(cur))
            cur = ""
    return out


def _letter_runs(text: str) -> list[str]:
    out, cur = [], ""
    for c in text.lower() + " ":
        if "a" <= c <= "z":
            cur += c
        elif cur:
            out.append(cur)
            cur = ""
    return out


def _most_common(words: list[str]) -> str:
    counts: dict[str, int] = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    best = max(counts.values())
    return next(w for w in words if counts[w] == best)


def _median_low(values: list[int]) -> int:
    s = sorted(values)
    return s[(len(s) - 1) // 2]


def _gcd_all(values: list[int]) -> int:
    return functools.reduce(math.gcd, values)


def _lcm_all(values: list[int]) -> int:
    return functools.reduce(lambda a, b: a * b // math.gcd(a, b), values)


def _common_prefix(words: list[str]) -> str:
    if not words:
        return ""
    lo, hi = min(words), max(words)
    i = 0
    while i < min(len(lo), len(hi)) and lo[i] == hi[i]:
        i += 1
    return lo[:i]


def _geo(values: list[int]) -> float:
    if not values or min(values) <= 0:
        raise ValueError("geometric mean needs positive values")
    return round(statistics.geometric_mean(values), 2)


def _mean(values: list[int]) -> float:
    if not values:
        raise ValueError("mean of nothing")
    return round(sum(values) / len(values), 2)


def _divisors(n: int) -> list[int]:
    if n > _DIVISOR_MAX:
        raise ValueError(f"{n} is too large to list divisors of")
    return [d for d in range(1, n + 1) if not n % d]


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DIVISOR_MAX = 100_000
"""Largest number whose divisors a test may ask for (a larger one is untestable: the loop would be long)."""


def _nonempty(values: list[Any]) -> list[Any]:
    if not values:
        raise ValueError("empty input")
    return values


def _A(name: str, imports: tuple[str, ...], kin: str, kout: str, code: str, ref: Callable[[Any, Any], Any],
       phrase: str, stem: str, consts: tuple[Any, ...] = ()) -> Api:
    return Api(name, imports, kin, kout, code, ref, phrase, stem, consts)


API_CATALOG: tuple[Api, ...] = (
    # text -> ...
    _A("re.findall", ("re",), "text", "ints", '[int(t) for t in re.findall(r"\\d+", {x})]',
       lambda x, k: _ints_in(x), "the integers written in {x}, in order", "numbers"),
    _A("str.split", (), "text", "words", "{x}.split()", lambda x, k: [w for w in x.split(" ") if w],
       "the whitespace-separated words of {x}", "split_words"),
    _A("re.findall[a-z]", ("re",), "text", "words", 're.findall(r"[a-z]+", {x}.lower())',
       lambda x, k: _letter_runs(x), "the runs of letters in {x}, lowercased", "letter_words"),
    _A("textwrap.wrap", ("textwrap",), "text", "words", "textwrap.wrap({x}, {k})",
       lambda x, k: textwrap.wrap(x, k), "{x} wrapped into lines of at most {k} characters", "wrapped", (10, 14, 18)),
    _A("str.upper", (), "text", "text", "{x}.upper()", lambda x, k: "".join(c.upper() for c in x),
       "{x} in upper case", "shout"),
    _A("str.title", (), "text", "text", "{x}.title()", lambda x, k: x.title(), "{x} in title case", "title_case"),
    _A("str.swapcase", (), "text", "text", "{x}.swapcase()", lambda x, k: x.swapcase(),
       "{x} with the case of every letter swapped", "swap_case"),
    _A("string.capwords", ("string",), "text", "text", "string.capwords({x})",
       lambda x, k: " ".join(w[:1].upper() + w[1:].lower() for w in x.split()),
       "{x} with each word capitalised and runs of spaces collapsed", "cap_words"),
    _A("textwrap.shorten", ("textwrap",), "text", "text", 'textwrap.shorten({x}, width={k}, placeholder="...")',
       lambda x, k: textwrap.shorten(x, width=k, placeholder="..."),
       '{x} shortened to at most {k} characters, ending in "..." when cut', "shorten", (14, 18, 22)),
    _A("re.sub", ("re",), "text", "text", 're.sub(r"\\d", "#", {x})',
       lambda x, k: "".join("#" if c.isdigit() else c for c in x), '{x} with every digit replaced by "#"',
       "mask_digits"),
    _A("base64.b64encode", ("base64",), "text", "text", "base64.b64encode({x}.encode()).decode()",
       lambda x, k: base64.b64encode(x.encode()).decode(), "the base64 encoding of {x} (UTF-8)", "to_base64"),
    _A("hashlib.sha256", ("hashlib",), "text", "text", "hashlib.sha256({x}.encode()).hexdigest()[:{k}]",
       lambda x, k: hashlib.sha256(x.encode()).hexdigest()[:k],
       "the first {k} hex digits of the SHA-256 digest of {x}", "digest", (8, 10, 12)),
    _A("urllib.parse.quote", ("urllib.parse",), "text", "text", "urllib.parse.quote({x})",
       lambda x, k: urllib.parse.quote(x), "{x} percent-encoded for a URL path", "url_quote"),
    _A("str.replace", (), "text", "text", '{x}.replace(" ", "{k}")', lambda x, k: k.join(x.split(" ")),
       '{x} with every space replaced by "{k}"', "join_spaces", ("_", "-", "+")),
    _A("slice[::-1]", (), "text", "text", "{x}[::-1]", lambda x, k: "".join(reversed(x)), "{x} reversed",
       "reverse_text"),
    _A("len[text]", (), "text", "int", "len({x})", lambda x, k: len(x), "the number of characters in {x}",
       "length"),
    _A("zlib.crc32", ("zlib",), "text", "int", "zlib.crc32({x}.encode())", lambda x, k: zlib.crc32(x.encode()),
       "the CRC-32 checksum of {x} (UTF-8)", "checksum"),
    _A("str.count", (), "text", "int", '{x}.count("{k}")', lambda x, k: sum(c == k for c in x),
       'how many times the letter "{k}" occurs in {x}', "count_letter", ("a", "e", "o")),
    _A("binascii.crc_hqx", ("binascii",), "text", "int", "binascii.crc_hqx({x}.encode(), 0)",
       lambda x, k: __import__("binascii").crc_hqx(x.encode(), 0), "the CRC-CCITT checksum of {x} (UTF-8, start 0)",
       "crc16"),
    # words -> ...
    _A("sorted[words]", (), "words", "words", "sorted({x})", lambda x, k: sorted(x), "{x} in alphabetical order",
       "sorted_words"),
    _A("sorted[key=len]", (), "words", "words", "sorted({x}, key=len)",
       lambda x, k: [w for _, _, w in sorted((len(w), i, w) for i, w in enumerate(x))],
       "{x} ordered from shortest to longest (ties keep their order)", "by_length"),
    _A("dict.fromkeys", (), "words", "words", "list(dict.fromkeys({x}))",
       lambda x, k: [w for i, w in enumerate(x) if w not in x[:i]], "{x} without repeats, first occurrences kept",
       "unique_words"),
    _A("filter[len]", (), "words", "words", "[w for w in {x} if len(w) > {k}]",
       lambda x, k: list(filter(lambda w: len(w) > k, x)), "the words of {x} longer than {k} letters",
       "long_words", (3, 4)),
    _A("slice[w::-1]", (), "words", "words", "[w[::-1] for w in {x}]", lambda x, k: ["".join(reversed(w)) for w in x],
       "each word of {x} spelled backwards", "mirrored"),
    _A("heapq.nsmallest[words]", ("heapq",), "words", "words", "heapq.nsmallest({k}, {x})",
       lambda x, k: sorted(x)[:k], "the {k} alphabetically first words of {x}", "first_words", (2, 3)),
    _A("str.capitalize", (), "words", "words", "[w.capitalize() for w in {x}]",
       lambda x, k: [w[:1].upper() + w[1:].lower() for w in x], "each word of {x} capitalised", "capitalized"),
    _A("str.join[space]", (), "words", "text", '" ".join({x})', lambda x, k: " ".join(x),
       "the words of {x} joined by single spaces", "sentence"),
    _A("str.join[dash]", (), "words", "text", '"-".join({x})', lambda x, k: "-".join(x),
       'the words of {x} joined by "-"', "slug"),
    _A("collections.Counter", ("collections",), "words", "text", "collections.Counter({x}).most_common(1)[0][0]",
       lambda x, k: _most_common(_nonempty(x)), "the most frequent word of {x} (the first seen on a tie)",
       "most_common"),
    _A("max[key=len]", (), "words", "text", "max({x}, key=len)",
       lambda x, k: next(w for w in _nonempty(x) if len(w) == max(map(len, x))),
       "the longest word of {x} (the first on a tie)", "longest_word"),
    _A("os.path.commonprefix", ("os",), "words", "text", "os.path.commonprefix({x})",
       lambda x, k: _common_prefix(x), "the longest common prefix of the words of {x}", "common_prefix"),
    _A("initials", (), "words", "text", '"".join(w[0] for w in {x}).upper()',
       lambda x, k: "".join(w[:1] for w in x).upper(), "the first letters of the words of {x}, upper case",
       "initials"),
    _A("len[set]", (), "words", "int", "len(set({x}))", lambda x, k: len(dict.fromkeys(x)),
       "how many different words {x} holds", "distinct_count"),
    _A("sum[len]", (), "words", "int", "sum(len(w) for w in {x})", lambda x, k: len("".join(x)),
       "the total number of letters in the words of {x}", "letter_total"),
    _A("map[len]", (), "words", "ints", "[len(w) for w in {x}]", lambda x, k: list(map(len, x)),
       "the length of each word of {x}", "lengths"),
    _A("vowels", (), "words", "ints", '[sum(c in "aeiou" for c in w) for w in {x}]',
       lambda x, k: [len([c for c in w if c in "aeiou"]) for w in x], "the number of vowels in each word of {x}",
       "vowel_counts"),
    # ints -> ...
    _A("sorted[ints]", (), "ints", "ints", "sorted({x})", lambda x, k: sorted(x), "{x} in ascending order",
       "ascending"),
    _A("sorted[reverse]", (), "ints", "ints", "sorted({x}, reverse=True)", lambda x, k: sorted(x)[::-1],
       "{x} in descending order", "descending"),
    _A("itertools.accumulate", ("itertools",), "ints", "ints", "list(itertools.accumulate({x}))",
       lambda x, k: [sum(x[:i + 1]) for i in range(len(x))], "the running totals of {x}", "running_total"),
    _A("itertools.accumulate[max]", ("itertools",), "ints", "ints", "list(itertools.accumulate({x}, max))",
       lambda x, k: [max(x[:i + 1]) for i in range(len(x))], "the running maximum of {x}", "running_max"),
    _A("heapq.nlargest", ("heapq",), "ints", "ints", "heapq.nlargest({k}, {x})",
       lambda x, k: sorted(x, reverse=True)[:k], "the {k} largest of {x}, largest first", "top", (2, 3)),
    _A("filter[even]", (), "ints", "ints", "[v for v in {x} if v % 2 == 0]", lambda x, k: [v for v in x if not v & 1],
       "the even values of {x}, in order", "evens"),
    _A("itertools.pairwise", ("itertools",), "ints", "ints", "[b - a for a, b in itertools.pairwise({x})]",
       lambda x, k: [x[i + 1] - x[i] for i in range(len(x) - 1)],
       "the differences between consecutive values of {x}", "steps"),
    _A("sorted[set]", (), "ints", "ints", "sorted(set({x}))", lambda x, k: sorted(dict.fromkeys(x)),
       "the distinct values of {x}, ascending", "distinct_sorted"),
    _A("map[mod]", (), "ints", "ints", "[v % {k} for v in {x}]", lambda x, k: [v - k * (v // k) for v in x],
       "each value of {x} modulo {k}", "remainders", (3, 5, 7)),
    _A("map[square]", (), "ints", "ints", "[v * v for v in {x}]", lambda x, k: [v ** 2 for v in x],
       "the square of each value of {x}", "squares"),
    _A("sum", (), "ints", "int", "sum({x})", lambda x, k: functools.reduce(operator.add, x, 0),
       "the sum of {x}", "total"),
    _A("max", (), "ints", "int", "max({x})", lambda x, k: sorted(_nonempty(x))[-1], "the largest value of {x}",
       "largest"),
    _A("min", (), "ints", "int", "min({x})", lambda x, k: sorted(_nonempty(x))[0], "the smallest value of {x}",
       "smallest"),
    _A("math.prod", ("math",), "ints", "int", "math.prod({x})", lambda x, k: functools.reduce(operator.mul, x, 1),
       "the product of {x}", "product"),
    _A("math.gcd", ("math",), "ints", "int", "math.gcd(*{x})", lambda x, k: _gcd_all(_nonempty(x)),
       "the greatest common divisor of {x}", "common_divisor"),
    _A("functools.reduce[xor]", ("functools", "operator"), "ints", "int", "functools.reduce(operator.xor, {x}, 0)",
       lambda x, k: functools.reduce(lambda a, b: a ^ b, x, 0), "the bitwise XOR of all values of {x}", "xor_all"),
    _A("statistics.median_low", ("statistics",), "ints", "int", "statistics.median_low({x})",
       lambda x, k: _median_low(_nonempty(x)), "the low median of {x}", "median"),
    _A("bisect.bisect_left", ("bisect",), "ints", "int", "bisect.bisect_left(sorted({x}), {k})",
       lambda x, k: sum(v < k for v in x), "how many values of {x} are below {k}", "rank_of", (10, 20, 25)),
    _A("len[ints]", (), "ints", "int", "len({x})", lambda x, k: len(x), "how many values {x} holds", "count"),
    _A("math.lcm", ("math",), "ints", "int", "math.lcm(*{x})", lambda x, k: _lcm_all(_nonempty(x)),
       "the least common multiple of {x}", "common_multiple"),
    _A("statistics.mean", ("statistics",), "ints", "num", "round(statistics.mean({x}), 2)",
       lambda x, k: _mean(x), "the mean of {x}, rounded to 2 decimals", "mean"),
    _A("statistics.pstdev", ("statistics",), "ints", "num", "round(statistics.pstdev({x}), 2)",
       lambda x, k: round(statistics.pstdev(_nonempty(x)), 2), "the population standard deviation of {x}, rounded to 2 decimals",
       "spread"),
    _A("math.hypot", ("math",), "ints", "num", "round(math.hypot(*{x}), 2)",
       lambda x, k: round(math.hypot(*x), 2), "the Euclidean norm of {x}, rounded to 2 decimals",
       "norm"),
    _A("statistics.geometric_mean", ("statistics",), "ints", "num", "round(statistics.geometric_mean({x}), 2)",
       lambda x, k: _geo(x), "the geometric mean of {x}, rounded to 2 decimals", "geo_mean"),
    _A("str.join[comma]", (), "ints", "text", '",".join(map(str, {x}))', lambda x, k: ",".join(str(v) for v in x),
       "the values of {x} written with commas between them", "csv"),
    # int -> ...
    _A("hex", (), "int", "text", "hex({x})", lambda x, k: "-" * (x < 0) + "0x" + format(abs(x), "x"), "{x} in hexadecimal with 0x",
       "hex_of"),
    _A("bin", (), "int", "text", "bin({x})", lambda x, k: "-" * (x < 0) + "0b" + format(abs(x), "b"), "{x} in binary with 0b", "binary"),
    _A("format[,]", (), "int", "text", 'format({x}, ",")', lambda x, k: f"{x:,}", "{x} with commas between thousands",
       "grouped"),
    _A("calendar.month_name", ("calendar",), "int", "text", "calendar.month_name[{x} % 12 + 1]",
       lambda x, k: _MONTHS[x % 12], "the name of month number ({x} mod 12) + 1",
       "month"),
    _A("calendar.day_name", ("calendar",), "int", "text", "calendar.day_name[{x} % 7]",
       lambda x, k: ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")[x % 7],
       "the name of weekday number {x} mod 7 (0 is Monday)", "weekday"),
    _A("datetime.timedelta", ("datetime",), "int", "text",
       "(datetime.date(2024, 1, 1) + datetime.timedelta(days={x})).isoformat()",
       lambda x, k: datetime.date.fromordinal(datetime.date(2024, 1, 1).toordinal() + x).isoformat(),
       "the ISO date {x} days after 2024-01-01", "date_after"),
    _A("math.isqrt", ("math",), "int", "int", "math.isqrt({x})", lambda x, k: int(math.sqrt(x)) if x < 2 ** 40 else
       math.isqrt(x), "the integer square root of {x}", "root"),
    _A("bin.count", (), "int", "int", 'bin({x}).count("1")', lambda x, k: sum(int(b) for b in format(x, "b")),
       "how many 1 bits {x} has", "ones"),
    _A("int.bit_length", (), "int", "int", "{x}.bit_length()", lambda x, k: len(format(abs(x), "b")) if x else 0,
       "how many bits {x} needs", "bits"),
    _A("math.comb", ("math",), "int", "int", "math.comb({x}, 2)", lambda x, k: x * (x - 1) // 2,
       "how many pairs can be chosen from {x} items", "pairs"),
    _A("sum[digits]", (), "int", "int", "sum(int(d) for d in str({x}))", lambda x, k: sum(map(int, str(x))),
       "the sum of the decimal digits of {x}", "digit_sum"),
    _A("map[int, str]", (), "int", "ints", "[int(d) for d in str({x})]", lambda x, k: list(map(int, str(x))),
       "the decimal digits of {x}, most significant first", "digits"),
    _A("range[divisors]", (), "int", "ints", "[d for d in range(1, {x} + 1) if {x} % d == 0]",
       lambda x, k: _divisors(x), "the divisors of {x}, ascending", "divisors"),
    # num -> ...
    _A("round", (), "num", "int", "round({x})", lambda x, k: round(x), "{x} rounded to the nearest integer",
       "rounded"),
    _A("math.floor", ("math",), "num", "int", "math.floor({x})", lambda x, k: int(x // 1), "{x} rounded down",
       "floor"),
    _A("math.ceil", ("math",), "num", "int", "math.ceil({x})", lambda x, k: -int(-x // 1), "{x} rounded up",
       "ceiling"),
    _A("format[.1f]", (), "num", "text", 'format({x}, ".1f")', lambda x, k: f"{x:.1f}", "{x} written with one decimal",
       "one_decimal"),
)
"""Every API of the code domain (77), training and held out."""

HELDOUT_APIS: tuple[str, ...] = ("binascii.crc_hqx", "urllib.parse.quote", "os.path.commonprefix", "vowels",
                                 "itertools.accumulate[max]", "statistics.pstdev", "math.lcm", "calendar.day_name",
                                 "math.comb", "math.ceil")
"""APIs reserved for the ``code-heldout-apis`` benchmark: no training dataset draws them."""

_BY_NAME = {a.name: a for a in API_CATALOG}
assert len(_BY_NAME) == len(API_CATALOG), "API names must be unique"


def api(name: str) -> Api:
    """The API called ``name`` (KeyError naming the known ones otherwise)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown API {name!r}; known: {', '.join(sorted(_BY_NAME))}") from None


def training_apis() -> list[Api]:
    """The APIs training data may draw from (catalog order, held-out ones left out)."""
    return [a for a in API_CATALOG if a.name not in HELDOUT_APIS]


def heldout_apis() -> list[Api]:
    """The held-out APIs (catalog order)."""
    return [_BY_NAME[n] for n in HELDOUT_APIS]


def api_order(apis: list[Api], seed: int) -> list[Api]:
    """A seeded order of ``apis`` in which every prefix composes: a walk over kinds.

    Starting from a root kind, each next API takes the kind the previous one gave when one is left (so the
    first few already chain: ``text -> ints -> int -> text ...``), else any API taking a root kind. A
    ``tool_diversity`` of T uses the first T, so a larger level is a superset of a smaller one and
    dependent specs can be written at every level.
    """
    rng = random.Random(f"api-order:{seed}")
    left = list(apis)
    rng.shuffle(left)
    out: list[Api] = []
    kind = rng.choice(ROOT_KINDS)
    while left:
        nxt = next((a for a in left if a.kin == kind), None)
        if nxt is None:
            nxt = next((a for a in left if a.kin in ROOT_KINDS), left[0])
        left.remove(nxt)
        out.append(nxt)
        kind = nxt.kout
    return out


WORDS: tuple[str, ...] = (
    "apple", "river", "stone", "cloud", "maple", "tiger", "ocean", "lemon", "ember", "pilot", "cedar", "delta",
    "forge", "glass", "harbor", "iris", "jade", "kite", "lunar", "meadow", "north", "orbit", "pearl", "quill",
    "raven", "solar", "tulip", "umber", "vivid", "willow", "yarn", "zephyr", "amber", "brook", "coral", "dune",
    "echo", "fern", "grove", "hazel", "ivory", "juniper", "karma", "lotus", "mist", "nova", "onyx", "plume",
    "ridge", "sage", "thorn", "vale", "wren", "aspen", "birch", "canyon", "dawn", "flint", "gale", "heron")
"""Vocabulary of generated test inputs."""


def make_input(kind: str, rng: random.Random) -> Any:
    """A test input of ``kind`` (a root kind), drawn with ``rng``.

    ``text``: 4-7 lowercase words with 2-3 integers among them; ``words``: 3-6 words, often with a repeat;
    ``ints``: 3-6 integers in 1..40; ``int``: an integer in 2..400.
    """
    if kind == "text":
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 7))]
        for _ in range(rng.randint(2, 3)):
            words.insert(rng.randrange(len(words) + 1), str(rng.randint(1, 99)))
        return " ".join(words)
    if kind == "words":
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 6))]
        if rng.random() < 0.5:
            words.insert(rng.randrange(len(words) + 1), rng.choice(words))
        return words
    if kind == "ints":
        return [rng.randint(1, 40) for _ in range(rng.randint(3, 6))]
    if kind == "int":
        return rng.randint(2, 400)
    raise ValueError(f"no input generator for kind {kind!r}; root kinds: {', '.join(ROOT_KINDS)}")


# The catalog's code uses these modules; importing them here keeps the references honest about availability.
_USED = (bisect, calendar, collections, hashlib, heapq, itertools, os.path, re, statistics, string, zlib)
