"""Atomic saves: stale index entries go away, deletes leave nothing, crashes leave no half-records."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import redmem
from conftest import all_keys
from consistency import assert_consistent
from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    DecayingSortedField,
    FloatField,
    KeyField,
    Model,
    SortedField,
    StringField,
    TagField,
)
from redmem.model._field import Field
from workload import WorkloadNote as Note
from workload import random_write

HERE = Path(__file__).parent


def test_updates_replace_index_entries(any_db):
    note = Note.create(agent_id="a", note_id="1", kind="x", score=1.0, tags=["t1", "t2"])
    note.score, note.tags = 9.0, ["t2", "t3"]
    note.save()
    assert Note.query.filter(agent_id="a", tags="t1").count() == 0
    assert Note.query.filter(agent_id="a", tags="t3").count() == 1
    assert Note.query.filter(agent_id="a", score__lt=5).count() == 0
    note.score = None
    note.save()
    assert Note.query.filter(agent_id="a", score__gte=-100).count() == 0
    assert assert_consistent(Note, any_db, all_keys(any_db)) == 1


def test_saving_a_fresh_instance_over_a_stored_record_replaces_its_indexes(any_db):
    Note.create(agent_id="a", note_id="1", kind="x", tags=["t1"], score=2)
    Note(agent_id="a", note_id="1", kind="x", tags=["t4"], score=3).save()  # not loaded first
    assert Note.query.filter(agent_id="a", tags="t1").count() == 0
    assert assert_consistent(Note, any_db, all_keys(any_db)) == 1


def test_delete_removes_the_record_and_every_index_entry(any_db):
    notes = [Note.create(agent_id="a", note_id=str(i), kind="x", score=i, tags=["t1"]) for i in range(3)]
    for note in notes:
        assert note.delete() is True
    assert notes[0].delete() is False
    registry = Note._meta.global_keyspace().key("partitions")
    assert all_keys(any_db) == {registry}


def test_changing_a_key_moves_the_record_within_its_partition(any_db):
    note = Note.create(agent_id="a", note_id="1", kind="x", tags=["t1"], score=1)
    note.note_id = "2"
    note.save()
    assert Note.query.get(agent_id="a", note_id="1", kind="x") is None
    assert Note.query.get(agent_id="a", note_id="2", kind="x").tags == ["t1"]
    assert assert_consistent(Note, any_db, all_keys(any_db)) == 1
    note.agent_id = "b"
    with pytest.raises(redmem.ValidationError, match="cannot change partition"):
        note.save()


class Exploding(Field):
    """A field whose save hook fails after the record and other indexes were queued."""

    def on_save(self, batch, old):
        raise RuntimeError("boom between building and executing the batch")


def test_a_save_interrupted_before_exec_writes_nothing(any_db):
    class PersistenceFragile(Model):
        item_id = AutoKeyField()
        owner = KeyField()
        rank = SortedField(partition_by="owner")
        tags = TagField()
        body = StringField()
        bomb = Exploding()

    with pytest.raises(RuntimeError, match="boom"):
        PersistenceFragile(owner="o", rank=1, tags=["a"], body="x").save()
    written = {k for k in all_keys(any_db) if ":PersistenceFragile:" in k and not k.endswith(":partitions")}
    assert written == set()


def test_killed_writer_leaves_records_and_indexes_consistent(redis_url, db):
    prefix = redmem.store.settings().key_prefix
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "workload.py"), redis_url, prefix, "7", "100000"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(HERE)},
    )
    for _ in range(300):  # let it get well into its work
        proc.stdout.readline()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(0.2)
    assert assert_consistent(Note, db, all_keys(db)) > 0


def test_concurrent_writers_keep_indexes_consistent(redis_url, db):
    prefix = redmem.store.settings().key_prefix
    procs = [
        subprocess.Popen([sys.executable, str(HERE / "workload.py"), redis_url, prefix, str(seed), "300"],
                         stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(HERE)})
        for seed in range(4)
    ]
    rng = random.Random(99)
    for _ in range(300):
        random_write(rng)
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert assert_consistent(Note, db, all_keys(db)) > 0


def test_composite_key_value_indexes_follow_deletes(any_db):
    for i in range(3):
        Note.create(agent_id="a", note_id=str(i), kind="y")
    Note.query.get(agent_id="a", note_id="1", kind="y").delete()
    assert sorted(n.note_id for n in Note.query.filter(agent_id="a", kind="y")) == ["0", "2"]
    assert assert_consistent(Note, any_db, all_keys(any_db)) == 2


def test_save_many_writes_new_records_in_atomic_chunks(any_db):
    class PersistenceFact(Model):
        fact_id = AutoKeyField()
        agent_id = KeyField()
        text = StringField()
        rank = SortedField(partition_by="agent_id")
        tags = TagField()

    facts = [PersistenceFact(agent_id=f"a{i % 3}", text=f"fact {i}", rank=i, tags=[f"t{i % 2}"]) for i in range(50)]
    existing = PersistenceFact.create(agent_id="a0", text="old", rank=-1)
    existing.text = "updated"
    assert PersistenceFact.save_many(facts + [existing], chunk_size=7) == 51
    assert PersistenceFact.query.count() == 51
    assert PersistenceFact.query.filter(agent_id="a1", rank__gte=40).count() == 4  # 40, 43, 46, 49
    assert PersistenceFact.query.get(agent_id="a0", fact_id=existing.fact_id).text == "updated"
    assert all(f.db_key.redis_key for f in facts)
    assert assert_consistent(PersistenceFact, any_db, all_keys(any_db)) == 51
    with pytest.raises(redmem.ValidationError, match="save_many of PersistenceFact got a WorkloadNote"):
        PersistenceFact.save_many([Note(agent_id="a", note_id="1", kind="x")])
    for size in (0, -3, 2.5, True):
        with pytest.raises(redmem.ValidationError, match="chunk_size"):
            PersistenceFact.save_many(facts, chunk_size=size)


def test_save_many_runs_a_mixins_per_record_writes(any_db):
    """A model extending queue_save keeps its own writes for every record of a bulk save."""

    class Marked:
        def queue_save(self, batch):
            super().queue_save(batch)
            batch.pipe.sadd(batch.keyspace.key("marked"), batch.record_id)

    class PersistenceFact(Marked, Model):
        fact_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")
        rank = SortedField()

    facts = [PersistenceFact(agent_id="a", rank=i) for i in range(12)]
    PersistenceFact.save_many(facts, chunk_size=5)
    space = PersistenceFact.query.filter(agent_id="a").partition()
    assert {m.decode() for m in any_db.smembers(space.key("marked"))} == {f.fact_id for f in facts}
    assert PersistenceFact.query.filter(agent_id="a", rank__gte=6).count() == 6


def test_save_many_sends_no_chunk_after_one_that_failed(db):
    class PersistenceFact(Model):
        fact_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")
        rank = SortedField()

    space = PersistenceFact.query.filter(agent_id="b").partition()
    db.set(space.key("all"), "not a sorted set")  # every chunk of partition b fails in its EXEC
    facts = [PersistenceFact(agent_id="a", rank=i) for i in range(20)] + [PersistenceFact(agent_id="b", rank=i) for i in range(20)]
    with pytest.raises(redmem.ServerError, match="WRONGTYPE"):
        PersistenceFact.save_many(facts, chunk_size=8)  # chunks of 1, 1, 2, 3, 5, 1, 3, 2, 1, 1 per partition
    assert PersistenceFact.query.filter(agent_id="a").count() == 20
    stored = [f.fact_id is not None and db.exists(f.db_key.redis_key) == 1 for f in facts[20:]]
    assert stored == [True] + [False] * 19  # a failed EXEC still ran its other commands; no later chunk ran


def memory_model(name: str) -> type:
    """The benchmarks' memory model (every index a save writes) plus a sorted and a tag field."""
    fields = {
        "memory_id": AutoKeyField(), "agent_id": KeyField(), "content": StringField(),
        "importance": FloatField(default=1.0), "rank": SortedField(), "tags": TagField(),
        "relevance": DecayingSortedField(base_score_field="importance", partition_by="agent_id"),
        "confidence": ConfidenceField(), "content_bm25": BM25Field(source="content"),
        "associations": CoOccurrenceField(),
    }
    return type(name, (AccessTrackerMixin, Model), {"__module__": __name__, "Meta": type("Meta", (), {"name": name}),
                                                    **fields})


def stored_state(client, model: type, ids: list[str]) -> dict:
    """Every key of ``model`` and its content, with the model name left out, each record id replaced
    by its position in ``ids`` and the decay clocks (save times) and the BM25 change log's epoch and
    server run id left out."""
    prefix = f"{redmem.store.settings().key_prefix}:{model._meta.name}:"
    position = {record_id: f"<{i}>" for i, record_id in enumerate(ids)}

    def plain(raw) -> str:
        text = raw.decode() if isinstance(raw, bytes) else repr(raw)
        return re.sub("[0-9a-f]{32}", lambda m: position[m.group()], text)

    state = {}
    for key in all_keys(client):
        if not key.startswith(prefix):
            continue
        kind = client.type(key).decode()
        if kind == "hash":
            stamps = {b"epoch", b"run"} if ":b:" in key and key.endswith(":v") else set()
            content = {plain(k): plain(v) for k, v in client.hgetall(key).items() if k not in stamps}
        elif kind == "zset":
            clock = key.endswith(":d:relevance:t")
            content = {plain(m): None if clock else s for m, s in client.zrange(key, 0, -1, withscores=True)}
        else:
            assert kind == "set", key
            content = {plain(m) for m in client.smembers(key)}
        state[plain(key[len(prefix):])] = content
    return state


def test_save_many_stores_what_saving_one_by_one_stores(any_db):
    """Two partitions, updated and new records, chunks of 7: every key and value as one save() per record."""
    rng = random.Random(3)
    words = ["redis", "cluster", "memory", "agent", "vector", "deploy", "lua", "script", "python", "index"]

    def records(model: type) -> list:
        made = [model.create(agent_id=f"a{i % 2}", content=" ".join(rng.choices(words, k=8)), rank=i)
                for i in range(6)]
        for record in made[:4]:  # updated: the indexes must drop the old text's entries
            record.content, record.importance, record.tags = " ".join(rng.choices(words, k=5)), 2.0, ["x"]
        fresh = [model(agent_id=f"a{i % 2}", content=" ".join(rng.choices(words, k=rng.randint(0, 30))),
                       importance=i % 3, rank=i, tags=[f"t{i % 4}"]) for i in range(40)]
        return made + fresh

    one, many = memory_model("OneByOne"), memory_model("SaveMany")
    rng.seed(3)
    singles = records(one)
    for record in singles:
        record.save()
    rng.seed(3)
    bulk = records(many)
    assert many.save_many(bulk, chunk_size=7) == 46
    expected = stored_state(any_db, one, [r.memory_id for r in singles])
    assert stored_state(any_db, many, [r.memory_id for r in bulk]) == expected


@pytest.mark.parametrize("bad", [float("nan"), "heavy"])
def test_save_many_stores_nothing_when_a_later_record_is_invalid(any_db, bad):
    class PersistenceFact(Model):
        fact_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")
        weight = SortedField(float)

    facts = [PersistenceFact(agent_id=f"a{i % 3}", weight=i) for i in range(100)]
    facts[50].weight = bad  # chunk_size 16: the chunks before it would be written first
    with pytest.raises(redmem.ValidationError, match="weight"):
        PersistenceFact.save_many(facts, chunk_size=16)
    assert all_keys(any_db) <= {PersistenceFact._meta.global_keyspace().key("partitions")}
    assert PersistenceFact.query.count() == 0
    facts[50].weight = 50.0
    assert PersistenceFact.save_many(facts, chunk_size=16) == 100
    assert PersistenceFact.query.count() == 100


def test_bulk_chunks_grow_by_half_from_a_sixteenth_at_both_ends():
    from redmem.model._bulk import _chunks

    assert [len(c) for c in _chunks(list(range(3000)), 1000)] == [62, 93, 140, 210, 316, 474, 410,
                                                                   474, 316, 210, 140, 93, 62]
    middle = [len(c) for c in _chunks(list(range(10_000)), 1000)][7:-7]
    assert middle and set(middle) <= {1000} | {min(middle)}
    assert [len(c) for c in _chunks(list(range(5)), 1)] == [1] * 5
    assert _chunks([], 10) == []
    records = list(range(1234))
    assert [x for chunk in _chunks(records, 100) for x in chunk] == records


def test_cyclic_gc_paused_restores_the_collector_as_it_found_it():
    import gc

    from redmem.model._bulk import cyclic_gc_paused

    assert gc.isenabled()
    with cyclic_gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), cyclic_gc_paused():
        raise KeyError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with cyclic_gc_paused():
            pass
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


def test_save_many_builds_its_chunks_with_the_cyclic_collector_paused(db):
    import gc

    seen = []

    class Watching:
        @classmethod
        def queue_save_many(cls, batches):
            seen.append(gc.isenabled())
            super().queue_save_many(batches)

    class PersistenceFact(Watching, Model):
        fact_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")
        rank = SortedField()

    PersistenceFact.save_many([PersistenceFact(agent_id="a", rank=i) for i in range(30)], chunk_size=8)
    assert seen and not any(seen) and gc.isenabled()
    assert PersistenceFact.query.filter(agent_id="a").count() == 30
