"""WriteFilterMixin: low scores write nothing, high scores are indexed as priority."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys
from redmem import AutoKeyField, FloatField, KeyField, Model, SortedField, StringField, TagField
from redmem.observation import EventStreamMixin, WriteFilterMixin
from redmem.observation._write_filter import priority_key


class WriteFilterMemory(WriteFilterMixin, EventStreamMixin, Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    rank = SortedField(partition_by="agent_id")
    tags = TagField()

    def compute_filter_score(self):
        return self.importance


class Strict(WriteFilterMixin, Model):
    item_id = KeyField()
    score = FloatField()
    write_filter_min_score = 0.5
    write_filter_priority_threshold = 0.9

    def compute_filter_score(self):
        return self.score


class WriteFilterUnfiltered(Model):
    item_id = KeyField()


def priority(record) -> float | None:
    return record.priority_score


def test_a_skipped_save_leaves_no_trace(any_db):
    memory = WriteFilterMemory(agent_id="a", content="noise", importance=0.05, rank=3, tags=["t"])
    assert memory.save() is False
    assert all_keys(any_db) == set()  # no hash, no index, no stream entry, no partition registry
    assert WriteFilterMemory.query.filter(agent_id="a").count() == 0


def test_a_skipped_update_keeps_the_stored_record(any_db):
    memory = WriteFilterMemory.create(agent_id="a", content="kept", importance=0.5, rank=1)
    before = {key: any_db.dump(key) for key in all_keys(any_db)}
    memory.content, memory.importance = "changed", 0.01
    assert memory.save() is False
    assert {key: any_db.dump(key) for key in all_keys(any_db)} == before


def test_bypassing_the_filter_saves_anyway(any_db):
    memory = WriteFilterMemory(agent_id="a", content="forced", importance=0.0)
    assert memory.save(skip_write_filter=True) is True
    assert WriteFilterMemory.query.no_track().get(agent_id="a", memory_id=memory.memory_id).content == "forced"
    assert priority(memory) is None
    assert [e.op for e in WriteFilterMemory.read_events(agent_id="a")] == ["create"]


def test_priority_index_follows_the_latest_score(any_db):
    memory = WriteFilterMemory.create(agent_id="a", content="x", importance=0.8)
    assert priority(memory) == 0.8
    memory.importance = 0.3
    assert memory.save() is True
    assert priority(memory) is None
    memory.importance = 0.95
    memory.save()
    assert priority(memory) == 0.95
    memory.delete()
    assert not any_db.exists(priority_key(memory.db_key.keyspace))


def test_thresholds_are_inclusive_and_overridable(any_db):
    assert WriteFilterMemory(agent_id="a", importance=0.1).save() is True
    edge = WriteFilterMemory(agent_id="a", importance=0.7)
    edge.save()
    assert priority(edge) == 0.7
    assert Strict(item_id="low", score=0.4).save() is False
    kept = Strict(item_id="mid", score=0.8)
    assert kept.save() is True and priority(kept) is None
    top = Strict(item_id="top", score=0.9)
    top.save()
    assert priority(top) == 0.9


@pytest.mark.parametrize("bad", [math.nan, math.inf, "high", None, True])
def test_a_score_that_is_no_finite_number_is_rejected(any_db, bad):
    record = Strict(item_id="y", score=0.95)
    record.compute_filter_score = lambda: bad
    with pytest.raises(redmem.ValidationError, match="compute_filter_score"):
        record.save()
    assert all_keys(any_db) == set()


def test_top_by_priority_ranks_priority_records_of_the_partition(any_db):
    for importance in (0.75, 0.9, 0.2, 0.8):
        WriteFilterMemory.create(agent_id="a", content=str(importance), importance=importance)
    WriteFilterMemory.create(agent_id="b", content="other tenant", importance=1.0)
    top = WriteFilterMemory.query.filter(agent_id="a").top_by_priority(2)
    assert [m.content for m in top] == ["0.9", "0.8"]
    assert [m._priority_score for m in top] == [0.9, 0.8]
    assert WriteFilterMemory.query.filter(agent_id="a").top_by_priority(0) == []
    with pytest.raises(redmem.QueryException, match="partition"):
        WriteFilterMemory.query.top_by_priority(2)
    with pytest.raises(redmem.QueryException, match="WriteFilterMixin"):
        WriteFilterUnfiltered.query.top_by_priority(1)


_examples = itertools.count()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scores=st.lists(st.sampled_from([0.0, 0.05, 0.1, 0.4, 0.7, 0.95]), min_size=1, max_size=6))
def test_stored_state_follows_the_scores_of_written_saves(db, scores):
    """After any sequence of saves: stored iff some save passed, the last passing save's values,
    the priority index iff that save scored >= 0.7, and one event per passing save."""
    agent = f"h{next(_examples)}"
    memory = WriteFilterMemory(agent_id=agent, memory_id="m")
    written = []
    for score in scores:
        memory.importance = score
        if memory.save():
            written.append(score)
    stored = WriteFilterMemory.query.no_track().get(agent_id=agent, memory_id="m")
    assert (stored is not None) == bool(written)
    assert len(WriteFilterMemory.read_events(agent_id=agent)) == len(written)
    if written:
        assert stored.importance == written[-1]
        assert priority(memory) == (written[-1] if written[-1] >= 0.7 else None)


class StreamFirst(EventStreamMixin, WriteFilterMixin, Model):
    item_id = KeyField()
    score = FloatField()

    def compute_filter_score(self):
        return self.score


def test_the_mixins_compose_in_either_order(any_db):
    assert StreamFirst(item_id="low", score=0.0).save() is False
    assert StreamFirst(item_id="forced", score=0.0).save(skip_write_filter=True) is True
    assert [e.key.rsplit(":", 1)[1] for e in StreamFirst.read_events()] == ["forced"]
