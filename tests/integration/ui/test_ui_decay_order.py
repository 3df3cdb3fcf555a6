"""The inspector's decay page above EXACT_DECAY_LIMIT memories never waits for the exact order to be
built (redmem.ui._decay_order): no saved order gives the approximate order (newest touch first)
with a note, a stale one is served with its time while one rebuild per agent runs in the background."""

from __future__ import annotations

import threading
import time

import pytest

from conftest import configured_embeddings
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.fields import _decay_snapshot as decay_snapshot
from redmem.store._keys import KeyKind
from redmem.ui import _decay_order as decay_order
from redmem.ui._decay_order import APPROXIMATE, wait_for_builds
from redmem.ui._inventory import PageRequest, memory_page, space_of

DAY = 86400.0


@pytest.fixture
def large(db, monkeypatch):
    """Every partition counts as large; the test waits for the builds it started before its data goes."""
    monkeypatch.setattr("redmem.ui._inventory.EXACT_DECAY_LIMIT", 1)
    yield
    wait_for_builds()


def plant(agent: str, rows: list[tuple[float, float]], now: float) -> list[ChatMemory]:
    """Memories of ``agent``: (importance, days since last touched)."""
    with configured_embeddings(HashingEmbeddings(32)):
        memories = [ChatMemory(agent_id=agent, content=f"memory {i}", importance=importance)
                    for i, (importance, _) in enumerate(rows)]
        ChatMemory.save_many(memories)
    for memory, (_, age) in zip(memories, rows):
        ChatMemory._meta.fields["relevance"].touch(memory, now=now - age * DAY)
    return memories


def ids(page: dict) -> list[str]:
    return [row["memory_id"] for row in page["rows"]]


def exact(agent: str, now: float, n: int) -> list[str]:
    return [record_id for record_id, _ in ChatMemory._meta.fields["relevance"].ranked(space_of(agent), now, n)]


def test_the_first_page_is_the_approximate_order_with_a_note_then_the_exact_one(large):
    now = time.time() + DAY
    # the important memory touched long ago is first by decay, last by the newest touch
    plant("do-first", [(9.0, 30.0), (0.3, 1.0), (0.2, 0.5), (1.0, 2.0)], now)
    first = memory_page(PageRequest("do-first", sort="decay", limit=4), now=now)
    newest = memory_page(PageRequest("do-first", sort="newest", limit=4), now=now)
    assert first["order"] == APPROXIMATE and ids(first) == ids(newest) and first["total"] == 4
    wait_for_builds()
    built = memory_page(PageRequest("do-first", sort="decay", limit=4), now=now + 1)
    assert built["order"].startswith("decay (exact at ") and "being built" not in built["order"]
    assert ids(built) == exact("do-first", now, 4) != ids(first)


def test_a_stale_order_is_served_with_its_time_while_a_newer_one_is_built(large):
    now = time.time()
    memories = plant("do-stale", [(1.0, 1.0), (2.0, 3.0), (1.5, 2.0)], now)
    memory_page(PageRequest("do-stale", sort="decay"), now=now)
    wait_for_builds()
    before = memory_page(PageRequest("do-stale", sort="decay"), now=now + 1)
    later = now + decay_snapshot.SNAPSHOT_TTL + 10
    ChatMemory._meta.fields["relevance"].touch(memories[-1], now=later)  # the last one now comes first
    assert exact("do-stale", later, 3)[0] == memories[-1].db_key.record_id != ids(before)[0]
    stale = memory_page(PageRequest("do-stale", sort="decay"), now=later)
    assert ids(stale) == ids(before) and stale["order"].endswith("; a newer order is being built)")
    assert stale["order"].startswith(before["order"][:-1])  # the old order's time, stated
    wait_for_builds()
    fresh = memory_page(PageRequest("do-stale", sort="decay"), now=later + 1)
    assert ids(fresh) == exact("do-stale", later, 3) and fresh["order"] != before["order"]


def test_a_changed_count_serves_the_saved_order_and_rebuilds(large):
    now = time.time()
    plant("do-count", [(1.0, 1.0), (2.0, 3.0)], now)
    memory_page(PageRequest("do-count", sort="decay"), now=now)
    wait_for_builds()
    plant("do-count", [(5.0, 0.0)], now)
    served = memory_page(PageRequest("do-count", sort="decay"), now=now + 1)
    assert served["total"] == 3 and len(served["rows"]) == 2 and "being built" in served["order"]
    wait_for_builds()
    assert len(memory_page(PageRequest("do-count", sort="decay"), now=now + 2)["rows"]) == 3


def test_one_build_at_a_time_per_agent_in_this_process(large, monkeypatch):
    now = time.time()
    plant("do-once", [(1.0, 1.0), (2.0, 3.0)], now)
    gate, calls, real = threading.Event(), [], decay_order.build_order

    def held(*args, **kwargs):
        calls.append(args)
        gate.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(decay_order, "build_order", held)
    for step in range(4):
        page = memory_page(PageRequest("do-once", sort="decay"), now=now + step)
        assert page["order"] == APPROXIMATE
    gate.set()
    wait_for_builds()
    assert len(calls) == 1
    assert memory_page(PageRequest("do-once", sort="decay"), now=now + 5)["order"].startswith("decay (exact at ")


def test_a_build_held_by_another_process_is_not_repeated(large):
    now = time.time()
    plant("do-lock", [(1.0, 1.0), (2.0, 3.0)], now)
    client = ChatMemory._meta.client
    order = space_of("do-lock").key(KeyKind.DECAY_SNAPSHOT, "relevance")
    other = client.lock(f"{order}:building", timeout=30)
    assert other.acquire(blocking=False)
    try:
        assert memory_page(PageRequest("do-lock", sort="decay"), now=now)["order"] == APPROXIMATE
        wait_for_builds()
        assert not client.exists(order)  # the other process's build is the one that runs
    finally:
        other.release()
    memory_page(PageRequest("do-lock", sort="decay"), now=now + 1)
    wait_for_builds()
    assert client.zcard(order) == 2
