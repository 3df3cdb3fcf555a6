"""The asyncio API (docs/asyncio.md): every scenario through the sync API and through the a-prefixed
API gives the same stored state and the same results; cancelling never leaves half a record;
concurrent coroutines write what sequential saves write.

A scenario is a coroutine taking ``call(target, name, *args)``: the sync runner calls
``target.name(*args)``, the async runner awaits ``target.aname(*args)``. Each run gets a key
prefix of its own, a frozen clock and the same seeded uuids, so both runs write the same keys
(but for the prefix) and values; every stored key's type and value is compared.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import redmem
import redmem.store.aio as aio
from models import Memory, Note, RhythmicMemory
from redmem import ConfidenceField, ContextAssembler, ObservationProtocol
from redmem.embeddings import HashingEmbeddings
from redmem.recipes.conversation import (
    ConversationMemory,
    aingest_conversation,
    conversation_assembler,
    ingest_conversation,
)
from redmem.store.aio import is_cluster

#: The instant the clock stops at (2026-01-01 00:00 UTC), as in benchmarks/locomo.py --reproducible.
FROZEN = 1_767_225_600.0
_runs = itertools.count(1)

Call = Callable[..., Awaitable[Any]]


@pytest.fixture(autouse=True)
def hashing_embeddings():
    previous = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=HashingEmbeddings(64))
    yield
    redmem.configure(embedding_provider=previous)


async def sync_call(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The sync API: ``target.name(...)`` (a property's value when ``name`` is one)."""
    value = getattr(target, name)
    return value(*args, **kwargs) if callable(value) else value


async def async_call(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The asyncio API: ``await target.aname(...)``."""
    return await getattr(target, "a" + name)(*args, **kwargs)


def run_reproducibly(monkeypatch, scenario: Callable[[Call], Awaitable[Any]], call: Call, prefix: str) -> Any:
    """``scenario(call)`` under key prefix ``prefix``, a frozen clock and uuids seeded alike every run."""
    rng = random.Random(7)
    monkeypatch.setattr(time, "time", lambda: FROZEN)
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
    redmem.configure(key_prefix=prefix)

    async def main() -> Any:
        try:
            return await scenario(call)
        finally:
            await aio.aclose_clients()

    try:
        return asyncio.run(main())
    finally:
        monkeypatch.undo()


def dump(client: Any, prefix: str) -> dict[str, Any]:
    """Every key under ``prefix`` (operation keys too) with its type and value, the prefix written ``P``.

    Stream entry ids and a vector set's ``epoch`` come from the server's clock: replaced by their rank.
    """
    state: dict[str, Any] = {}
    pattern = f"{prefix}:*"
    options: dict[str, Any] = {"target_nodes": "primaries"} if is_cluster(client) else {}
    for raw in client.scan_iter(match=pattern, **options):
        key = raw.decode()
        kind = client.type(raw).decode()
        if kind == "string":
            value: Any = client.get(raw)
        elif kind == "hash":
            value = {f: (b"E" if f == b"epoch" else v) for f, v in client.hgetall(raw).items()}
        elif kind == "zset":
            value = client.zrange(raw, 0, -1, withscores=True)
        elif kind == "set":
            value = sorted(client.smembers(raw))
        elif kind == "list":
            value = client.lrange(raw, 0, -1)
        elif kind == "stream":
            value = [fields for _, fields in client.xrange(raw)]
        else:
            value = kind
        state[normalised(key, prefix)] = (kind, normalised(value, prefix))
    return state


def normalised(value: Any, prefix: str) -> Any:
    """``value`` with every occurrence of the run's key prefix (escaped, too) written ``P``."""
    if isinstance(value, bytes):
        return value.replace(prefix.encode() + b":", b"P:").replace(prefix.encode() + b"%3A", b"P%3A")
    if isinstance(value, str):
        return value.replace(prefix + ":", "P:").replace(prefix + "%3A", "P%3A")
    if isinstance(value, dict):
        return {normalised(k, prefix): normalised(v, prefix) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalised(v, prefix) for v in value]
    return value


def outcome(value: Any, prefix: str) -> Any:
    """A scenario's result, comparable across runs: records by their values, prefix written ``P``."""
    if isinstance(value, redmem.Model):
        return (type(value).__name__, normalised(value.to_dict(), prefix))
    if hasattr(value, "records") and hasattr(value, "formatted"):  # an AssemblyResult
        return ("assembly", outcome(value.records, prefix), outcome(value.proactive, prefix),
                normalised(value.formatted, prefix), [(h.score, dict(h.signals)) for h in value.hits])
    if isinstance(value, dict):
        return {normalised(k, prefix): outcome(v, prefix) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [outcome(v, prefix) for v in value]
    if hasattr(value, "record") and hasattr(value, "signals"):  # a Hit
        return (outcome(value.record, prefix), value.score, dict(value.signals), dict(value.ranks))
    if hasattr(value, "redis_key"):  # a DbKey
        return normalised(value.redis_key, prefix)
    return normalised(value, prefix)


# -- the scenarios ------------------------------------------------------------------------------
def memory(agent: str, content: str, topic: str = "deployment", **values: Any) -> Memory:
    return Memory(agent_id=agent, topic=topic, content=content, **values)


async def save_update_delete(call: Call) -> Any:
    first = memory("a", "the deploy failed on friday", importance=2.0)
    second = memory("a", "rollback the deploy with the script")
    await call(first, "save")
    await call(second, "save")
    first.content, first.importance = "the deploy failed on monday", 3.0
    await call(first, "save")
    deleted = await call(second, "delete")
    again = await call(second, "delete")
    created = await call(Memory, "create", agent_id="b", topic="ops", content="a pager alert at night")
    return [first, deleted, again, created]


async def save_many_and_get(call: Call) -> Any:
    records = [memory("a", f"note {i} about redis streams and lua", importance=float(i)) for i in range(7)]
    records += [memory("b", f"other tenant note {i}") for i in range(3)]
    saved = await call(Memory, "save_many", records, chunk_size=2)
    query = Memory.query.filter(agent_id="a")
    got = await call(Memory.query, "get", memory_id=records[3].memory_id, agent_id="a")
    return [saved, got, await call(query, "count"), await call(query, "first"),
            await call(query.limit(3, 1), "all"), await call(query, "top_by_decay", 3), await call(query, "keys"),
            await call(Memory.query, "count")]


async def query_methods(call: Call) -> Any:
    notes = [Note(agent_id="a", content=text, salience=s) for text, s in
             [("redis lua scripts run atomically", 0.3), ("streams keep events", 0.9), ("lua and redis again", 0.1)]]
    await call(Note, "save_many", notes)
    query = Note.query.filter(agent_id="a")
    return [await call(query, "keyword_search", "redis lua"), await call(Memory.query.filter(agent_id="a"), "count"),
            await call(query, "fuse", limit=2, bm25=await call(query, "keyword_search", "streams"),
                       top=await call(query, "keyword_search", "lua"))]


async def primitive_operations(call: Call) -> Any:
    a, b, c = (memory("a", text, topic=topic) for text, topic in
               [("deploys on friday", "deploy"), ("friday incidents", "ops"), ("monday standup", "team")])
    for record in (a, b, c):
        await call(record, "save")
    graph = Memory.associations
    results = [
        await call(ConfidenceField, "update_confidence", a, "confidence", 0.9),
        await call(ConfidenceField, "get_confidence_data", a, "confidence"),
        await call(graph, "strengthen", a, b),
        await call(graph, "link", a, c, 0.3),
        await call(graph, "get_linked", a),
        await call(Memory.topics_seen, "add", ["kubernetes"], agent_id="a"),
        await call(Memory.topics_seen, "might_exist_many", ["deploy", "kubernetes", "absent"], agent_id="a"),
        await call(Memory.relevance, "touch", b),
        await call(Memory.relevance, "score_of", b),
        await call(Memory.content_bm25, "search", a.db_key.keyspace, "friday"),
        await call(a, "confirm_access"),
        await call(a, "access_count"),
        await call(graph, "unlink", a, c),
    ]
    return [r if not hasattr(r, "hits") else r.hits for r in results]


async def assemble_and_feedback(call: Call) -> Any:
    records = [RhythmicMemory(agent_id="a", topic="deploy", content=text, salience=s) for text, s in
               [("deploy the service with helm", 1.0), ("helm charts live in the ops repo", 0.2),
                ("the staging deploy needs a token", 0.6), ("lunch is at noon", 0.0)]]
    await call(RhythmicMemory, "save_many", records)
    assembler = ContextAssembler(RhythmicMemory, max_items=3)
    result = await call(assembler, "assemble", "how do I deploy with helm", agent_id="a")
    read = await call(ObservationProtocol, "on_read", result.records, now=FROZEN + 5)
    surfaced = await call(ObservationProtocol, "on_surfaced", result.records[:1], reason="test", now=FROZEN + 6)
    used = await call(result, "report", "acted", now=FROZEN + 7)
    explicit = await call(ObservationProtocol, "on_context_used", records[3:], "dismissed", now=FROZEN + 8)
    second = await call(assembler, "assemble", "staging token", agent_id="a")
    return [result, read, surfaced, used, explicit, second]


async def conversation(call: Call) -> Any:
    turns = [{"speaker": s, "text": t, "session": "s1"} for s, t in
             [("user", "I moved to Lisbon in May"), ("bot", "How do you like Lisbon?"),
              ("user", "The tram is great, the hills are steep"), ("user", "My sister visits in June")]]
    records = ingest_conversation(turns, "agent-1") if call is sync_call else await aingest_conversation(turns, "agent-1")
    assembler = conversation_assembler()
    result = await call(assembler, "assemble", "when does my sister visit", agent_id="agent-1")
    return [records, result, await call(ConversationMemory.query.filter(agent_id="agent-1"), "count")]


SCENARIOS = [save_update_delete, save_many_and_get, query_methods, primitive_operations, assemble_and_feedback,
             conversation]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_the_async_api_stores_and_returns_what_the_sync_api_does(any_db, monkeypatch, scenario):
    run = next(_runs)
    sync_prefix, async_prefix = f"dsync{run}", f"dasync{run}"
    expected = run_reproducibly(monkeypatch, scenario, sync_call, sync_prefix)
    got = run_reproducibly(monkeypatch, scenario, async_call, async_prefix)
    stored = dump(any_db, sync_prefix)
    assert stored, "the scenario stored nothing"
    assert dump(any_db, async_prefix) == stored
    assert outcome(got, async_prefix) == outcome(expected, sync_prefix)
