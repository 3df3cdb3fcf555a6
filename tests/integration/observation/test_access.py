"""AccessTrackerMixin: reads staged once per query, confirmed into a capped log, or discarded."""

from __future__ import annotations

import pytest

from conftest import all_keys
from redmem import AutoKeyField, KeyField, Model, SortedField, StringField
from redmem.observation import AccessTrackerMixin, ObservationProtocol
from redmem.observation._access import COUNT_ENTRY, LAST_ENTRY, log_key, staged_count_key, staged_key


class AccessNote(AccessTrackerMixin, Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    body = StringField()
    rank = SortedField(partition_by="agent_id")


class SmallLog(AccessTrackerMixin, Model):
    item_id = KeyField()
    access_log_size = 3


class Plain(Model):
    item_id = KeyField()


def staged(note) -> int:
    return len(note.staged_accesses)


def test_each_query_stages_one_read_per_record(any_db):
    notes = [AccessNote.create(agent_id="a", body=str(i), rank=i) for i in range(3)]
    assert [staged(n) for n in notes] == [0, 0, 0]  # saving is not reading
    AccessNote.query.filter(agent_id="a").all()
    assert [staged(n) for n in notes] == [1, 1, 1]
    AccessNote.query.filter(agent_id="a", rank__gte=2).all()
    AccessNote.query.get(agent_id="a", note_id=notes[0].note_id)
    assert [staged(n) for n in notes] == [2, 1, 2]


def test_no_track_and_missing_records_stage_nothing(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    AccessNote.query.filter(agent_id="a").no_track().all()
    AccessNote.query.no_track().get(agent_id="a", note_id=note.note_id)
    assert staged(note) == 0
    assert AccessNote.query.get(agent_id="a", note_id="absent") is None
    assert not any(":as:" in key for key in all_keys(any_db))


def test_staged_reads_expire_after_a_day(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    AccessNote.query.filter(agent_id="a").all()
    assert 86300 < any_db.ttl(staged_key(note.db_key)) <= 86400
    assert 86300 < any_db.ttl(staged_count_key(note.db_key)) <= 86400


def test_confirm_moves_staged_reads_into_the_log_and_counts_them(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    ObservationProtocol.on_read([note], now=100.0)
    ObservationProtocol.on_read([note], now=200.0)
    assert note.access_count == 0 and note.last_accessed is None
    assert note.confirm_access(now=300.0) == 2
    assert note.access_log == [200.0, 100.0]  # newest first
    assert (note.access_count, note.last_accessed, staged(note)) == (2, 300.0, 0)


def test_confirm_without_staged_reads_counts_nothing(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    assert note.confirm_access(now=50.0) == 0
    assert (note.access_count, note.access_log, note.last_accessed) == (0, [], None)
    ObservationProtocol.on_read([note], now=60.0)
    assert note.confirm_access(now=70.0) == 1
    assert note.confirm_access(now=80.0) == 0  # the read was counted once
    assert (note.access_count, note.access_log, note.last_accessed) == (1, [60.0], 70.0)


def test_every_staged_read_counts_and_the_log_keeps_the_newest(any_db):
    item = SmallLog.create(item_id="i")
    for at in range(1, 6):
        ObservationProtocol.on_read([item], now=float(at))
    assert (item.staged_accesses, item.staged_access_count) == ([3.0, 4.0, 5.0], 5)
    assert item.confirm_access(now=10.0) == 5  # every read, also those whose time was not kept
    assert item.confirm_access(now=11.0) == 0
    assert (item.access_log, item.access_count, item.staged_access_count) == ([5.0, 4.0, 3.0], 5, 0)


def test_reads_staged_before_the_staged_count_existed_still_count(any_db):
    item = SmallLog.create(item_id="i")
    any_db.rpush(staged_key(item.db_key), "1.0", "2.0")  # what staging wrote before the count
    ObservationProtocol.on_read([item], now=3.0)
    assert item.confirm_access(now=4.0) == 3 and item.access_log == [3.0, 2.0, 1.0]


def test_discarded_reads_never_count(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    ObservationProtocol.on_read([note], now=1.0)
    ObservationProtocol.on_read([note], now=2.0)
    note.discard_staged_access()
    assert note.staged_access_count == 0 and note.confirm_access(now=3.0) == 0
    assert (note.access_count, note.access_log, note.last_accessed) == (0, [], None)


def test_discard_drops_staged_reads_only(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    ObservationProtocol.on_read([note], now=1.0)
    note.confirm_access(now=2.0)
    ObservationProtocol.on_read([note])
    note.discard_staged_access()
    assert (staged(note), note.access_count, note.access_log) == (0, 1, [1.0])


def test_saving_a_stale_instance_keeps_the_access_count(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    stale = AccessNote.query.no_track().get(agent_id="a", note_id=note.note_id)
    ObservationProtocol.on_read([note])
    note.confirm_access()
    stale.body = "y"
    stale.save()
    assert note.access_count == 1
    raw = any_db.hgetall(note.db_key.redis_key)
    assert raw[b"body"] == b"y" and int(raw[COUNT_ENTRY.encode()]) == 1 and LAST_ENTRY.encode() in raw


def test_delete_removes_every_access_key(any_db):
    note = AccessNote.create(agent_id="a", body="x", rank=1)
    AccessNote.query.filter(agent_id="a").all()
    note.confirm_access()
    AccessNote.query.filter(agent_id="a").all()
    assert {staged_key(note.db_key), staged_count_key(note.db_key), log_key(note.db_key)} <= all_keys(any_db)
    note.delete()
    assert all_keys(any_db) == {AccessNote._meta.global_keyspace().key("partitions")}


def test_confirming_a_deleted_record_recreates_nothing(any_db):
    note = AccessNote.create(agent_id="a", body="x")
    ObservationProtocol.on_read([note])
    any_db.delete(note.db_key.redis_key)  # gone behind the model's back, staged read left over
    assert note.confirm_access() == 0
    assert not any_db.exists(note.db_key.redis_key, staged_key(note.db_key), staged_count_key(note.db_key),
                             log_key(note.db_key))


def test_on_read_stages_each_distinct_tracked_record_once(any_db):
    a = AccessNote.create(agent_id="a", body="x")
    b = AccessNote.create(agent_id="b", body="y")  # another partition: another slot on a cluster
    plain = Plain.create(item_id="p")
    assert ObservationProtocol.on_read([a, b, a, plain]) == 2
    assert (staged(a), staged(b)) == (1, 1)


@pytest.mark.parametrize("reader", ["all", "first", "get"])
def test_every_hydrating_read_stages(any_db, reader):
    note = AccessNote.create(agent_id="a", body="x")
    query = AccessNote.query.filter(agent_id="a")
    {"all": query.all, "first": query.first,
     "get": lambda: AccessNote.query.get(agent_id="a", note_id=note.note_id)}[reader]()
    assert staged(note) == 1
