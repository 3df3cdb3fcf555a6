"""DecayingSortedField: hand-computed formulas, saves and touches, top_by_decay against brute force."""

from __future__ import annotations

import itertools
import math
import random
import time
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import all_keys
from redmem import (
    AutoKeyField,
    FloatField,
    KeyField,
    Model,
    ModelException,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.fields import ConfidenceField, DecayingSortedField
from redmem.fields._decay import (
    confidence_modulation,
    exponential_decay,
    exponential_order_key,
    power_decay,
)
from redmem.fields._scoring import epoch_seconds
from redmem.model._field import Field

DAY = 86400.0
T0 = 1_750_000_000.0  # a fixed "now" for the stored timestamps


class StubConfidence(Field):
    """A stand-in confidence field: a zset of confidences per partition, written by the test."""

    stored = False

    def __init__(self, initial_confidence: float = 0.5) -> None:
        super().__init__(float)
        self.initial_confidence = initial_confidence

    def index_key(self, keyspace):
        return keyspace.key("cf", self.name)

    def on_delete(self, batch, old):
        batch.pipe.zrem(self.index_key(batch.keyspace), batch.record_id)


class DecayMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")


class DecayPlain(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    relevance = DecayingSortedField(decay_rate=0.5, partition_by="agent_id")


class Believed(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    belief = StubConfidence(initial_confidence=0.5)


class DecayFading(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", half_life=DAY, partition_by="agent_id")


class Vetted(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    relevance = DecayingSortedField(partition_by="agent_id")
    confidence = ConfidenceField()


_agents = itertools.count()


def fresh_agent() -> str:
    return f"agent-{next(_agents)}"


# -- formulas ----------------------------------------------------------------------------------
def test_power_curve_hand_numbers():
    # 1 ** -0.1 = 1;  4 ** -0.1 = e^(-0.1 * 1.3863) = 0.8706;  100 ** -0.1 = 10 ** -0.2 = 0.6310
    assert power_decay(1.0, T0, T0 + 1 * DAY, 0.1) == pytest.approx(1.0)
    assert power_decay(1.0, T0, T0 + 4 * DAY, 0.1) == pytest.approx(0.8706, abs=1e-4)
    assert power_decay(1.0, T0, T0 + 100 * DAY, 0.1) == pytest.approx(0.6310, abs=1e-4)
    assert round(power_decay(1.0, T0, T0 + 4 * DAY, 0.1), 2) == 0.87
    assert round(power_decay(1.0, T0, T0 + 100 * DAY, 0.1), 2) == 0.63
    assert power_decay(1.0, T0, T0 + 4 * DAY, 0.5) == pytest.approx(0.5)  # 4 ** -0.5
    assert power_decay(3.0, T0, T0 + 4 * DAY, 0.5) == pytest.approx(1.5)
    # elapsed is at least 0.01 days: a fresh (or future) touch scores 0.01 ** -0.1 = 10 ** 0.2 = 1.5849
    assert power_decay(1.0, T0, T0, 0.1) == pytest.approx(1.5849, abs=1e-4)
    assert power_decay(1.0, T0 + DAY, T0, 0.1) == pytest.approx(1.5849, abs=1e-4)


def test_confidence_modulation_hand_numbers():
    # c = 0.9: eff = 0.1 * 2 ** -0.4 = 0.1 * 0.75786 = 0.075786; at 4 days the score is 4 ** -eff
    #   = e^(-0.075786 * 1.3863) = e^-0.10506 = 0.9003 (slower decay than 0.8706)
    # c = 0.1: eff = 0.1 * 2 ** 0.4 = 0.131951; 4 ** -eff = e^-0.18292 = 0.8328 (faster)
    base = power_decay(1.0, T0, T0 + 4 * DAY, 0.1)
    assert base * confidence_modulation(4.0, 0.1, 0.9, 0.5) == pytest.approx(0.9003, abs=1e-4)
    assert base * confidence_modulation(4.0, 0.1, 0.1, 0.5) == pytest.approx(0.8328, abs=1e-4)
    assert confidence_modulation(4.0, 0.1, 0.5, 0.5) == 1.0
    assert confidence_modulation(0.5, 0.1, 0.9, 0.5) == 1.0  # inert during the first day


def test_exponential_curve_and_its_static_key():
    assert exponential_decay(2.0, T0, T0 + 2 * DAY, DAY) == pytest.approx(0.5)  # 2 * 2 ** -2
    assert exponential_decay(1.0, T0, T0 + 3600, 3600) == pytest.approx(0.5)
    for base, t in [(2.0, T0), (0.3, T0 - 5 * DAY), (7.0, T0 + 3.5 * DAY)]:
        now = T0 + 10 * DAY
        key = exponential_order_key(base, t, DAY)
        assert 2 ** (key - now / DAY) == pytest.approx(exponential_decay(base, t, now, DAY), rel=1e-9)
    assert exponential_order_key(0.0, T0, DAY) == -math.inf


def test_as_of_accepts_datetimes_and_numbers():
    moment = datetime(2025, 6, 15, 15, 6, 40, tzinfo=UTC)
    assert epoch_seconds(moment) == T0
    assert epoch_seconds(moment.replace(tzinfo=None)) == T0
    assert epoch_seconds(T0) == T0
    assert abs(epoch_seconds() - time.time()) < 5
    with pytest.raises(ValidationError):
        epoch_seconds(float("nan"))


# -- declarations ------------------------------------------------------------------------------
def test_declaration_errors():
    with pytest.raises(ModelException, match="decay_rate"):
        DecayingSortedField(decay_rate=-0.1)
    with pytest.raises(ModelException, match="half_life"):
        DecayingSortedField(half_life=0)
    with pytest.raises(ModelException, match="power curve"):
        DecayingSortedField(half_life=60, confidence_modulation_field="belief")
    with pytest.raises(ModelException, match="base_score_field"):
        class NoBase(Model):
            key = KeyField()
            relevance = DecayingSortedField(base_score_field="missing")
    with pytest.raises(ModelException, match="base_score_field"):
        class TextBase(Model):
            key = KeyField()
            label = StringField()
            relevance = DecayingSortedField(base_score_field="label")
    with pytest.raises(ModelException, match="confidence"):
        class NotConfidence(Model):
            key = KeyField()
            label = StringField()
            relevance = DecayingSortedField(confidence_modulation_field="label")


def test_modulation_is_found_or_named():
    assert Believed.relevance.confidence_source() is Believed.belief
    assert Vetted.relevance.confidence_source() is Vetted.confidence
    assert DecayMemory.relevance.confidence_source() is None
    assert DecayFading.relevance.confidence_source() is None

    class TwoSources(Model):
        key = KeyField()
        a = StubConfidence()
        b = StubConfidence()
        relevance = DecayingSortedField()
        chosen = DecayingSortedField(confidence_modulation_field="b")

    assert TwoSources.relevance.confidence_source() is None  # ambiguous: no modulation
    assert TwoSources.chosen.confidence_source() is TwoSources.b


# -- saves, touches, scores ----------------------------------------------------------------------
def test_scores_at_chosen_times(any_db):
    memory = DecayMemory.create(agent_id="a", importance=2.0)
    assert DecayMemory.relevance.touch(memory, now=T0) is True
    for days, expected in [(1, 2.0), (4, 2 * 0.870551), (100, 2 * 0.630957)]:
        assert DecayMemory.relevance.score_of(memory, as_of=T0 + days * DAY) == pytest.approx(expected, rel=1e-6)
    plain = DecayPlain.create(agent_id="a")
    DecayPlain.relevance.touch(plain, now=T0)
    assert DecayPlain.relevance.score_of(plain, as_of=T0 + 4 * DAY) == pytest.approx(0.5)


def test_creation_stamps_now_and_saves_keep_it(any_db):
    before = time.time()
    memory = DecayMemory.create(agent_id="a", importance=1.0)
    later = before + 4 * DAY
    assert DecayMemory.relevance.score_of(memory, as_of=later) == pytest.approx(0.8706, abs=1e-4)
    DecayMemory.relevance.touch(memory, now=T0)
    memory.importance = 3.0
    memory.save()  # a save changes the base, never the last-updated time
    assert DecayMemory.relevance.score_of(memory, as_of=T0 + 4 * DAY) == pytest.approx(3 * 0.870551, rel=1e-6)
    top = DecayMemory.query.filter(agent_id="a").top_by_decay(as_of=T0 + 4 * DAY)
    assert [m._decay_score for m in top] == [pytest.approx(3 * 0.870551, rel=1e-6)]


def test_base_changes_reorder_top_by_decay(any_db):
    low = DecayMemory.create(agent_id="a", importance=1.0)
    high = DecayMemory.create(agent_id="a", importance=2.0)
    for memory in (low, high):
        DecayMemory.relevance.touch(memory, now=T0)
    query = DecayMemory.query.filter(agent_id="a")
    assert [m.importance for m in query.top_by_decay(as_of=T0 + DAY)] == [2.0, 1.0]
    low.importance = 5.0
    low.save()
    assert [m.importance for m in query.top_by_decay(as_of=T0 + DAY)] == [5.0, 2.0]


def test_negative_base_is_rejected(any_db):
    with pytest.raises(ValidationError, match="base score"):
        DecayMemory.create(agent_id="a", importance=-1.0)
    assert DecayMemory.query.filter(agent_id="a").count() == 0


def test_touch_refreshes_and_needs_a_stored_record(any_db):
    old, new = DecayMemory.create(agent_id="a"), DecayMemory.create(agent_id="a")
    DecayMemory.relevance.touch(old, now=T0 - 50 * DAY)
    DecayMemory.relevance.touch(new, now=T0 - 10 * DAY)
    query = DecayMemory.query.filter(agent_id="a")
    assert [m.memory_id for m in query.top_by_decay(as_of=T0)] == [new.memory_id, old.memory_id]
    with any_db.pipeline(transaction=False) as pipe:
        assert DecayMemory.relevance.touch(old, pipeline=pipe, now=T0) is None
        pipe.execute()
    assert [m.memory_id for m in query.top_by_decay(as_of=T0)] == [old.memory_id, new.memory_id]
    old.delete()
    assert DecayMemory.relevance.touch(old, now=T0) is False
    assert DecayMemory.relevance.score_of(old) is None
    assert [m.memory_id for m in query.top_by_decay(as_of=T0)] == [new.memory_id]


def test_exponential_touch_moves_the_static_key(any_db):
    a = DecayFading.create(agent_id="a", importance=4.0)
    b = DecayFading.create(agent_id="a", importance=1.0)
    DecayFading.relevance.touch(a, now=T0)
    DecayFading.relevance.touch(b, now=T0 + 1.5 * DAY)  # 4 * 2^-1.5 = 1.41 > 1 at T0 + 1.5 days
    query = DecayFading.query.filter(agent_id="a")
    top = query.top_by_decay(as_of=T0 + 1.5 * DAY)
    assert [m.importance for m in top] == [4.0, 1.0]
    assert top[0]._decay_score == pytest.approx(4 * 2 ** -1.5)
    DecayFading.relevance.touch(b, now=T0 + 3 * DAY)  # now b: 1.0 vs a: 4 * 2^-3 = 0.5
    assert [m.importance for m in query.top_by_decay(as_of=T0 + 3 * DAY)] == [1.0, 4.0]
    a.importance = 16.0  # base change recomputes the key from the stored t: 16 * 2^-3 = 2
    a.save()
    assert DecayFading.relevance.score_of(a, as_of=T0 + 3 * DAY) == pytest.approx(2.0)
    assert [m.importance for m in query.top_by_decay(as_of=T0 + 3 * DAY)] == [16.0, 1.0]


@pytest.mark.parametrize("model", [DecayMemory, DecayPlain, Believed, DecayFading])
def test_delete_removes_every_entry(any_db, model):
    records = [model.create(agent_id="a") for _ in range(3)]
    for record in records:
        model.relevance.touch(record, now=T0)
    for record in records:
        record.delete()
    registry = model._meta.global_keyspace().key("partitions")
    assert all_keys(any_db) == {registry}


def test_confidence_field_modulates_end_to_end(any_db):
    sure, doubted, unknown = (Vetted.create(agent_id="a") for _ in range(3))
    for memory in (sure, doubted, unknown):
        Vetted.relevance.touch(memory, now=T0)
    ConfidenceField.update_confidence(sure, "confidence", 1.0)  # (0.5 + 1) / 2 = 0.75
    ConfidenceField.update_confidence(doubted, "confidence", 0.0)  # 0.25
    at = T0 + 4 * DAY
    # score = 4 ** -eff, eff = 0.1 * 2 ** (0.5 - c):
    #   c = 0.75: eff = 0.1 * 0.840896 = 0.0840896, e^(-0.0840896 * 1.386294) = e^-0.116573 = 0.8900
    #   c = 0.5:  eff = 0.1, 0.8706
    #   c = 0.25: eff = 0.1 * 1.189207 = 0.1189207, e^-0.164859 = 0.8480
    expected = {sure.memory_id: 0.8900, unknown.memory_id: 0.8706, doubted.memory_id: 0.8480}
    top = Vetted.query.filter(agent_id="a").top_by_decay(as_of=at)
    assert [m.memory_id for m in top] == list(expected)
    for memory in top:
        assert memory._decay_score == pytest.approx(expected[memory.memory_id], abs=1e-4)
        assert Vetted.relevance.score_of(memory, as_of=at) == memory._decay_score


def test_ties_go_by_record_id(any_db):
    ids = [f"{i:02d}" for i in range(12)]
    random.Random(3).shuffle(ids)
    for memory_id in ids:
        DecayMemory.relevance.touch(DecayMemory.create(agent_id="a", memory_id=memory_id), now=T0)
    top = DecayMemory.query.filter(agent_id="a").top_by_decay(n=5, as_of=T0 + DAY)
    assert [m.memory_id for m in top] == ["00", "01", "02", "03", "04"]


def test_query_errors(any_db):
    with pytest.raises(QueryException, match="partition"):
        DecayMemory.query.top_by_decay()
    with pytest.raises(QueryException, match="partition only"):
        DecayMemory.query.filter(agent_id="a", memory_id="x").top_by_decay()
    with pytest.raises(QueryException, match="n must be an int"):
        DecayMemory.query.filter(agent_id="a").top_by_decay(n=2.5)
    assert DecayMemory.query.filter(agent_id="a").top_by_decay(n=0) == []
    assert DecayMemory.query.filter(agent_id="nobody").top_by_decay() == []

    class Twice(Model):
        key = AutoKeyField()
        agent_id = KeyField()
        fast = DecayingSortedField(decay_rate=1.0, partition_by="agent_id")
        slow = DecayingSortedField(decay_rate=0.01, partition_by="agent_id")

    with pytest.raises(QueryException, match="field="):
        Twice.query.filter(agent_id="a").top_by_decay()
    record = Twice.create(agent_id="a")
    assert Twice.query.filter(agent_id="a").top_by_decay(field="slow") == [record]
    with pytest.raises(QueryException, match="not a DecayingSortedField"):
        Twice.query.filter(agent_id="a").top_by_decay(field="agent_id")


def test_partitions_do_not_mix(any_db):
    mine = DecayMemory.create(agent_id="a", importance=1.0)
    DecayMemory.create(agent_id="b", importance=9.0)
    assert DecayMemory.query.filter(agent_id="a").top_by_decay() == [mine]


# -- top_by_decay against brute force ------------------------------------------------------------
AS_OF = [T0 - 2 * DAY, T0, T0 + 0.3 * DAY, T0 + 3 * DAY, T0 + 40 * DAY, T0 + 5000 * DAY]


def stored_values(model, agent_id):
    """(record id, base, last-updated time, confidence or None) of every record of the partition."""
    field, space = model.relevance, model._meta.keyspace((agent_id,))
    client = model._meta.client
    source = field.confidence_source()
    times = dict(client.zrange(field.keys_in(space).updated, 0, -1, withscores=True))
    confidences = dict(client.zrange(source.index_key(space), 0, -1, withscores=True)) if source else {}
    rows = []
    for record in model.query.filter(agent_id=agent_id).all():
        member = record.db_key.record_id.encode()
        base = getattr(record, "importance", 1.0)
        rows.append((record.db_key.record_id, base, times[member], confidences.get(member)))
    return rows


def brute_force(model, rows, now):
    """Every record's score from the pure formulas, best first, ties by id."""
    scored = [(rid, model.relevance.score(base, t, c, now)) for rid, base, t, c in rows]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored


def populate(model, agent_id, specs):
    """Create one record per (base, t, confidence) spec with the stored values given."""
    space = model._meta.keyspace((agent_id,))
    source = model.relevance.confidence_source()
    client = model._meta.client
    records = []
    for base, _, _ in specs:
        values = {"importance": base} if "importance" in model._meta.fields else {}
        records.append(model.create(agent_id=agent_id, **values))
    with client.pipeline(transaction=False) as pipe:
        for record, (_, t, confidence) in zip(records, specs):
            model.relevance.touch(record, pipeline=pipe, now=t)
            if source is not None and confidence is not None:
                pipe.zadd(source.index_key(space), {record.db_key.record_id: confidence})
        pipe.execute()


def assert_matches_brute_force(model, agent_id, sizes):
    query = model.query.filter(agent_id=agent_id)
    rows = stored_values(model, agent_id)
    for now in AS_OF:
        ranking = brute_force(model, rows, now)
        for n in sizes:
            top = query.top_by_decay(n=n, as_of=now)
            assert [(m.db_key.record_id, m._decay_score) for m in top] == ranking[:n]


spec = st.tuples(
    st.sampled_from([0.0, 0.25, 1.0, 1.0, 2.5, 10.0]),
    st.sampled_from([T0 - 30 * DAY, T0 - 2 * DAY, T0 - DAY, T0 - 0.5, T0, T0 + DAY]),
    st.one_of(st.none(), st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0])),
)
specs = st.lists(spec, min_size=0, max_size=40)
examples = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@examples
@given(data=specs, n=st.integers(1, 45))
def test_power_top_matches_brute_force(any_db, data, n):
    agent = fresh_agent()
    populate(DecayMemory, agent, data)
    assert_matches_brute_force(DecayMemory, agent, [n])


@examples
@given(data=specs, n=st.integers(1, 45))
def test_modulated_top_matches_brute_force(any_db, data, n):
    agent = fresh_agent()
    populate(Believed, agent, data)
    assert_matches_brute_force(Believed, agent, [n])


@examples
@given(data=specs, n=st.integers(1, 45))
def test_exponential_top_matches_brute_force(any_db, data, n):
    agent = fresh_agent()
    populate(DecayFading, agent, data)
    assert_matches_brute_force(DecayFading, agent, [n])


@pytest.mark.parametrize("model", [DecayMemory, Believed, DecayPlain, DecayFading])
def test_many_records_match_brute_force(any_db, model):
    """Enough records that the threshold algorithm walks several rounds before it stops."""
    rng = random.Random(11)
    data = [(rng.choice([0.0, rng.random(), rng.random() * 10]),
             T0 - rng.random() * 60 * DAY + rng.choice([0, DAY]),
             rng.choice([None, rng.random()])) for _ in range(800)]
    populate(model, "many", data)
    assert_matches_brute_force(model, "many", [1, 10, 100])


def test_a_record_without_confidence_is_bounded_by_the_initial_confidence(any_db):
    """X has no confidence entry and sits last in the time and base lists; the confidence list
    runs below the initial 0.5 at once, so only the default in the bound keeps the walk going."""
    old = T0 - 1000 * DAY
    data = {"000": (0.95, None)}  # X: 0.95 * 1000 ** -0.1 = 0.476
    data.update({f"c{i}": (0.9, 1.0) for i in range(5)})  # 0.9 * 1000 ** -0.0707 = 0.553
    data.update({f"b{i:03d}": (1.0, 0.05 * i / 100) for i in range(100)})  # at most 0.389
    for memory_id, (base, _confidence) in data.items():
        Believed.create(agent_id="x", memory_id=memory_id, importance=base)
    space = Believed._meta.keyspace(("x",))
    with any_db.pipeline(transaction=False) as pipe:
        pipe.zadd(Believed.relevance.keys_in(space).updated, {memory_id: old for memory_id in data})
        pipe.zadd(Believed.belief.index_key(space), {m: c for m, (_, c) in data.items() if c is not None})
        pipe.execute()
    top = Believed.query.filter(agent_id="x").top_by_decay(n=6, as_of=T0)
    assert [m.memory_id for m in top] == ["c0", "c1", "c2", "c3", "c4", "000"]
    assert top[-1]._decay_score == pytest.approx(0.95 * 1000 ** -0.1)
