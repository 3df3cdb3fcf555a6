"""reindex: records saved before a field existed become visible; pages, progress, repair, concurrency."""

from __future__ import annotations

import itertools
import random
import threading

import pytest

from redmem import AutoKeyField, FloatField, KeyField, Model, SortedField, StringField, ValidationError
from redmem.fields._bm25 import BM25Field
from redmem.fields._reindex import reindex
from test_bm25 import WORDS, assert_index_exact, check_search, index_state


class Before(Model):
    """The model as it was: no BM25 index, importance a plain float."""

    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    importance = FloatField()

    class Meta:
        name = "Memory"


class After(Model):
    """The same records, now with a BM25 index and a sorted importance."""

    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    importance = SortedField()
    content_bm25 = BM25Field(source="content")

    class Meta:
        name = "Memory"


class OldNote(Model):
    note_id = KeyField()
    body = StringField()

    class Meta:
        name = "Note"


class Note(Model):
    note_id = KeyField()
    body = StringField()
    body_bm25 = BM25Field(source="body")

    class Meta:
        name = "Note"


_agents = itertools.count()


def saved_before(count: int, agents: list[str], seed: int = 1) -> dict[str, dict[str, str]]:
    """``count`` records saved through ``Before``, round robin over ``agents``: texts by agent and id."""
    rng = random.Random(seed)
    texts: dict[str, dict[str, str]] = {agent: {} for agent in agents}
    for i in range(count):
        agent = agents[i % len(agents)]
        record = Before.create(agent_id=agent, content=" ".join(rng.choices(WORDS, k=rng.randint(1, 12))),
                               importance=i / count)
        texts[agent][record._saved_key.record_id] = record.content
    return texts


def fresh_agents(n: int) -> list[str]:
    return [f"tenant-{next(_agents)}" for _ in range(n)]


def test_records_saved_before_the_field_become_searchable(any_db):
    agents = fresh_agents(3)
    texts = saved_before(23, agents)
    assert After.query.filter(agent_id=agents[0]).keyword_search("redis cluster memory") == []
    calls: list[tuple[int, int]] = []
    assert reindex(After, batch_size=4, progress=lambda done, total: calls.append((done, total))) == 23
    assert calls[0] == (0, 23) and calls[-1] == (23, 23)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) == 1 + sum(-(-len(t) // 4) for t in texts.values())  # one call per page
    for agent in agents:
        search = After.query.filter(agent_id=agent)
        assert_index_exact(After.content_bm25, search.partition(), any_db, texts[agent])
        check_search(After, agent, texts[agent], "redis cluster memory", limit=5)
        # the sorted field's hook ran too: range filters see the older records
        expected = sorted(r._saved_key.record_id for r in search.all() if r.importance >= 0.5)
        assert sorted(k.record_id for k in search.filter(importance__gte=0.5).keys()) == expected


def test_reindex_is_idempotent_and_can_name_fields(any_db):
    agents = fresh_agents(2)
    saved_before(10, agents)
    assert reindex(After, field_names=["content_bm25"]) == 10
    space = After.query.filter(agent_id=agents[1]).partition()
    first = index_state(After.content_bm25, space, any_db)
    assert After.query.filter(agent_id=agents[1]).filter(importance__gte=0).count() == 0  # not reindexed
    assert reindex(After, field_names=("content_bm25",), batch_size=3) == 10
    assert index_state(After.content_bm25, space, any_db) == first


def test_unpartitioned_models(any_db):
    texts = {f"n{i}": text for i, text in enumerate(["redis streams", "lua scripts in redis", "a cluster"])}
    for key, body in texts.items():
        OldNote.create(note_id=key, body=body)
    assert Note.query.keyword_search("redis") == []
    assert reindex(Note, batch_size=2) == 3
    check_search(Note, None, texts, "redis cluster")


def test_reindex_repairs_text_changed_by_code_without_the_field(any_db):
    agent = fresh_agents(1)[0]
    records = [After.create(agent_id=agent, content=text, importance=0.5)
               for text in ["redis cluster", "python memory", "vector search"]]
    stale = Before.query.get(agent_id=agent, memory_id=records[0].memory_id)
    stale.content = "lua script"  # the index still holds "redis cluster" for this record
    stale.save()
    texts = {r._saved_key.record_id: r.content for r in After.query.filter(agent_id=agent).all()}
    search = After.query.filter(agent_id=agent)
    assert [r.content for r in search.keyword_search("redis")] == ["lua script"]
    again = search.get(agent_id=agent, memory_id=records[0].memory_id)
    again.save()  # the stored text cannot name the indexed terms: the entry stays as it was
    assert search.keyword_search("lua") == []
    reindex(After, batch_size=2)
    assert_index_exact(After.content_bm25, search.partition(), any_db, texts)
    assert [r.content for r in search.keyword_search("lua")] == ["lua script"]
    assert search.keyword_search("redis") == []


def note_models(name: str) -> tuple[type, type]:
    """A partitioned model keyed by hand, without and with a BM25 index, under the key name ``name``."""
    meta = type("Meta", (), {"name": name})
    plain = type(f"{name}Plain", (Model,), {"__module__": __name__, "Meta": meta, "note_id": KeyField(),
                                             "agent_id": KeyField(partition_by="agent_id"), "body": StringField()})
    indexed = type(name, (Model,), {"__module__": __name__, "Meta": meta, "note_id": KeyField(),
                                    "agent_id": KeyField(partition_by="agent_id"), "body": StringField(),
                                    "body_bm25": BM25Field(source="body")})
    return plain, indexed


def test_a_page_is_indexed_as_one_record_at_a_time(any_db):
    """Pages of 1 and of 100 records give the same index, for new entries and for stale ones
    (text changed without the index: each page's one script call removes and re-adds them)."""
    rng = random.Random(12)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(0, 4 if i < 30 else 20))) for i in range(80)]
    states = []
    for name, batch_size in (("PageOne", 1), ("PageHundred", 100)):
        plain, indexed = note_models(name)
        for i, text in enumerate(texts):
            plain.create(note_id=f"n{i:02d}", agent_id="a", body=text)
        reindex(indexed, batch_size=batch_size)
        first = index_state(indexed.body_bm25, indexed.query.filter(agent_id="a").partition(), any_db)
        for i in range(0, 80, 3):
            plain(note_id=f"n{i:02d}", agent_id="a", body=texts[79 - i]).save()
        reindex(indexed, batch_size=batch_size)
        space = indexed.query.filter(agent_id="a").partition()
        states.append((first, index_state(indexed.body_bm25, space, any_db)))
        bodies = {r.note_id: r.body for r in indexed.query.filter(agent_id="a").all()}
        assert_index_exact(indexed.body_bm25, space, any_db, bodies)
    assert states[0] == states[1]


def test_reindex_beside_concurrent_writers(db):
    agents = fresh_agents(2)
    saved_before(60, agents, seed=4)
    stop = threading.Event()

    def write() -> None:
        rng = random.Random(9)
        while not stop.is_set():
            agent = rng.choice(agents)
            records = After.query.filter(agent_id=agent).all()
            record = rng.choice(records)
            if rng.random() < 0.2:
                record.delete()
            else:
                record.content = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
                record.save()
            After.create(agent_id=agent, content=rng.choice(WORDS), importance=0.1)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        reindex(After, batch_size=3)
    finally:
        stop.set()
        writer.join()
    for agent in agents:
        search = After.query.filter(agent_id=agent)
        texts = {r._saved_key.record_id: r.content for r in search.all()}
        assert_index_exact(After.content_bm25, search.partition(), db, texts)


def test_bad_arguments(db):
    with pytest.raises(ValidationError, match="no field"):
        reindex(After, field_names=["nope"])
    for size in (0, -1, 2.5, True):
        with pytest.raises(ValidationError, match="batch_size"):
            reindex(After, batch_size=size)
