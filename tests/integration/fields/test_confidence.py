"""ConfidenceField: hand-computed updates, the evidence cap, bad signals, the index, concurrency."""

from __future__ import annotations

import math
import multiprocessing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys
from redmem import AutoKeyField, KeyField, Model, RecordNotFound, StringField, ValidationError
from redmem.fields import ConfidenceField
from redmem.fields._confidence import updated_confidence, validate_signal
from redmem.model._persistence import queue_new_record
from redmem.store._aio import is_cluster


class ConfidenceBelief(Model):
    belief_id = AutoKeyField()
    agent_id = KeyField()
    text = StringField()
    confidence = ConfidenceField(partition_by="agent_id")


class Capped(Model):
    name = KeyField()
    confidence = ConfidenceField(initial_confidence=0.5, evidence_cap=2)


class Named(Model):
    """Its confidence comes from the model's partition; its key can change (a move)."""

    agent_id = KeyField()
    name = KeyField()
    trust = ConfidenceField(initial_confidence=0.2)
    note = StringField(partition_by="agent_id")


def index(client, model, field, **partition):
    space = model._meta.keyspace(tuple(partition.values()))
    key = model._meta.fields[field].index_key(space)
    return {m.decode(): s for m, s in client.zrange(key, 0, -1, withscores=True)}


# -- the formula ------------------------------------------------------------------------------
@pytest.mark.parametrize("signal, expected", [(0.9, 0.7), (0.5, 0.5), (0.3, 0.4), (1.0, 0.75), (0.0, 0.25)])
def test_first_update_is_the_mean_of_prior_and_signal(signal, expected):
    assert updated_confidence(0.5, 0, signal, 20) == pytest.approx(expected, abs=1e-15)


def test_evidence_cap_turns_the_mean_into_a_moving_average():
    # cap 2, signals 1, 1, 1: n = 1, 2, 2 -> 0.75, 0.75 + 0.25/3 = 5/6, 5/6 + (1/6)/3 = 8/9
    c, seen = 0.5, []
    for count in range(3):
        c = updated_confidence(c, count, 1.0, 2)
        seen.append(c)
    assert seen == pytest.approx([0.75, 5 / 6, 8 / 9], abs=1e-15)
    # uncapped, the third update weighs 1/4 instead of 1/3: 5/6 + (1/6)/4 = 7/8
    assert updated_confidence(5 / 6, 2, 1.0, 20) == pytest.approx(7 / 8, abs=1e-15)


@pytest.mark.parametrize("bad", [None, True, False, "0.5", [0.5], math.nan, math.inf, -0.01, 1.01])
def test_bad_signals_are_rejected(bad):
    with pytest.raises(ValidationError) as raised:
        validate_signal(bad)
    assert isinstance(raised.value, ValueError)


def test_field_options_are_checked():
    with pytest.raises(redmem.ModelException):
        ConfidenceField(initial_confidence=1.5)
    with pytest.raises(redmem.ModelException):
        ConfidenceField(evidence_cap=0)


# -- against Redis ----------------------------------------------------------------------------
def test_hand_computed_updates_on_three_records(any_db):
    beliefs = [ConfidenceBelief.create(agent_id="a", text=t) for t in ("x", "y", "z")]
    for belief, signal in zip(beliefs, (0.9, 0.5, 0.3)):
        ConfidenceField.update_confidence(belief, "confidence", signal)
    got = [ConfidenceField.get_confidence(b, "confidence") for b in beliefs]
    assert got == pytest.approx([0.7, 0.5, 0.4], abs=1e-15)
    assert [ConfidenceField.get_confidence_data(b, "confidence") for b in beliefs[1:]] == [
        {"confidence": 0.5, "evidence_count": 1, "corroborations": 1, "contradictions": 0},
        {"confidence": 0.4, "evidence_count": 1, "corroborations": 0, "contradictions": 1},
    ]
    stored = index(any_db, ConfidenceBelief, "confidence", agent_id="a")
    assert stored == {b.db_key.record_id: pytest.approx(c, abs=1e-15) for b, c in zip(beliefs, got)}


def test_evidence_cap_in_redis_and_count_keeps_counting(any_db):
    record = Capped.create(name="n")
    seen = [ConfidenceField.update_confidence(record, "confidence", 1.0) for _ in range(3)]
    assert seen == pytest.approx([0.75, 5 / 6, 8 / 9], abs=1e-15)
    for _ in range(7):
        ConfidenceField.update_confidence(record, "confidence", 0.0)
    data = ConfidenceField.get_confidence_data(record, "confidence")
    assert data["evidence_count"] == 10
    assert (data["corroborations"], data["contradictions"]) == (3, 7)
    assert data["confidence"] == pytest.approx((8 / 9) * (2 / 3) ** 7, abs=1e-12)


def test_new_records_are_indexed_at_the_initial_confidence_and_deletes_clean_up(any_db):
    kept = ConfidenceBelief.create(agent_id="a", text="kept")
    gone = ConfidenceBelief.create(agent_id="a", text="gone")
    other = ConfidenceBelief.create(agent_id="b", text="other tenant")
    assert index(any_db, ConfidenceBelief, "confidence", agent_id="a") == {
        kept.db_key.record_id: 0.5, gone.db_key.record_id: 0.5,
    }
    assert index(any_db, ConfidenceBelief, "confidence", agent_id="b") == {other.db_key.record_id: 0.5}
    assert not any(name.startswith(b"confidence") for name in any_db.hkeys(kept.db_key.redis_key))  # no evidence
    assert ConfidenceField.get_confidence_data(kept, "confidence") == {
        "confidence": 0.5, "evidence_count": 0, "corroborations": 0, "contradictions": 0,
    }
    ConfidenceField.update_confidence(gone, "confidence", 1.0)
    gone.delete()
    assert index(any_db, ConfidenceBelief, "confidence", agent_id="a") == {kept.db_key.record_id: 0.5}
    before = all_keys(any_db)
    with pytest.raises(RecordNotFound, match="not stored"):
        ConfidenceField.update_confidence(gone, "confidence", 0.9)
    with pytest.raises(RecordNotFound, match="not stored"):
        ConfidenceField.get_confidence(gone, "confidence")
    assert all_keys(any_db) == before
    assert any_db.exists(gone.db_key.redis_key) == 0


def test_a_bad_signal_writes_nothing(any_db):
    belief = ConfidenceBelief.create(agent_id="a", text="t")
    before = any_db.hgetall(belief.db_key.redis_key)
    for bad in (None, True, "0.9", math.nan, 2.0):
        with pytest.raises(ValidationError):
            ConfidenceField.update_confidence(belief, "confidence", bad)
    with pytest.raises(ValidationError, match="not a ConfidenceField"):
        ConfidenceField.update_confidence(belief, "text", 0.5)
    assert any_db.hgetall(belief.db_key.redis_key) == before
    assert ConfidenceField.get_confidence_data(belief, "confidence")["evidence_count"] == 0


def test_resaving_a_stale_instance_keeps_the_evidence(any_db):
    belief = ConfidenceBelief.create(agent_id="a", text="v1")
    stale = ConfidenceBelief.query.get(belief_id=belief.belief_id, agent_id="a")
    ConfidenceField.update_confidence(belief, "confidence", 0.9)
    stale.text = "v2"
    stale.save()
    assert ConfidenceField.get_confidence_data(stale, "confidence") == {
        "confidence": 0.7, "evidence_count": 1, "corroborations": 1, "contradictions": 0,
    }
    assert index(any_db, ConfidenceBelief, "confidence", agent_id="a") == {belief.db_key.record_id: 0.7}


def test_a_key_change_carries_the_evidence_to_the_new_key(any_db):
    record = Named.create(agent_id="a", name="old")
    assert ConfidenceField.update_confidence(record, "trust", 1.0) == pytest.approx(0.6)
    record.name = "new"
    record.save()
    assert ConfidenceField.get_confidence_data(record, "trust") == {
        "confidence": pytest.approx(0.6), "evidence_count": 1, "corroborations": 1, "contradictions": 0,
    }
    assert index(any_db, Named, "trust", agent_id="a") == {"new": pytest.approx(0.6)}
    record.name = "newer"  # the new key already holds a record: its own evidence stays
    existing = Named.create(agent_id="a", name="newer")
    assert not any(name.startswith(b"trust") for name in any_db.hkeys(existing.db_key.redis_key))
    ConfidenceField.update_confidence(existing, "trust", 0.0)
    record.save()
    assert ConfidenceField.get_confidence_data(record, "trust")["contradictions"] == 1
    assert index(any_db, Named, "trust", agent_id="a") == {"newer": pytest.approx(0.1)}


def test_a_record_written_over_by_a_queued_create_keeps_index_and_hash_agreeing(any_db):
    first = Named.create(agent_id="a", name="same")
    ConfidenceField.update_confidence(first, "trust", 1.0)
    with any_db.pipeline(transaction=True) as pipe:
        queue_new_record(pipe, any_db, Named(agent_id="a", name="same", note="again"))
        pipe.execute()
    assert ConfidenceField.get_confidence(first, "trust") == pytest.approx(0.6)
    assert index(any_db, Named, "trust", agent_id="a") == {"same": pytest.approx(0.6)}


def test_records_saved_before_the_field_existed_start_at_the_initial_confidence(any_db):
    class Old(Model):
        key = KeyField()
        text = StringField()

        class Meta:
            name = "Evolving"

    class New(Model):
        key = KeyField()
        text = StringField()
        confidence = ConfidenceField(initial_confidence=0.3)

        class Meta:
            name = "Evolving"

    Old.create(key="k", text="t")
    record = New.query.get(key="k")
    assert ConfidenceField.get_confidence_data(record, "confidence")["confidence"] == 0.3
    assert index(any_db, New, "confidence") == {}
    record.save()
    assert index(any_db, New, "confidence") == {"k": 0.3}
    assert ConfidenceField.update_confidence(record, "confidence", 0.9) == pytest.approx(0.6)


def test_updates_queue_into_the_callers_pipeline(any_db):
    beliefs = [ConfidenceBelief.create(agent_id="a", text=t) for t in "xy"]
    gone = ConfidenceBelief.create(agent_id="a", text="gone")
    with any_db.pipeline(transaction=False) as pipe:
        for belief in beliefs:
            assert ConfidenceField.update_confidence(belief, "confidence", 0.9, pipeline=pipe) is None
        gone.delete()
        ConfidenceField.update_confidence(gone, "confidence", 0.9, pipeline=pipe)
        assert ConfidenceField.get_confidence(beliefs[0], "confidence") == 0.5  # not sent yet
        replies = pipe.execute()
    assert replies == [[b"0.7", b"1", b"1", b"0"]] * 2 + [None]
    assert [ConfidenceField.get_confidence(b, "confidence") for b in beliefs] == [0.7, 0.7]
    assert not any_db.exists(gone.db_key.redis_key)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(signals=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30), cap=st.integers(1, 6))
def test_lua_matches_the_python_formula_exactly(any_db, signals, cap):
    class Probe(Model):
        name = KeyField()
        confidence = ConfidenceField(evidence_cap=cap)

    record = Probe.create(name="p")
    expected = 0.5
    for count, signal in enumerate(signals):
        expected = updated_confidence(expected, count, signal, cap)
        assert ConfidenceField.update_confidence(record, "confidence", signal) == expected
    data = ConfidenceField.get_confidence_data(record, "confidence")
    assert data["confidence"] == expected
    assert data["corroborations"] == sum(s >= 0.5 for s in signals)
    assert index(any_db, Probe, "confidence") == {"p": expected}
    record.delete()


# -- concurrency ------------------------------------------------------------------------------
def _url(request, client) -> str:
    return request.getfixturevalue("cluster_url" if is_cluster(client) else "redis_url")


def _update_many(url: str, prefix: str, belief_id: str, signal: float, start: Any) -> None:
    """Worker process: its own connection, then 500 updates of one record once all workers are up."""
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    belief = ConfidenceBelief(belief_id=belief_id, agent_id="a")
    start.wait()
    for _ in range(500):
        ConfidenceField.update_confidence(belief, "confidence", signal)


def test_concurrent_updates_lose_no_evidence(any_db, request):
    belief = ConfidenceBelief.create(agent_id="a", text="contested")
    forked = multiprocessing.get_context("fork")  # children start without re-importing redmem
    start = forked.Barrier(8)
    args = (_url(request, any_db), redmem.store.settings().key_prefix, belief.belief_id)
    procs = [forked.Process(target=_update_many, args=(*args, 0.9 if i % 2 else 0.1, start)) for i in range(8)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 8
    data = ConfidenceField.get_confidence_data(belief, "confidence")
    assert (data["evidence_count"], data["corroborations"], data["contradictions"]) == (4000, 2000, 2000)
    assert 0.0 <= data["confidence"] <= 1.0
    assert index(any_db, ConfidenceBelief, "confidence", agent_id="a") == {belief.db_key.record_id: data["confidence"]}
