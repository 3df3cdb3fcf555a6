"""HSCA snapshots in Redis: a second process sees them, tenants and sessions stay apart, macro queries."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import redmem
from redmem.recipes.hsca import HSCAEngine, SessionStore, SnapshotRecord
from redmem.recipes.hsca._keys import HSCAKeyKind

SRC = str(Path(__file__).resolve().parents[3] / "src")
CONVERSATION = [
    "Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
    "So how does Redis persist data to disk? Does the memory data survive a restart?",
    "Once upon a time a tortoise and a hare agreed to race. The hare ran ahead and slept under a tree. "
    "The tortoise kept walking slowly past the hare.",
    "The hare woke too late, and the tortoise had won the race. The tortoise was slow, but the hare was careless.",
    "The court ruled that the lease contract bound the tenant. The tenant appealed the court ruling on the lease. "
    "The landlord's contract with the tenant stood.",
    "The appeal court upheld the lease ruling, so the tenant must pay under the contract.",
]

OTHER_PROCESS = """
import json, sys
import redmem
from redmem.recipes.hsca import HSCAEngine
redmem.connect(sys.argv[1]); redmem.configure(key_prefix=sys.argv[2])
engine = HSCAEngine(agent_id="agent-1", session_id="s-1")
print(json.dumps({"snapshots": [s.to_dict() for s in engine.get_macro_context()],
                  "tortoise": engine.first_mention("tortoise")}))
engine.ingest_turn(sys.argv[3]); engine.ingest_turn(sys.argv[4])
"""


def ingest(engine: HSCAEngine, turns: list[str]) -> HSCAEngine:
    for turn in turns:
        engine.ingest_turn(turn)
    return engine


def test_a_second_process_sees_the_snapshots_and_continues_the_positions(db, redis_url):
    engine = ingest(HSCAEngine(agent_id="agent-1", session_id="s-1"), CONVERSATION)
    mine = [s.to_dict() for s in engine.get_macro_context()]
    assert len(mine) == 3
    prefix = redmem.store.settings().key_prefix
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, redis_url, prefix, *CONVERSATION[4:]],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    seen = json.loads(done.stdout)
    assert seen["snapshots"] == mine and seen["tortoise"] == 1
    assert [s.conversation_position for s in engine.get_macro_context()] == [0, 1, 2, 3]


def test_snapshots_are_stored_per_agent_and_session(db):
    ingest(HSCAEngine(agent_id="agent-1", session_id="s-1"), CONVERSATION[:2])
    ingest(HSCAEngine(agent_id="agent-2", session_id="s-1"), CONVERSATION[2:4])
    assert len(HSCAEngine(agent_id="agent-1", session_id="s-1").get_macro_context()) == 1
    assert HSCAEngine(agent_id="agent-1", session_id="s-2").get_macro_context() == []
    other = HSCAEngine(agent_id="agent-2", session_id="s-1")
    assert other.first_mention("tortoise") == 0 and other.first_mention("redis") is None
    assert HSCAEngine(agent_id="agent-1", session_id="s-1").relevant("tortoise race") == []
    space = SnapshotRecord._meta.keyspace(("agent-1", "s-1"))
    assert db.get(space.key(HSCAKeyKind.HSCA_POSITION)) in ("1", b"1")


@pytest.mark.parametrize("persisted", [True, False])
def test_macro_queries(db, persisted):
    session = {"agent_id": "agent-1", "session_id": "s-9"} if persisted else {}
    engine = ingest(HSCAEngine(**session), CONVERSATION)
    snapshots = engine.get_macro_context()
    assert [s.conversation_position for s in snapshots] == [0, 1, 2]
    assert [s.conversation_position for s in engine.last_beats(2)] == [1, 2]
    assert [s.conversation_position for s in engine.region(1)] == [1, 2]
    assert [s.conversation_position for s in engine.region(0, 1)] == [0, 1]
    assert engine.first_mention("the tortoise") == 1
    assert [s.conversation_position for s in engine.state_before("tortoise")] == [0]
    assert engine.state_before("Redis") == []
    assert len(engine.state_before("dragons")) == 3
    evolution = engine.domain_evolution()
    assert [step.dominant for step in evolution] == ["technical_prose", "narrative", "legal"]
    assert [step.shifted for step in evolution] == [False, True, True]
    found = engine.relevant("tenant lease")
    assert [r.snapshot.conversation_position for r in found] == [2] and 0 < found[0].relevance <= 1
    assert engine.relevant("") == [] and engine.relevant("the of and") == []
    near = engine.relevant("hare court", context_position=1)
    far = engine.relevant("hare court", context_position=2)
    assert near[0].relevance == pytest.approx(0.5) and near[1].relevance == pytest.approx(0.5 * math.exp(-1 / 3))
    assert near[0].snapshot.conversation_position == 1 and far[0].snapshot.conversation_position == 2
    assert [r.snapshot.conversation_position for r in engine.relevant("race court", region=(2, None))] == [2]


def test_dropped_text_keeps_the_weight_maps_searchable(db):
    engine = ingest(HSCAEngine(agent_id="agent-1", session_id="s-3", keep_text=False), CONVERSATION)
    for snapshot in HSCAEngine(agent_id="agent-1", session_id="s-3").get_macro_context():
        assert all(c.text == "" for c in snapshot.chunks)
        assert all(0 <= w <= 1 for w in snapshot.weight_map().values())
    assert engine.first_mention("tortoise") == 1
    assert engine.relevant("tenant")[0].snapshot.conversation_position == 2


def test_session_values_are_escaped_into_one_slot(db):
    engine = ingest(HSCAEngine(agent_id="a:{b}", session_id="s *1"), CONVERSATION[:2])
    assert len(engine.get_macro_context()) == 1
    assert HSCAEngine(agent_id="a", session_id="s *1").get_macro_context() == []


def test_clearing_a_session_removes_its_snapshots_and_restarts_its_positions(db):
    ingest(HSCAEngine(agent_id="agent-1", session_id="s-4"), CONVERSATION)
    ingest(HSCAEngine(agent_id="agent-1", session_id="s-5"), CONVERSATION[:2])
    assert SessionStore("agent-1", "s-4").clear() == 3
    engine = HSCAEngine(agent_id="agent-1", session_id="s-4")
    assert engine.get_macro_context() == []
    ingest(engine, CONVERSATION[:2])
    assert [s.conversation_position for s in engine.get_macro_context()] == [0]
    assert len(HSCAEngine(agent_id="agent-1", session_id="s-5").get_macro_context()) == 1


def test_the_last_beats_survive_a_gap_in_the_positions(db):
    engine = HSCAEngine(agent_id="agent-g", session_id="s-g")
    ingest(engine, CONVERSATION[:4])
    store = SessionStore("agent-g", "s-g")
    store.next_position()  # a save that failed after taking its position leaves a gap
    ingest(engine, CONVERSATION[4:])
    positions = [s.conversation_position for s in engine.get_macro_context()]
    assert positions == [0, 1, 3]
    assert [s.conversation_position for s in engine.last_beats(2)] == [1, 3]
    assert [s.conversation_position for s in engine.last_beats(3)] == [0, 1, 3]
    assert [s.conversation_position for s in engine.last_beats(10)] == [0, 1, 3]
