"""Pure tool logic of the bundled servers (pinned interface 10)."""

from __future__ import annotations

import pytest

from synth.errors import ToolCallError
from synth.tool_graph import tool_graph
from synth.models import ToolDoc
from synth.servers.catalog import SERVERS, call_tool, tool_docs
from synth.servers.db import DOMAINS, make_database


@pytest.mark.parametrize("domain", DOMAINS)
def test_docs_shape_and_dependencies(domain):
    docs = tool_docs(domain)
    assert 4 <= len(docs) <= 8
    assert len({d.name for d in docs}) == len(docs)
    for d in docs:
        assert isinstance(d, ToolDoc) and d.server == domain and d.description
        oa = d.to_openai()
        assert oa["type"] == "function" and oa["function"]["parameters"]["type"] == "object"
        assert set(d.required) <= set(d.parameters["properties"])
    g = tool_graph(docs)
    # outputs feed other tools' required arguments: most tools are reachable from another tool
    fed = {b for _, b in g.edges}
    assert len(fed) >= len(docs) // 2


def test_search_then_get_then_create_flow():
    db = make_database("travel", 3, 0)
    f = db["flights"][0]
    found = call_tool("travel", db, "search_flights", {"origin": f["origin"], "destination": f["destination"]})
    assert found["count"] >= 1 and f["flight_id"] in [x["flight_id"] for x in found["flights"]]
    detail = call_tool("travel", db, "get_flight", {"flight_id": f["flight_id"]})
    assert detail["arrival_city"] == f["destination"]
    n = len(db["bookings"])
    booked = call_tool("travel", db, "book_flight", {"flight_id": f["flight_id"], "passenger": "Ana Costa"})
    assert booked["price"] == f["price"] and len(db["bookings"]) == n + 1  # stateful
    assert call_tool("travel", db, "get_booking", {"booking_id": booked["booking_id"]})["status"] == "confirmed"
    assert call_tool("travel", db, "cancel_booking", {"booking_id": booked["booking_id"]})["status"] == "cancelled"


def test_create_totals_and_refs():
    db = make_database("shop", 0)
    cust, prod = db["customers"][0], db["products"][0]
    out = call_tool("shop", db, "place_order", {"customer_id": cust["customer_id"], "product_id": prod["product_id"],
                                                 "quantity": 3})
    assert out["total"] == round(3 * prod["price"], 2)
    with pytest.raises(ToolCallError, match="no product"):
        call_tool("shop", db, "place_order", {"customer_id": cust["customer_id"], "product_id": "XX", "quantity": 1})


@pytest.mark.parametrize("args,match", [
    ({}, "missing required argument 'flight_id'"),
    ({"flight_id": 3}, "must be string"),
    ({"flight_id": "FL-1", "x": 1}, "unknown argument 'x'"),
    ({"flight_id": "nope"}, "no record with flight_id 'nope'"),
])
def test_invalid_arguments(args, match):
    with pytest.raises(ToolCallError, match=match):
        call_tool("travel", make_database("travel", 0), "get_flight", args)


def test_unknown_tool_and_domain():
    with pytest.raises(ToolCallError, match="unknown tool 'fly'"):
        call_tool("travel", make_database("travel", 0), "fly", {})
    with pytest.raises(ToolCallError, match="unknown server domain"):
        call_tool("mars", {}, "x", {})
    assert set(SERVERS) == set(DOMAINS)
