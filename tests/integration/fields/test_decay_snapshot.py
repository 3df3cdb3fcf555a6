"""The exact decay order at one time (redmem.fields._decay_snapshot), as the inspector pages it: the scores Redis
computes are the field's own, the order is the exact ranking at its time (including where it
differs from the decay clock's), it is built in slices and reused, never by loading the memories."""

from __future__ import annotations

import itertools
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import configured_embeddings
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.fields import _decay_snapshot as decay_snapshot
from redmem.fields._confidence import ConfidenceField
from redmem.fields._decay_snapshot import exact_decay_page
from redmem.store._keys import KeyKind
from redmem.ui._decay_order import wait_for_builds
from redmem.ui._inventory import PageRequest, memory_page, space_of

DAY = 86400.0
AGENTS = itertools.count()


def plant(agent: str, rows: list[tuple[float, float, float | None]], now: float) -> list[ChatMemory]:
    """Memories of ``agent``: (importance, days since last touched, confidence signal or None)."""
    with configured_embeddings(HashingEmbeddings(32)):
        memories = [ChatMemory(agent_id=agent, content=f"memory {i}", importance=importance)
                    for i, (importance, _, _) in enumerate(rows)]
        ChatMemory.save_many(memories)
    decay = ChatMemory._meta.fields["relevance"]
    for memory, (_, age, signal) in zip(memories, rows):
        decay.touch(memory, now=now - age * DAY)
        if signal is not None:
            ConfidenceField.update_confidence(memory, "confidence", signal)
    return memories


def exact(agent: str, now: float, n: int) -> list[tuple[str, float]]:
    """The field's own exact top ``n`` (the threshold selection), the reference."""
    return ChatMemory._meta.fields["relevance"].ranked(space_of(agent), now, n)


def test_the_order_is_exact_where_the_decay_clock_is_not(db, monkeypatch):
    now = time.time() + 30 * DAY
    # an important memory touched long ago beats an unimportant one touched recently
    plant("dx-clock", [(3.0, 20.0, None), (0.2, 1.0, None), (1.0, 5.0, 0.9), (1.0, 5.0, 0.1), (0.5, 0.5, None)], now)
    monkeypatch.setattr("redmem.ui._inventory.EXACT_DECAY_LIMIT", 2)
    memory_page(PageRequest("dx-clock", sort="decay", limit=5), now=now)  # starts the build
    wait_for_builds()
    page = memory_page(PageRequest("dx-clock", sort="decay", limit=5), now=now)
    assert page["order"].startswith("decay (exact at ")
    reference = exact("dx-clock", now, 5)
    assert [row["memory_id"] for row in page["rows"]] == [record_id for record_id, _ in reference]
    assert [row["decay"] for row in page["rows"]] == pytest.approx([score for _, score in reference], rel=1e-12)
    clock = memory_page(PageRequest("dx-clock", sort="newest", limit=5), now=now)
    assert [r["memory_id"] for r in clock["rows"]] != [r["memory_id"] for r in page["rows"]]


def test_built_in_slices_reused_and_rebuilt_when_the_partition_changes(db, sent, monkeypatch):
    monkeypatch.setattr(decay_snapshot, "SLICE", 3)
    now = time.time()
    plant("dx-slices", [(1.0 + i % 4, i * 0.7, None) for i in range(10)], now)
    decay = ChatMemory._meta.fields["relevance"]
    space = space_of("dx-slices")
    sent.clear()
    first, total, built = exact_decay_page(decay, space, 0, 10, now)
    assert total == 10 and built == now and first == [r for r, _ in exact("dx-slices", now, 10)]
    calls = [c for c in sent if b"EVALSHA" in b"".join(c) or b"EVAL" in b"".join(c)]
    assert len(calls) >= 4  # ten records in slices of three
    sent.clear()
    second, _, again = exact_decay_page(decay, space, 3, 4, now + 5)
    assert again == now and second == first[3:7] and len(sent) == 1  # the counts and the page, one pipeline
    plant("dx-slices", [(9.0, 0.0, None)], now)
    _, total, rebuilt = exact_decay_page(decay, space, 0, 1, now + 6)
    assert total == 11 and rebuilt == now + 6


def test_an_order_is_kept_a_day_and_rebuilt_when_stale(db):
    now = time.time()
    plant("dx-ttl", [(1.0, 1.0, None), (2.0, 3.0, None)], now)
    decay = ChatMemory._meta.fields["relevance"]
    exact_decay_page(decay, space_of("dx-ttl"), 0, 2, now)
    client = ChatMemory._meta.client
    order = space_of("dx-ttl").key(KeyKind.DECAY_SNAPSHOT, "relevance")
    assert decay_snapshot.SNAPSHOT_TTL < client.ttl(order) <= decay_snapshot.ORDER_KEPT
    assert decay_snapshot.SNAPSHOT_TTL < client.ttl(f"{order}:at") <= decay_snapshot.ORDER_KEPT
    assert client.keys(f"{order}:*") == [f"{order}:at".encode()]  # no half-built order nor lock left behind
    _, _, built = exact_decay_page(decay, space_of("dx-ttl"), 0, 2, now + decay_snapshot.SNAPSHOT_TTL + 1)
    assert built == now + decay_snapshot.SNAPSHOT_TTL + 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.floats(0.05, 5.0), st.floats(0.0, 200.0),
                               st.one_of(st.none(), st.floats(0.0, 1.0))), min_size=1, max_size=12),
       offset=st.integers(0, 6), limit=st.integers(1, 6))
def test_every_page_is_the_exact_ranking(db, rows, offset, limit):
    agent, now = f"dx-h{next(AGENTS)}", time.time() + DAY
    plant(agent, rows, now)
    ids, total, _ = exact_decay_page(ChatMemory._meta.fields["relevance"], space_of(agent), offset, limit, now)
    reference = exact(agent, now, len(rows))
    scores = dict(reference)
    assert total == len(rows)
    assert [scores[i] for i in ids] == pytest.approx([s for _, s in reference[offset:offset + limit]], rel=1e-12)
