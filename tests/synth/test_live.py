"""Real stdio MCP: a round trip with a bundled server, a crashing server and a hanging one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from synth.collect import normalize_schema
from synth.dataset import build_dataset
from synth.errors import ServerError, ToolCallError
from synth.live import LiveBackend, LiveSessions, bundled_command
from synth.models import Recipe
from synth.servers.catalog import call_tool, tool_docs
from synth.servers.db import make_database

FAKE = str(Path(__file__).with_name("fake_server.py"))
pytestmark = pytest.mark.integration


def test_stdio_round_trip_matches_in_process_logic():
    sessions = LiveSessions(timeout_s=30)
    try:
        info = sessions.open("travel", bundled_command("travel", seed=5, variant=1))
        assert info["name"] == "toolscale-travel"
        listed = {t.name: t for t in sessions.list_tools("travel")}
        for doc in tool_docs("travel"):
            assert listed[doc.name].description == doc.description
            assert normalize_schema(listed[doc.name].input_schema) == doc.parameters
        db = make_database("travel", 5, 1)
        f = db["flights"][2]
        args = {"origin": f["origin"], "destination": f["destination"]}
        live, emulated = sessions.call("travel", "search_flights", args), call_tool("travel", db, "search_flights", args)
        assert live == emulated
        assert json.dumps(live) == json.dumps(emulated)  # the same key order: answers state fields in that order
        booked = sessions.call("travel", "book_flight", {"flight_id": f["flight_id"], "passenger": "Ana Costa"})
        assert sessions.call("travel", "get_booking", {"booking_id": booked["booking_id"]})["status"] == "confirmed"
        with pytest.raises(ToolCallError, match="no record with flight_id 'nope'"):
            sessions.call("travel", "get_flight", {"flight_id": "nope"})
        assert sessions.opened == 1
    finally:
        sessions.close_all()


def test_crashing_server_drops_its_tasks_and_the_run_goes_on(tmp_path):
    backend = LiveBackend(command_for=lambda server, inst: [sys.executable, FAKE, "bundled-crash", server, "4"])
    recipe = Recipe(task_count=8, tool_diversity=7, domains=("travel",), db_diversity=1, error_rate=0.0,
                    defect_rate=0.0, backend="live")
    m = build_dataset(recipe, tmp_path, backend=backend)
    assert m.rejections.get("server_error", 0) >= 1
    assert m.counts["accepted"] + sum(m.rejections.values()) == m.counts["tasks_planned"]
    assert backend.opened_keys == ["travel:s0:v0"]  # one connection per server instance, not restarted
    assert (tmp_path / "manifest.json").exists()


def test_hanging_server_times_out():
    sessions = LiveSessions(timeout_s=1.5)
    try:
        sessions.open("hang", [sys.executable, FAKE, "bundled-hang", "travel", "1"])
        with pytest.raises(ServerError, match="timed out"):
            sessions.call("hang", "search_hotels", {"city": "Oslo"})
        with pytest.raises(ServerError, match="not open"):
            sessions.call("hang", "search_hotels", {"city": "Oslo"})
    finally:
        sessions.close_all()


def test_server_that_cannot_start():
    sessions = LiveSessions(timeout_s=5, startup_timeout_s=10)
    try:
        with pytest.raises(ServerError, match="failed to start"):
            sessions.open("x", ["/nonexistent/definitely-not-a-server"])
    finally:
        sessions.close_all()


@pytest.mark.slow
def test_live_and_emulator_datasets_agree(tmp_path):
    recipe = Recipe(task_count=40, tool_diversity=12, db_diversity=2, error_rate=0.0, seed=3)
    build_dataset(recipe, tmp_path / "emu")
    build_dataset(recipe.model_copy(update={"backend": "live"}), tmp_path / "live")
    assert (tmp_path / "emu" / "train.jsonl").read_bytes() == (tmp_path / "live" / "train.jsonl").read_bytes()
