"""HSCA's macro aggregates: kept in each snapshot's transaction, equal to the full-read computation,
written once under a resent EXEC; and the cross-session view (AgentMacro) with tenant isolation."""

from __future__ import annotations

import itertools
import random
import threading
import time
import uuid

import pytest
import redis

import redmem
from redmem import WriteOutcomeUnknown
from redmem.recipes.hsca import AgentMacro, HSCAEngine, SessionStore, SnapshotRecord, WeightedChunk
from redmem.recipes.hsca._beats import Beat
from redmem.recipes.hsca._keys import HSCAKeyKind
from redmem.recipes.hsca._macro import domain_evolution, relevance
from redmem.recipes.hsca._series import BEATS_FIELD, sum_units
from redmem.recipes.hsca._window import build_snapshot
from redmem.store._connection import settings
from redmem.store._embedded import EmbeddedServer
from redmem.text._analyzer import default_analyzer

DOMAINS = ["physics", "legal", "medical", "narrative", "poetry", "historical", "cross_domain"]
WORDS = ["tortoise", "hare", "court", "lease", "quantum", "field", "poem", "empire", "river", "doctor"]


def term(word: str) -> str:
    return default_analyzer().tokens(word)[0]


def random_beat(rng: random.Random, position: int, created_at: float) -> Beat:
    chunks = [WeightedChunk(uuid.UUID(int=rng.getrandbits(128)).hex, rng.choice(WORDS), rng.random(),
                            rng.sample(DOMAINS, rng.randint(1, 3)), rng.random(), [], None)
              for _ in range(rng.randint(1, 4))]
    snapshot = build_snapshot(chunks, position, 20, created_at=created_at,
                              snapshot_id=str(uuid.UUID(int=rng.getrandbits(128))))
    terms = {term(w): round(rng.random(), 4) for w in rng.sample(WORDS, 3)}
    return Beat(snapshot, terms)


def fill(agent: str, session: str, count: int, rng: random.Random, start: float = 1000.0) -> SessionStore:
    store = SessionStore(agent, session)
    for i in range(count):
        store.append(random_beat(rng, store.next_position(), start + i))
    return store


def full_read(agent: str, session: str) -> list:
    """The snapshots as the full read computed them: every record of the session, by position."""
    query = SnapshotRecord.query.filter(agent_id=agent, session_id=session).order_by("position")
    return [r.snapshot() for r in query]


def stored_sums(client, store: SessionStore) -> dict[str, int]:
    raw = client.hgetall(store.space.key(HSCAKeyKind.HSCA_DOMAIN_SUMS))
    return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items() if int(v)}


def expected_sums(snapshots) -> dict[str, int]:
    sums: dict[str, int] = {}
    for s in snapshots:
        for domain, weight in s.domain_summary.items():
            sums[domain] = sums.get(domain, 0) + sum_units(weight)
    sums = {d: v for d, v in sums.items() if v}
    if snapshots:
        sums[BEATS_FIELD] = len(snapshots)
    return sums


@pytest.mark.parametrize("seed", range(4))
def test_the_aggregates_equal_the_full_read_on_random_sessions(any_db, seed):
    rng = random.Random(seed)
    store = fill("agent-r", f"s-{seed}", rng.randint(5, 40), rng)
    engine = HSCAEngine(agent_id="agent-r", session_id=f"s-{seed}")
    engine.get_macro_context()  # a warm cache must not change what the next reads give
    for gap in range(rng.randint(0, 2)):
        store.next_position()  # a save that failed after its INCR: a gap in the positions
        store.append(random_beat(rng, store.next_position(), 5000.0 + gap))
    victims = rng.sample(SnapshotRecord.query.filter(agent_id="agent-r", session_id=f"s-{seed}").all(), 2)
    for record in victims:
        record.delete()
    full = full_read("agent-r", f"s-{seed}")
    assert [s.to_dict() for s in engine.get_macro_context()] == [s.to_dict() for s in full]
    assert engine.domain_evolution() == domain_evolution(full)
    positions = [s.conversation_position for s in full]
    for _ in range(5):
        start = rng.choice(positions)
        stop = rng.choice([None, start + rng.randint(0, 6)])
        region = [s for s in full if s.conversation_position >= start and (stop is None or s.conversation_position <= stop)]
        expected = domain_evolution([s for s in full if s.conversation_position < start][-1:] + region)
        assert engine.domain_evolution(start, stop) == expected[len(expected) - len(region):]
        assert [s.to_dict() for s in engine.region(start, stop)] == [s.to_dict() for s in region]
    assert [s.to_dict() for s in engine.last_beats(3)] == [s.to_dict() for s in full[-3:]]
    assert stored_sums(any_db, store) == expected_sums(full)
    assert store.rebuild_aggregates() == len(full)
    assert stored_sums(any_db, store) == expected_sums(full)
    assert engine.domain_evolution() == domain_evolution(full)


def test_an_in_process_engine_pages_the_domain_evolution_alike(db):
    rng = random.Random(7)
    memory = HSCAEngine()
    for i in range(12):
        beat = random_beat(rng, memory._beats.next_position(), 100.0 + i)
        memory._beats.append(beat)
    full = memory.get_macro_context()
    assert memory.domain_evolution() == domain_evolution(full)
    assert memory.domain_evolution(4, 7) == domain_evolution(full[3:8])[1:]


def test_returned_snapshots_share_nothing_with_the_cache(db):
    store = fill("agent-c", "s-c", 3, random.Random(3))
    engine = HSCAEngine(agent_id="agent-c", session_id="s-c")
    first = engine.get_macro_context()
    first[0].chunks[0].domain_tags.append("mutated")
    first[0].domain_summary["mutated"] = 1.0
    again = engine.get_macro_context()
    assert [s.to_dict() for s in again] == [s.to_dict() for s in full_read("agent-c", "s-c")]
    assert store.count() == 3


def test_clearing_a_session_clears_its_aggregates(db):
    store = fill("agent-x", "s-x", 5, random.Random(5))
    assert store.clear() == 5
    assert not db.exists(store.space.key(HSCAKeyKind.HSCA_SERIES), store.space.key(HSCAKeyKind.HSCA_DOMAIN_SUMS))
    engine = HSCAEngine(agent_id="agent-x", session_id="s-x")
    assert engine.get_macro_context() == [] and engine.domain_evolution() == []
    assert AgentMacro("agent-x").session_ids() == []


# -- exactly-once: the EXEC of a snapshot's save stalls, redis-py resends ------------------------
@pytest.fixture
def slow_server_client():
    with EmbeddedServer(unix_socket=False, extra_args=["--enable-debug-command", "local"]) as server:
        saved = settings()
        client = redmem.connect(server.url, socket_timeout=0.2)
        try:
            yield server.url, client
        finally:
            redmem.configure(client=saved.client, key_prefix=saved.key_prefix)


def test_a_snapshot_save_whose_exec_stalls_counts_once(slow_server_client, monkeypatch):
    url, client = slow_server_client
    store = fill("agent-f", "s-f", 2, random.Random(11))
    sleeper = redis.Redis.from_url(url)
    threads: list[threading.Thread] = []
    original = SnapshotRecord.queue_save

    def stalling(self, batch):
        original(self, batch)
        if not threads:  # the server sleeps right before the first EXEC leaves
            threads.append(threading.Thread(target=sleeper.execute_command, args=("DEBUG", "SLEEP", 0.5)))
            threads[0].start()
            time.sleep(0.05)

    monkeypatch.setattr(SnapshotRecord, "queue_save", stalling)
    try:
        store.append(random_beat(random.Random(12), store.next_position(), 2000.0))
    except WriteOutcomeUnknown:
        pass
    finally:
        for thread in threads:
            thread.join(10)
    monkeypatch.undo()
    full = full_read("agent-f", "s-f")
    assert threads and len(full) == 3
    assert client.zcard(store.space.key(HSCAKeyKind.HSCA_SERIES)) == 3
    assert stored_sums(client, store) == expected_sums(full)


# -- across sessions ----------------------------------------------------------------------------
def test_agent_macro_equals_the_full_read_of_each_session(any_db):
    rng = random.Random(21)
    counts = {"s-b": 6, "s-a": 9, "s-c": 4}
    for offset, (session, count) in enumerate(counts.items()):
        fill("agent-m", session, count, rng, start=1000.0 * (offset + 1))
    macro = AgentMacro("agent-m")
    assert macro.session_ids() == ["s-b", "s-a", "s-c"]  # by first snapshot time
    profiles = macro.sessions()
    fulls = {s: full_read("agent-m", s) for s in counts}
    for profile in profiles:
        full = fulls[profile.session_id]
        assert profile.beats == len(full)
        assert (profile.started_at, profile.last_at) == (full[0].created_at, full[-1].created_at)
        for domain in DOMAINS:
            units = sum(sum_units(s.domain_summary.get(domain, 0.0)) for s in full)
            assert profile.profile.get(domain, 0.0) == pytest.approx(units / 10_000 / len(full), abs=1e-12)
    assert profiles[0].shifted is False
    assert all(p.shifted == (p.dominant != q.dominant) for q, p in itertools.pairwise(profiles))
    mix = macro.domain_mix()
    assert sum(mix.values()) == pytest.approx(sum(sum(p.profile.values()) * p.beats for p in profiles) / 19)
    faded = macro.domain_mix(half_life=500.0, now=4000.0)
    weights = {p.session_id: p.beats * 0.5 ** ((4000.0 - p.last_at) / 500.0) for p in profiles}
    for domain, value in faded.items():
        expected = sum(weights[p.session_id] * p.profile.get(domain, 0.0) for p in profiles) / sum(weights.values())
        assert value == pytest.approx(expected)
    # concepts and relevance: against a brute force over every session's beats
    beats = {s: SessionStore("agent-m", s).between() for s in counts}
    for word in WORDS:
        holders = [(b.snapshot.created_at, s, b.snapshot.conversation_position)
                   for s, bs in beats.items() for b in bs if term(word) in b.term_weights]
        found = macro.first_appearance(word)
        if not holders:
            assert found is None
            continue
        created, session, position = min(holders)
        assert (found.session_id, found.position, found.created_at) == (session, position, created)
    order = macro.session_ids()
    brute = sorted((-relevance(b, [term("tortoise"), term("court")]), order.index(s), b.snapshot.conversation_position)
                   for s, bs in beats.items() for b in bs)
    expected = [(order[i], p, -score) for score, i, p in brute if score < 0][:4]
    found = [(r.session_id, r.snapshot.conversation_position, r.relevance) for r in macro.relevant("tortoise court", limit=4)]
    assert found == expected and len(found) == 4
    aged = macro.relevant("tortoise court", limit=50, half_life=500.0, now=4000.0)
    assert all(r.relevance == pytest.approx(relevance(Beat(r.snapshot, next(
        b.term_weights for b in beats[r.session_id] if b.snapshot.snapshot_id == r.snapshot.snapshot_id)),
        [term("tortoise"), term("court")]) * 0.5 ** ((4000.0 - r.snapshot.created_at) / 500.0)) for r in aged)


def test_agent_macro_keeps_agents_apart(any_db):
    rng = random.Random(31)
    fill("agent-1", "shared-name", 5, rng)
    fill("agent-2", "shared-name", 3, rng)
    fill("agent-2", "other", 2, rng)
    one, two = AgentMacro("agent-1"), AgentMacro("agent-2")
    assert one.session_ids() == ["shared-name"] and [p.beats for p in one.sessions()] == [5]
    assert sorted(two.session_ids()) == ["other", "shared-name"] and sum(p.beats for p in two.sessions()) == 5
    ids_one = {b.snapshot.snapshot_id for b in SessionStore("agent-1", "shared-name").between()}
    assert not any(r.snapshot.snapshot_id in ids_one for w in WORDS for r in two.relevant(w, limit=50))
    assert AgentMacro("agent-3").sessions() == [] and AgentMacro("agent-3").domain_mix() == {}
    assert AgentMacro("agent-3").first_appearance("tortoise") is None
    with pytest.raises(redmem.ValidationError):
        AgentMacro("")
    with pytest.raises(redmem.ValidationError):
        one.domain_mix(half_life=0.0)
