"""EventStreamMixin and StreamConsumer: one entry per write, atomic with it; at-least-once handling.

Run as a script (``python test_events.py URL PREFIX STREAM GROUP CONSUMER HANG_ON``) this file is
a consumer process that handles entries, printing each id, and hangs without acknowledging the
entry whose ``n`` field is HANG_ON, so a test can kill it mid-work.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import redmem
from conftest import all_keys
from redmem import AutoKeyField, FloatField, KeyField, Model, StringField
from redmem.model._field import Field
from redmem.observation import EventStreamMixin, ObservationProtocol, PredictionLedgerMixin, StreamConsumer, StreamEvent
from redmem.store._aio import is_cluster

HERE = Path(__file__).parent


class EventsMemory(EventStreamMixin, Model):
    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    topic = StringField()
    content = StringField()
    weight = FloatField()


class Shared(EventStreamMixin, Model):
    item_id = KeyField()
    agent_id = KeyField(partition_by="agent_id")
    body = StringField()
    event_stream_per_model = True


class Predicting(PredictionLedgerMixin, EventStreamMixin, Model):
    item_id = KeyField()
    agent_id = KeyField(partition_by="agent_id")
    event_stream_per_model = True


class Tiny(EventStreamMixin, Model):
    item_id = KeyField()
    event_stream_maxlen = 10


class Exploding(Field):
    def on_save(self, batch, old):
        raise RuntimeError("boom after the event was queued")


class Fragile(EventStreamMixin, Model):
    item_id = KeyField()
    bomb = Exploding()


@pytest.fixture
def url(any_db, request):
    """The URL of the server (or cluster) behind ``any_db``, for child processes."""
    return request.getfixturevalue("cluster_url" if is_cluster(any_db) else "redis_url")


def ops(events) -> list[tuple[str, list[str]]]:
    return [(e.op, e.changed_fields) for e in events]


def test_create_update_delete_write_one_entry_each(any_db):
    before = time.time()
    memory = EventsMemory.create(agent_id="a", topic="deploy", content="blue/green")
    memory.content = "canary"
    memory.save()
    memory.save()
    memory.delete()
    events = EventsMemory.read_events(agent_id="a")
    assert ops(events) == [
        ("create", ["memory_id", "agent_id", "topic", "content"]),
        ("update", ["content"]),
        ("update", []),
        ("delete", ["memory_id", "agent_id", "topic", "content"]),
    ]
    key = f"{redmem.store.settings().key_prefix}:EventsMemory:{{a}}:r:{memory.memory_id}"
    assert {(e.model, e.key) for e in events} == {("EventsMemory", key)}
    assert all(before <= e.ts <= time.time() for e in events)


def test_the_event_is_part_of_the_atomic_save(any_db):
    with pytest.raises(RuntimeError, match="boom"):
        Fragile(item_id="x").save()
    assert all_keys(any_db) == set()  # neither the record nor its stream entry


def test_changing_a_key_is_a_delete_and_a_create(any_db):
    memory = EventsMemory.create(agent_id="a", memory_id="m1", topic="t")
    memory.memory_id = "m2"
    memory.save()
    events = EventsMemory.read_events(agent_id="a")
    assert [(e.op, e.key.rsplit(":", 1)[1]) for e in events] == [("create", "m1"), ("delete", "m1"), ("create", "m2")]


def test_each_partition_has_its_stream(any_db):
    EventsMemory.create(agent_id="a", topic="x")
    EventsMemory.create(agent_id="b", topic="y")
    EventsMemory.create(agent_id="b", topic="z")
    assert len(EventsMemory.read_events(agent_id="a")) == 1
    assert len(EventsMemory.read_events(agent_id="b")) == 2
    assert EventsMemory.event_stream_key(agent_id="a").endswith(":EventsMemory:{a}:ev")


def test_a_per_model_stream_receives_every_partition(any_db):
    a = Shared.create(item_id="1", agent_id="a", body="x")
    Shared.create(item_id="1", agent_id="b", body="y")
    a.delete()
    events = Shared.read_events()
    assert [(e.op, e.key.split("{")[1].split("}")[0]) for e in events] == [
        ("create", "a"), ("create", "b"), ("delete", "a")]
    assert Shared.event_stream_key() == Shared.event_stream_key(agent_id="zzz")


def test_streams_are_capped_approximately(any_db):
    item = Tiny.create(item_id="i")
    for _ in range(400):
        item.save()
    length = any_db.xlen(Tiny.event_stream_key())
    assert 10 <= length < 200  # MAXLEN ~ trims whole stream nodes (100 entries by default)


def test_custom_events_carry_data(any_db):
    memory = EventsMemory.create(agent_id="a", topic="x")
    entry = memory.emit_event("confidence_update", {"signal": 0.9, "field": "confidence"})
    queued = any_db.pipeline(transaction=False)
    assert memory.emit_event("reviewed", pipeline=queued) is None
    queued.execute()
    custom = EventsMemory.read_events(agent_id="a")[1:]
    assert [(e.id, e.op, e.data, e.changed_fields) for e in custom[:1]] == [
        (entry, "confidence_update", {"field": "confidence", "signal": 0.9}, [])]
    assert [(e.op, e.data) for e in custom[1:]] == [("reviewed", {})]
    for reserved in ("create", "update", "delete", ""):
        with pytest.raises(ValueError):
            memory.emit_event(reserved)


def entry_keys(client, stream: str) -> list[tuple[str, str, str]]:
    """(op, pk, key) of each raw entry of ``stream``, read without StreamEvent."""
    return [(raw[b"op"].decode(), raw.get(b"pk", b"").decode(), raw[b"key"].decode())
            for _, raw in client.xrange(stream)]


@pytest.mark.parametrize("model", [EventsMemory, Shared])
def test_every_entry_names_the_record_as_pk_and_key(any_db, model):
    record = model.create(item_id="i", agent_id="a") if model is Shared else model.create(agent_id="a", topic="x")
    record.save()
    record.emit_event("reviewed", {"by": "me"})
    record.delete()
    stream = model.event_stream_key() if model is Shared else model.event_stream_key(agent_id="a")
    key = record.db_key.redis_key
    assert entry_keys(any_db, stream) == [(op, key, key) for op in ("create", "update", "reviewed", "delete")]
    assert [(e.pk, e.key) for e in model.read_events(**({} if model is Shared else {"agent_id": "a"}))] == [
        (key, key)] * 4


def test_prediction_resolved_entries_carry_pk(any_db):
    record = Predicting.create(item_id="i", agent_id="a")
    record.record_prediction({"x": 1})
    ObservationProtocol.on_context_used([record], "acted")
    key = record.db_key.redis_key
    assert entry_keys(any_db, Predicting.event_stream_key())[-1] == ("prediction_resolved", key, key)


def test_a_stream_event_reads_pk_or_key_whichever_the_entry_has():
    popoto_style = StreamEvent.from_entry(b"1-0", {b"model": b"M", b"pk": b"M:1", b"op": b"create"})
    older = StreamEvent.from_entry("2-0", {"model": "M", "key": "M:2", "op": "create"})
    assert (popoto_style.pk, popoto_style.key, older.pk, older.key) == ("M:1", "M:1", "M:2", "M:2")


# -- the consumer --------------------------------------------------------------------------------
def fill(client, stream: str, n: int) -> list[str]:
    return [client.xadd(stream, {"n": str(i)}).decode() for i in range(n)]


def test_a_group_is_created_on_a_missing_stream(any_db):
    stream = EventsMemory.event_stream_key(agent_id="new")
    consumer = StreamConsumer(stream, "g", "c1", block_ms=0)
    assert consumer.read() == [] and consumer.pending_count() == 0
    assert any_db.exists(stream)
    StreamConsumer(stream, "g", "c2").ensure_group()  # a second consumer joins the same group


def test_read_then_ack(any_db):
    stream = EventsMemory.event_stream_key(agent_id="a")
    ids = fill(any_db, stream, 5)
    consumer = StreamConsumer(stream, "g", "c1", batch_size=3, block_ms=0)
    first = consumer.read()
    assert [e.id for e in first] == ids[:3] and consumer.pending_count() == 3
    assert consumer.ack(*(e.id for e in first)) == 3
    assert [e.fields["n"] for e in consumer.read()] == ["3", "4"]
    assert consumer.pending_count() == 2


def test_a_failed_handler_leaves_the_entry_for_a_later_claim(any_db):
    stream = EventsMemory.event_stream_key(agent_id="a")
    ids = fill(any_db, stream, 3)
    seen: list[str] = []

    def flaky(event):
        seen.append(event.id)
        if event.fields["n"] == "1" and seen.count(event.id) == 1:
            raise RuntimeError("transient")

    consumer = StreamConsumer(stream, "g", "c1", block_ms=0, claim_idle_ms=50)
    assert consumer.process_once(flaky) == 2
    assert consumer.pending_count() == 1
    time.sleep(0.1)
    other = StreamConsumer(stream, "g", "c2", block_ms=0, claim_idle_ms=50)
    assert other.process_once(flaky) == 1
    assert seen == [ids[0], ids[1], ids[2], ids[1]] and other.pending_count() == 0


def test_run_handles_until_stopped(any_db):
    stream = EventsMemory.event_stream_key(agent_id="a")
    ids = fill(any_db, stream, 4)
    handled: list[str] = []
    stop = threading.Event()

    def handler(event):
        handled.append(event.id)
        if len(handled) == len(ids):
            stop.set()

    consumer = StreamConsumer(stream, "g", "c1", block_ms=50)
    worker = threading.Thread(target=consumer.run, args=(handler, stop))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive() and handled == ids and consumer.pending_count() == 0


def test_entries_of_a_killed_consumer_are_delivered_again(any_db, url):
    stream = EventsMemory.event_stream_key(agent_id="a")
    ids = fill(any_db, stream, 10)
    prefix = redmem.store.settings().key_prefix
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), url, prefix, stream, "g", "doomed", "6"],
        stdout=subprocess.PIPE, text=True, cwd=HERE, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    got = []
    try:
        for line in child.stdout:
            got.append(line.split()[1])
            if got[-1] == ids[6]:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert got == ids[:7]
    survivor = StreamConsumer(stream, "g", "survivor", block_ms=0, claim_idle_ms=100)
    assert survivor.pending_count() == 4  # entry 6 (in the handler) and 7-9 (read, not reached)
    time.sleep(0.15)
    handled: list[str] = []
    survivor.process_once(lambda e: handled.append(e.id))
    assert handled == ids[6:] and survivor.pending_count() == 0


def _consume(url: str, prefix: str, stream: str, group: str, name: str, hang_on: str) -> None:
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)

    def handler(event):
        print("got", event.id, flush=True)
        if event.fields["n"] == hang_on:
            time.sleep(60)  # killed here, before the acknowledgement

    StreamConsumer(stream, group, name, batch_size=10, block_ms=100).run(handler)


if __name__ == "__main__":
    _consume(*sys.argv[1:7])
