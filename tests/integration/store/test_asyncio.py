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
import contextvars
import dataclasses
import itertools
import json
import random
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis.asyncio as redis_asyncio

import redmem
import redmem.store._aio as aio
from conftest import configured_embeddings
from models import RhythmicMemory
from models import SeedMemory as Memory
from models import SeedNote as Note
from redmem import BM25Field, ConfidenceField, ContextAssembler, ObservationProtocol
from redmem.embeddings import HashingEmbeddings
from redmem.fields._embedding_search import matrices
from redmem.recipes.conversation import (
    ConversationMemory,
    aingest_conversation,
    conversation_assembler,
    ingest_conversation,
)
from redmem.recipes.hsca import HSCAEngine
from redmem.store._aio import AioClient, greenlet_spawn, is_cluster
from redmem.store._connection import resolved_client
from redmem.store._scripts import run_script, script

#: The instant the clock stops at (2026-01-01 00:00 UTC), as in benchmarks/locomo.py --reproducible.
FROZEN = 1_767_225_600.0
_runs = itertools.count(1)

Call = Callable[..., Awaitable[Any]]


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


async def sync_call(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The sync API: ``target.name(...)`` (a property's value when ``name`` is one)."""
    value = getattr(target, name)
    return value(*args, **kwargs) if callable(value) else value


async def async_call(target: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """The asyncio API: ``await target.aname(...)``."""
    return await getattr(target, "a" + name)(*args, **kwargs)


@contextmanager
def reproducible(prefix: str) -> Iterator[None]:
    """Inside: key prefix ``prefix``, a frozen clock and uuids drawn from a generator seeded alike every time."""
    rng = random.Random(7)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "time", lambda: FROZEN)
        patch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
        redmem.configure(key_prefix=prefix)
        yield


def run(coroutine: Awaitable[Any]) -> Any:
    """``coroutine`` run on a new event loop, whose asyncio clients are closed after it."""

    async def main() -> Any:
        try:
            return await coroutine
        finally:
            await aio.aclose_clients()

    return asyncio.run(main())


def run_reproducibly(scenario: Callable[[Call], Awaitable[Any]], call: Call, prefix: str) -> Any:
    """``scenario(call)`` under key prefix ``prefix``, reproducibly (:func:`reproducible`)."""
    with reproducible(prefix):
        return run(scenario(call))


def dump(client: Any, prefix: str, operations: bool = True) -> dict[str, Any]:
    """Every key under ``prefix`` with its type and value, the prefix written ``P``. Unless
    ``operations``, bookkeeping is left out: operation keys, the registry of partitions (a
    best-effort hint, written before the records it lists) and the model's recorded schema
    (written at its first use, before its first write).

    Stream entry ids and a vector set's ``epoch`` come from the server's clock: replaced by their rank.
    """
    state: dict[str, Any] = {}
    pattern = f"{prefix}:*"
    options: dict[str, Any] = {"target_nodes": "primaries"} if is_cluster(client) else {}
    for raw in client.scan_iter(match=pattern, **options):
        key = raw.decode()
        if not operations and (":op:" in key or key.endswith((":partitions", "}:schema"))):
            continue
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
        value = re.sub(rb'"created_at":[0-9.e+]+', b'"created_at":T', value)  # HSCA's clock: time.time bound early
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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return outcome({f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name != "created_at"}, prefix)
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


async def hsca_session(call: Call) -> Any:
    engine = HSCAEngine(agent_id="agent-1", session_id="chat")
    turns = [
        "Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
        "So how does Redis persist data to disk? Does the memory data survive a restart?",
        "Once upon a time a tortoise and a hare agreed to race. The hare ran ahead and slept under a tree.",
        "The hare woke too late, and the tortoise had won the race. The tortoise was slow, but the hare was careless.",
    ]
    chunks = [await call(engine, "ingest_turn", turn) for turn in turns]
    return [chunks, await call(engine, "get_macro_context"),
            await call(engine, "assemble", "tortoise race"), await call(engine, "domain_evolution")]


class Filed(redmem.Model):
    """Filterable fields (a value-indexed key field, a sorted field, tags) beside BM25 and vectors."""

    filed_id = redmem.AutoKeyField()
    kind = redmem.KeyField()
    agent_id = redmem.KeyField()
    content = redmem.StringField()
    importance = redmem.SortedField(partition_by="agent_id")
    tags = redmem.TagField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = redmem.EmbeddingField(source="content", partition_by="agent_id")


async def filtered_retrieval(call: Call) -> Any:
    rows = [("fact", 1.0, ["ops"], "deploy with helm"), ("plan", 2.0, ["db"], "deploy the database"),
            ("fact", 3.0, ["db", "ops"], "helm deploy of the database"), ("note", 0.5, ["ops"], "lunch with helm")]
    await call(Filed, "save_many", [Filed(kind=k, agent_id="a", importance=i, tags=t, content=c) for k, i, t, c in rows])
    where = {"kind__in": ["fact", "plan"], "importance__gte": 1.0, "tags__any": ["ops", "db"]}
    assembler = ContextAssembler(Filed, max_items=3)
    return [await call(assembler, "assemble", "deploy helm", where=where, agent_id="a"),
            await call(Filed.query.filter(agent_id="a"), "keyword_search", "deploy", 5, where={"kind": "fact"})]


SCENARIOS = [filtered_retrieval, hsca_session, save_update_delete, save_many_and_get, query_methods, primitive_operations, assemble_and_feedback,
             conversation]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_the_async_api_stores_and_returns_what_the_sync_api_does(any_db, scenario):
    number = next(_runs)
    sync_prefix, async_prefix = f"dsync{number}", f"dasync{number}"
    expected = run_reproducibly(scenario, sync_call, sync_prefix)
    got = run_reproducibly(scenario, async_call, async_prefix)
    stored = dump(any_db, sync_prefix)
    assert stored, "the scenario stored nothing"
    assert dump(any_db, async_prefix) == stored
    assert outcome(got, async_prefix) == outcome(expected, sync_prefix)


def test_the_async_api_sends_nothing_through_the_sync_client(db, sent):
    """Every Redis call of the asyncio API goes through redis.asyncio, none through the sync connection."""
    run_reproducibly(assemble_and_feedback, async_call, f"dsent{next(_runs)}")
    assert sent == []
    with reproducible(f"dsent{next(_runs)}"):
        run(assemble_and_feedback(sync_call))
    assert sent, "the sync API's requests are counted"


def test_async_variants_run_the_subclass_override_and_forward_new_arguments(db):
    class Loud(Note):
        def save(self, *, shout: bool = False) -> bool:
            self.content = self.content.upper() if shout else self.content
            return super().save()

    note = Loud(agent_id="a", content="quiet words")
    assert asyncio.run(note.asave(shout=True)) is True
    assert Loud.query.get(note_id=note.note_id, agent_id="a").content == "QUIET WORDS"


def test_the_sync_code_sees_the_callers_context_variables():
    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")

    async def main() -> str:
        tenant.set("agent-7")
        return await greenlet_spawn(tenant.get)

    assert asyncio.run(main()) == "agent-7"


def test_await_only_outside_greenlet_spawn_is_a_configuration_error():
    async def direct() -> None:
        aio.await_only(asyncio.get_running_loop().create_future())

    with pytest.raises(redmem.ConfigurationError, match="outside greenlet_spawn"):
        asyncio.run(direct())


# -- cancellation -------------------------------------------------------------------------------
async def _cancelled_instead(awaitable: Awaitable[Any]) -> Any:
    """Never runs ``awaitable`` (its command is not sent): cancelled before it."""
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()
    raise asyncio.CancelledError


async def _cancelled_after(awaitable: Awaitable[Any]) -> Any:
    """Runs ``awaitable`` (its command is applied), then cancelled before the caller sees the reply."""
    await awaitable
    raise asyncio.CancelledError


def cancelling(at: int, calls: list[int], when: str = "loop") -> Callable[[Awaitable[Any]], Any]:
    """An ``await_only`` that cancels the calling task at its ``at``-th call (counted in ``calls``).

    ``when``: ``"before"`` the awaitable starts (nothing sent), ``"after"`` it finished (applied,
    reply lost to the caller), or ``"loop"``: ``task.cancel()`` from the event loop once it has
    started, as a timeout would (a command may be sent and its reply never read).
    """
    real = aio.await_only

    def await_only(awaitable: Awaitable[Any]) -> Any:
        calls[0] += 1
        if calls[0] == at and when == "before":
            awaitable = _cancelled_instead(awaitable)
        elif calls[0] == at and when == "after":
            awaitable = _cancelled_after(awaitable)
        elif calls[0] == at:
            task = asyncio.current_task()
            assert task is not None
            asyncio.get_running_loop().call_soon(task.cancel)
        return real(awaitable)

    return await_only


def new_one() -> Memory:
    return memory("a", "deploy the service with helm", importance=2.0)


def saved_then_changed() -> Memory:
    record = new_one()
    record.save()
    record.content = "deploy the service with kustomize"
    return record


def saved() -> Memory:
    record = new_one()
    record.save()
    return record


def several() -> list[Memory]:
    return [memory("a", f"fact {i} about deploys and helm charts") for i in range(6)]


async def save_it(record: Memory) -> Any:
    return await record.asave()


async def delete_it(record: Memory) -> Any:
    return await record.adelete()


async def save_them(records: list[Memory]) -> Any:
    return await Memory.asave_many(records, chunk_size=2)


CANCELLED = {
    "asave of a new record": (new_one, save_it, lambda r: r.save()),
    "asave of a changed record": (saved_then_changed, save_it, lambda r: r.save()),
    "adelete": (saved, delete_it, lambda r: r.delete()),
    "asave_many in chunks": (several, save_them, lambda rs: Memory.save_many(rs, chunk_size=2)),
}


def allowed_states(client: Any, setup: Callable[[], Any], finish: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """The states a cancelled call may leave: before it, after it, and (a bulk save) after each chunk."""
    states = []
    with reproducible(prefix := f"dref{next(_runs)}"):
        given = setup()
    states.append(dump(client, prefix, operations=False))
    if isinstance(given, list):
        from redmem.model._bulk import _chunks

        sizes = [len(chunk) for chunk in _chunks(given, 2)]
        ends = list(itertools.accumulate(sizes))
    else:
        ends = [1]
    for end in ends:
        with reproducible(prefix := f"dref{next(_runs)}"):
            given = setup()
            finish(given[:end] if isinstance(given, list) else given)
        states.append(dump(client, prefix, operations=False))
    return states


def awaits_of(setup: Callable[[], Any], act: Callable[[Any], Awaitable[Any]]) -> int:
    """How many times one uncancelled call hands an awaitable to the event loop."""
    calls = [0]
    with reproducible(f"dcount{next(_runs)}"), pytest.MonkeyPatch.context() as patch:
        given = setup()
        patch.setattr(aio, "await_only", cancelling(0, calls))
        run(act(given))
    return calls[0]


@pytest.mark.parametrize("when", ["before", "after", "loop"])
@pytest.mark.parametrize("case", CANCELLED, ids=str)
def test_a_cancelled_write_leaves_every_record_absent_or_complete_and_a_rerun_succeeds(db, case, when):
    """The task is cancelled at its 1st, 2nd, .. K-th await (K: the awaits of a whole call), before
    the awaited command is sent, after its reply came, or from the loop while it runs.

    A cancel from the loop that lands as redis.asyncio writes a command can be lost on Python
    3.11 (``asyncio.wait_for`` returns the finished write instead of raising): that call completes.
    """
    setup, act, finish = CANCELLED[case]
    states = allowed_states(db, setup, finish)
    seen, cancels = set(), 0
    awaits = awaits_of(setup, act)
    assert awaits > 2, "the call awaits a few times"
    for at in range(1, awaits + 1):
        prefix = f"dcancel{next(_runs)}"
        with reproducible(prefix):
            given = setup()

            async def attempt(given: Any) -> bool:
                task = asyncio.create_task(act(given))
                try:
                    await task
                except asyncio.CancelledError:
                    return True
                return False

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(aio, "await_only", cancelling(at, [0], when))
                cancels += run(attempt(given))
            state = dump(db, prefix, operations=False)
            assert state in states, f"cancelled at await {at}: a state no complete call leaves"
            seen.add(states.index(state))
            run(act(given))  # the re-run
            assert dump(db, prefix, operations=False) == states[-1]
    if when != "loop":
        assert cancels == awaits
        assert (0 if when == "before" else len(states) - 1) in seen, "cancelled before the first write / after the last"


# -- concurrency --------------------------------------------------------------------------------
class Ticket(redmem.Model):
    """Indexes whose stored state does not depend on the order of writes (BM25 numbers documents
    in the order they are first indexed, so Note's postings depend on it)."""

    ticket_id = redmem.KeyField()
    agent_id = redmem.KeyField()
    content = redmem.StringField()
    importance = redmem.FloatField(default=1.0)
    tags = redmem.TagField()
    priority = redmem.SortedField()
    relevance = redmem.DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    seen = redmem.ExistenceFilter(fingerprint_fn=lambda t: t.content.split()[:2])


def tickets() -> list[Ticket]:
    return [Ticket(ticket_id=f"t{i}", agent_id=f"agent-{i % 3}", content=f"ticket {i} about lua",
                   importance=1 + i / 10, tags=[f"tag{i % 4}"], priority=i % 5) for i in range(24)]


def notes() -> list[Note]:
    return [Note(note_id=f"n{i}", agent_id=f"agent-{i % 3}", content=f"note {i} on redis lua and streams",
                 salience=i / 10) for i in range(24)]


def test_concurrent_asaves_on_one_loop_store_what_sequential_saves_do(any_db):
    with reproducible(sequential := f"dseq{next(_runs)}"):
        expected = tickets()
        for record in expected:
            record.save()
        for record in expected[::4]:
            record.content += " updated"
            record.save()

    async def concurrently(given: list[Ticket]) -> None:
        await asyncio.gather(*(record.asave() for record in given))
        for record in given[::4]:
            record.content += " updated"
        await asyncio.gather(*(record.asave() for record in given[::4]))

    with reproducible(concurrent := f"dcon{next(_runs)}"):
        given = tickets()
        run(concurrently(given))
    assert dump(any_db, concurrent, operations=False) == dump(any_db, sequential, operations=False)
    assert [r.to_dict() for r in given] == [r.to_dict() for r in expected]


def test_concurrent_asaves_of_bm25_records_search_as_sequential_saves_do(any_db):
    def searches() -> list[Any]:
        return [[(h.record.note_id, h.score) for h in Note.query.filter(agent_id=f"agent-{a}").keyword_search(words).hits]
                for a in range(3) for words in ("redis", "note 7 streams", "lua")]

    with reproducible(f"dseq{next(_runs)}"):
        for record in notes():
            record.save()
        expected = searches()

    async def concurrently() -> None:
        await asyncio.gather(*(record.asave() for record in notes()))

    with reproducible(f"dcon{next(_runs)}"):
        run(concurrently())
        assert searches() == expected
        assert sum(Note.query.filter(agent_id=f"agent-{a}").count() for a in range(3)) == 24


def test_concurrent_assembles_share_the_vector_matrix_lock_without_blocking_the_loop(db):
    for i in range(12):
        memory("a", f"deploy note {i} with helm and kubernetes").save()
    assembler = ContextAssembler(Memory, max_items=3)
    expected = [r.memory_id for r in assembler.assemble("helm deploy", agent_id="a", now=FROZEN).records]

    async def many() -> list[Any]:
        return await asyncio.gather(*(assembler.aassemble("helm deploy", agent_id="a", now=FROZEN) for _ in range(8)))

    for result in run(many()):
        assert [r.memory_id for r in result.records] == expected


def test_greenlet_spawn_returns_the_result_and_raises_the_error():
    assert asyncio.run(greenlet_spawn(lambda a, b: a + b, 2, b=3)) == 5

    def failing() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        asyncio.run(greenlet_spawn(failing))


# -- the client ---------------------------------------------------------------------------------
def test_the_asyncio_twin_keeps_the_connection_settings(db):
    twin = aio.async_twin(db)
    sync_kwargs = aio.unwrapped(db).connection_pool.connection_kwargs
    kwargs = twin.connection_pool.connection_kwargs
    for name in ("host", "port", "db", "socket_timeout", "socket_connect_timeout"):
        assert kwargs.get(name) == sync_kwargs.get(name, kwargs.get(name)), name
    assert kwargs["socket_timeout"] == redmem.store._connection.SOCKET_TIMEOUT
    assert twin.get_retry().get_retries() == redmem.store._connection.RETRIES


def own_client(db: Any) -> Any:
    """A redis.asyncio client of the test server, made by hand."""
    kwargs = aio.unwrapped(db).connection_pool.connection_kwargs
    return redis_asyncio.Redis(host=kwargs["host"], port=kwargs["port"])


def test_a_configured_async_client_is_the_one_used(db):
    async def main() -> Any:
        mine = own_client(db)
        redmem.configure(async_client=mine)
        try:
            note = await Note.acreate(agent_id="a", content="through my own client")
            used = await greenlet_spawn(lambda: Note._meta.client.wrapped)
            return mine, used, note
        finally:
            redmem.configure(async_client=None)
            await mine.aclose()

    mine, used, note = asyncio.run(main())
    assert used is mine
    assert Note.query.get(note_id=note.note_id, agent_id="a").content == "through my own client"


def test_a_model_meta_async_client_wins_for_that_model(db):
    async def main() -> Any:
        mine = own_client(db)

        class Own(redmem.Model):
            own_id = redmem.KeyField()
            text = redmem.StringField()

            class Meta:
                async_client = mine

        try:
            await Own(own_id="x", text="hello").asave()
            return mine, await greenlet_spawn(lambda: (Own._meta.client.wrapped, Note._meta.client.wrapped)), Own
        finally:
            await mine.aclose()
            await aio.aclose_clients()

    mine, (own, other), model = asyncio.run(main())
    assert own is mine and other is not mine
    assert model.query.get(own_id="x").text == "hello"


def test_a_loop_thread_drives_the_facade_from_sync_code(any_db):
    """The resolver of REDMEM_TEST_CLIENT=asyncio-bridge: plain sync code over redis.asyncio."""
    thread = aio.LoopThread()
    try:
        facade = aio.AioClient(aio.async_twin(any_db), thread.resolve)
        key = f"{redmem.store.settings().key_prefix}:{{x}}:k"
        assert facade.set(key, 1) is True
        with facade.pipeline(transaction=True) as pipe:
            pipe.watch(key)
            assert pipe.get(key) == b"1"
            pipe.multi()
            assert pipe.incr(key) is pipe
            assert pipe.execute() == [2]
        assert list(facade.scan_iter(match=key, **({"target_nodes": "primaries"} if is_cluster(any_db) else {}))) == [key.encode()]
        facade.close()
    finally:
        thread.stop()


class Logged(redmem.EventStreamMixin, redmem.Model):
    """A record whose saves append to its partition's event stream."""

    item_id = redmem.KeyField()
    agent_id = redmem.KeyField(partition_by="agent_id")
    body = redmem.StringField()


def test_a_blocking_stream_read_waits_on_the_loop_while_another_coroutine_writes(any_db):
    """``aread`` blocks on the server, not on the loop: the save awaited meanwhile is what it reads
    (a read blocking the thread would return nothing after ``block_ms``)."""
    consumer = redmem.StreamConsumer(Logged.event_stream_key(agent_id="a"), "g", "c1", block_ms=3000)

    async def main() -> list[Any]:
        await consumer.aensure_group()
        reading = asyncio.create_task(consumer.aread())
        await Logged(item_id="x", agent_id="a", body="hello").asave()
        events = await reading
        await consumer.aack(*(e.id for e in events))
        return events

    events = run(main())
    assert [(e.op, e.key) for e in events] == [("create", Logged.query.get(item_id="x", agent_id="a").db_key.redis_key)]
    assert consumer.pending_count() == 0


def test_more_concurrent_calls_than_pooled_connections_wait_for_one(db):
    """150 saves in flight on a pool of 100 connections: the others wait for a free one."""

    async def main() -> None:
        await asyncio.gather(*(Note(agent_id="a", content=f"note {i}").asave() for i in range(150)))
        await aio.aclose_clients()

    run(main())
    assert Note.query.filter(agent_id="a").count() == 150


def test_a_loop_thread_facade_called_from_its_own_loop_refuses(db):
    thread = aio.LoopThread()
    facade = aio.AioClient(aio.async_twin(db), thread.resolve)

    async def inside() -> Any:
        return facade.ping()

    try:
        with pytest.raises(redmem.ConfigurationError, match="wait on itself"):
            asyncio.run_coroutine_threadsafe(inside(), thread.loop).result()
    finally:
        facade.close()
        thread.stop()


def test_a_script_missing_from_the_server_cache_is_loaded_and_run(db):
    """EVALSHA, NOSCRIPT, SCRIPT LOAD, EVALSHA: the sync fallback, each step awaited."""
    record = Note(agent_id="a", content="hello")
    record.save()
    plan = {"sets": [], "any": [], "ranges": [], "count": False, "order": 0, "desc": False, "offset": 0, "limit": -1}
    db.script_flush()

    def query() -> Any:
        client = resolved_client(db)
        assert isinstance(client, AioClient)
        return run_script("query", [record.db_key.keyspace.key("all")], [json.dumps(plan)], client)

    reply = asyncio.run(greenlet_spawn(query))
    assert reply[:2] == [1, record.note_id.encode()]
    assert db.script_exists(script("query").sha) == [True]


def test_the_asyncio_api_shares_the_process_vector_matrix_of_its_client(db):
    """A facade's twin talks to the configured client's server: one matrix per partition, warmed
    by sync calls and kept across event loops."""
    memory("a", "deploy the service with helm").save()
    ContextAssembler(Memory, max_items=2).assemble("helm", agent_id="a")
    key = Memory.embedding.keys(Memory.query.filter(agent_id="a").partition())[0]
    sync_matrix = matrices.get(db, key)

    def seen() -> Any:
        client = Memory._meta.client
        assert isinstance(client, AioClient)
        return matrices.get(client, key)

    assert run(greenlet_spawn(seen)) is sync_matrix
    assert run(greenlet_spawn(seen)) is sync_matrix  # another loop, another facade, the same matrix
