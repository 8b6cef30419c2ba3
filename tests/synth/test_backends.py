"""Rollout backends: in-process bundled logic and the schema-driven emulator."""

from __future__ import annotations

import pytest

from synth.backends import EmulatorBackend, InProcessBackend, RoutingBackend
from synth.errors import ToolCallError
from synth.models import ToolDoc

DOC = ToolDoc(server="venues", name="book_venue", description="Book a venue.",
              parameters={"type": "object", "required": ["venue_id", "guests"],
                          "properties": {"venue_id": {"type": "string"}, "guests": {"type": "integer"},
                                         "tier": {"type": "string", "enum": ["basic", "vip"]}}},
              output_fields=["booking_id", "venue_id"])


def test_emulator_validates_against_the_schema():
    emu = EmulatorBackend([DOC])
    with pytest.raises(ToolCallError, match="missing required argument 'guests'"):
        emu.call("venues", (0, 0), "book_venue", {"venue_id": "V-1"})
    with pytest.raises(ToolCallError, match="must be integer"):
        emu.call("venues", (0, 0), "book_venue", {"venue_id": "V-1", "guests": "two"})
    with pytest.raises(ToolCallError, match="must be one of"):
        emu.call("venues", (0, 0), "book_venue", {"venue_id": "V-1", "guests": 2, "tier": "gold"})
    with pytest.raises(ToolCallError, match="unknown tool"):
        emu.call("venues", (0, 0), "nope", {})


def test_emulator_is_deterministic_and_stateful():
    args = {"venue_id": "V-1", "guests": 2}
    a = EmulatorBackend([DOC]).call("venues", (0, 0), "book_venue", args)
    emu = EmulatorBackend([DOC])
    b = emu.call("venues", (0, 0), "book_venue", args)
    assert a == b and b["venue_id"] == "V-1" and b["booking_id"].startswith("BOO-")
    assert emu.call("venues", (0, 0), "book_venue", args) is b  # remembered
    assert emu.call("venues", (1, 0), "book_venue", args)["booking_id"] != b["booking_id"]


def test_in_process_state_persists_per_instance():
    be = InProcessBackend()
    f = be.database("travel", (0, 0))["flights"][0]
    be.call("travel", (0, 0), "book_flight", {"flight_id": f["flight_id"], "passenger": "A B"})
    from synth.servers.db import make_database

    assert len(be.database("travel", (0, 0))["bookings"]) == len(make_database("travel", 0, 0)["bookings"]) + 1
    assert len(be.database("travel", (1, 0))["bookings"]) == len(make_database("travel", 1, 0)["bookings"])
    routed = RoutingBackend(be, EmulatorBackend([DOC]))
    assert routed.call("venues", (0, 0), "book_venue", {"venue_id": "V", "guests": 1})["status"] == "ok"
    assert routed.call("travel", (0, 0), "get_flight", {"flight_id": f["flight_id"]})["flight_id"] == f["flight_id"]
