"""A small generator of labelled tool-use trajectories (pinned interface 1) for tests and benchmarks.

Not synth/: a fixed toy "orders" domain whose calls copy identifiers from the user turn or
earlier tool outputs, in the four dependency structures (chain, fan-in, fan-out, parallel).
With probability ``defect_rate`` a trajectory gets one injected non-derivable call: one
identifier argument is replaced by a fresh one of the same format that appears nowhere in
the visible history (its id goes to ``meta.nonderivable_calls``). The tool output then echoes
the invented identifier, as a real server would, so later calls stay derivable.
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["TOOLS", "make_trajectory", "make_dataset", "write_dataset"]

_NAMES = ("Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu", "Max", "Ned", "Oz", "Pia")
_STATUS = ("shipped", "pending", "lost", "returned")


def _tool(name: str, desc: str, params: dict[str, str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": desc,
        "parameters": {"type": "object", "properties": {k: {"type": "string", "description": v}
                                                        for k, v in params.items()},
                       "required": list(params)}}}


TOOLS = [
    _tool("get_customer", "Look up a customer by id.", {"customer_id": "customer id, CUSnnnn"}),
    _tool("get_store", "Look up a store by id.", {"store_id": "store id, STRnnnn"}),
    _tool("get_order", "Look up an order by id.", {"order_id": "order id, ORDnnnn"}),
    _tool("get_item", "Look up an item by id.", {"item_id": "item id, ITMnnnn"}),
    _tool("transfer_order", "Move an order to a store.", {"order_id": "order id", "store_code": "store code"}),
]


def _msg(role: str, content: str = "", tool_calls: list | None = None, tool_call_id: str | None = None,
         name: str | None = None) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id, "name": name}


class _Builder:
    def __init__(self, rng: random.Random, used: set[str], digits: int):
        self.rng, self.used, self.messages, self.n, self.digits = rng, used, [], 0, digits
        self.injected: list[str] = []

    def ident(self, prefix: str) -> str:
        while True:
            v = f"{prefix}{self.rng.randrange(10 ** (self.digits - 1), 10 ** self.digits)}"
            if v not in self.used:
                self.used.add(v)
                return v

    def call(self, tool: str, args: dict[str, str], output: dict[str, Any], inject: str | None = None) -> str:
        self.n += 1
        cid = f"call_{self.n}"
        if inject is not None:
            fake = self.ident(args[inject].rstrip("0123456789"))
            output = {k: (fake if v == args[inject] else v) for k, v in output.items()}
            args = {**args, inject: fake}
            self.injected.append(cid)
        call = {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
        self.messages.append(_msg("assistant", "", [call]))
        self.messages.append(_msg("tool", json.dumps(output), tool_call_id=cid, name=tool))
        return cid


def make_trajectory(seed: int, *, structure: str | None = None, inject: bool = False,
                    id_digits: int = 4) -> dict[str, Any]:
    """One trajectory row; ``inject`` puts one non-derivable call in it (at a random action).

    Identifiers are ``PREFIX<id_digits digits>`` (``ORD4821``); short ones (2 digits) become
    single BPE tokens, which a tiny probe learns to copy within a few hundred steps.
    """
    rng = random.Random(seed)
    structure = structure or rng.choice(("chain", "fan-in", "fan-out", "parallel"))
    b = _Builder(rng, set(), id_digits)
    cus, store, name = b.ident("CUS"), b.ident("STR"), rng.choice(_NAMES)
    o1, o2, item, code = b.ident("ORD"), b.ident("ORD"), b.ident("ITM"), b.ident("SC")
    n_calls = {"chain": 3, "fan-in": 3, "fan-out": 3, "parallel": 2}[structure]
    bad = rng.randrange(n_calls) if inject else -1
    b.messages.append(_msg("system", "You are an order-support agent. Use the tools."))
    if structure == "chain":
        b.messages.append(_msg("user", f"Customer {name} ({cus}) asks what their last order contains."))
        b.call("get_customer", {"customer_id": cus}, {"customer_id": cus, "name": name, "last_order": o1},
               "customer_id" if bad == 0 else None)
        b.call("get_order", {"order_id": o1}, {"order_id": o1, "item_id": item, "status": rng.choice(_STATUS)},
               "order_id" if bad == 1 else None)
        b.call("get_item", {"item_id": item}, {"item_id": item, "price": rng.randrange(5, 500)},
               "item_id" if bad == 2 else None)
        answer = f"The last order of {name} contains item {item}."
    elif structure == "fan-out":
        b.messages.append(_msg("user", f"Check the status of both orders of customer {cus}."))
        b.call("get_customer", {"customer_id": cus}, {"customer_id": cus, "orders": f"{o1} {o2}"},
               "customer_id" if bad == 0 else None)
        b.call("get_order", {"order_id": o1}, {"order_id": o1, "status": rng.choice(_STATUS)},
               "order_id" if bad == 1 else None)
        b.call("get_order", {"order_id": o2}, {"order_id": o2, "status": rng.choice(_STATUS)},
               "order_id" if bad == 2 else None)
        answer = f"Both orders of {cus} were checked."
    elif structure == "fan-in":
        b.messages.append(_msg("user", f"Move the last order of {cus} to store {store}."))
        b.call("get_customer", {"customer_id": cus}, {"customer_id": cus, "last_order": o1},
               "customer_id" if bad == 0 else None)
        b.call("get_store", {"store_id": store}, {"store_id": store, "store_code": code},
               "store_id" if bad == 1 else None)
        b.call("transfer_order", {"order_id": o1, "store_code": code}, {"order_id": o1, "moved": "yes"},
               rng.choice(("order_id", "store_code")) if bad == 2 else None)
        answer = f"Order {o1} moved to store {store}."
    else:
        b.messages.append(_msg("user", f"Look up customer {cus} and store {store}."))
        b.call("get_customer", {"customer_id": cus}, {"customer_id": cus, "name": name},
               "customer_id" if bad == 0 else None)
        b.call("get_store", {"store_id": store}, {"store_id": store, "city": rng.choice(_NAMES) + "ville"},
               "store_id" if bad == 1 else None)
        answer = f"Customer {cus} is {name}."
    b.messages.append(_msg("assistant", answer))
    meta = {"task_id": f"toy-{seed}", "server": "toy-orders", "db_id": "toy", "structure": structure,
            "chain": [m["tool_calls"][0]["function"]["name"] for m in b.messages if m["tool_calls"]],
            "nonderivable_calls": b.injected, "repaired_calls": [], "seed": seed}
    return {"messages": b.messages, "tools": json.dumps(TOOLS), "meta": json.dumps(meta)}


def make_dataset(n: int, *, defect_rate: float = 0.3, seed: int = 0, id_digits: int = 4) -> list[dict[str, Any]]:
    """``n`` rows; each trajectory gets an injected non-derivable call with probability ``defect_rate``."""
    rng = random.Random(seed)
    return [make_trajectory(rng.randrange(2**31), inject=rng.random() < defect_rate, id_digits=id_digits)
            for _ in range(n)]


def write_dataset(rows: list[dict[str, Any]], out_dir: str, manifest: dict[str, Any] | None = None) -> None:
    """Write ``out_dir/train.jsonl`` and ``out_dir/manifest.json`` (as synth/ does)."""
    from pathlib import Path

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "train.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (d / "manifest.json").write_text(json.dumps(manifest or {"dataset_id": d.name, "n_trajectories": len(rows)},
                                                indent=2), encoding="utf-8")
