"""composite_score: the maps into [0, 1], hand-computed composites, tenants, errors, and the
threshold-algorithm selection against a brute-force reference."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, FloatField, KeyField, Model, QueryException, SortedField, ValidationError
from redmem.fields import ConfidenceField, CyclicDecayField, DecayingSortedField, TemporalPeriod
from redmem.fields._composite import (
    clamp01,
    composite,
    composite_search,
    logistic,
    min_max,
    parse_reply,
    saturate,
    signal_names,
)
from redmem.observation import AccessTrackerMixin, WriteFilterMixin
from redmem.observation._write_filter import priority_key

DAY = 86400.0
T0 = 1_750_000_000.0


class CompositeMemory(WriteFilterMixin, Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    keep_score = FloatField(default=0.5)
    rank = SortedField(float)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    rhythm = CyclicDecayField(
        base_score_field="importance",
        cycles=[(TemporalPeriod.DAILY, 0.5, T0), (TemporalPeriod.WEEKLY, -0.2, T0 + 2 * DAY)],
        pressure_rate=0.1,
        partition_by="agent_id",
    )

    def compute_filter_score(self):
        return self.keep_score


class Fading(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", half_life=DAY, partition_by="agent_id")
    confidence = ConfidenceField()


class Tracked(AccessTrackerMixin, Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    relevance = DecayingSortedField(partition_by="agent_id")


_agents = itertools.count()


def fresh_agent() -> str:
    return f"agent-{next(_agents)}"


def names(records) -> list[str]:
    return [r.memory_id for r in records]


# -- the maps ------------------------------------------------------------------------------------
def test_maps_hand_numbers():
    assert saturate(0.0) == 0.0
    assert saturate(1.0) == 0.5
    assert saturate(3.0) == 0.75
    assert saturate(math.inf) == 1.0
    assert logistic(0.0) == 0.5
    assert logistic(1.0) == pytest.approx(0.731059, abs=1e-6)  # 1 / (1 + e^-1)
    assert logistic(-1.0) == pytest.approx(0.268941, abs=1e-6)
    assert logistic(-1000.0) == 0.0 and logistic(1000.0) == 1.0  # no overflow
    assert min_max(5.0, 0.0, 10.0) == 0.5
    assert min_max(-2.0, -2.0, 6.0) == 0.0
    assert min_max(3.0, 3.0, 3.0) == 1.0
    assert [clamp01(x) for x in (-0.5, 0.25, 1.5)] == [0.0, 0.25, 1.0]
    assert composite({"a": 0.6, "b": 0.3}, {"a": 0.5, "b": 0.7, "c": 1.0}) == pytest.approx(0.51)


def test_signal_names():
    assert signal_names(CompositeMemory) == ["rank", "relevance", "confidence", "rhythm", "priority"]
    assert signal_names(Fading) == ["relevance", "confidence"]
    assert signal_names(Tracked) == ["relevance"]


# -- hand-computed composites ----------------------------------------------------------------------
def test_decay_and_confidence_hand_numbers(any_db):
    recent = CompositeMemory.create(agent_id="a", memory_id="recent", importance=1.0)
    stale = CompositeMemory.create(agent_id="a", memory_id="stale", importance=1.0)
    CompositeMemory.relevance.touch(recent, now=T0 - DAY)
    CompositeMemory.relevance.touch(stale, now=T0 - 100 * DAY)
    ConfidenceField.update_confidence(recent, "confidence", 0.9)  # (0.5 + 0.9) / 2 = 0.7
    top = CompositeMemory.query.filter(agent_id="a").composite_score(
        indexes={"relevance": 0.6, "confidence": 0.3}, as_of=T0)
    assert names(top) == ["recent", "stale"]
    # recent: decay 1 * 1 ** -0.1 = 1 (modulation inert at 1 day) -> 1/2; 0.6*0.5 + 0.3*0.7 = 0.51
    assert top[0]._signals == {"relevance": pytest.approx(0.5), "confidence": pytest.approx(0.7)}
    assert top[0]._composite_score == pytest.approx(0.51)
    # stale: 100 ** -0.1 = 0.630957 -> 0.630957 / 1.630957 = 0.386863; 0.6*0.386863 + 0.3*0.5 = 0.382118
    assert top[1]._signals["relevance"] == pytest.approx(0.386863, abs=1e-6)
    assert top[1]._composite_score == pytest.approx(0.382118, abs=1e-6)


def test_sorted_cyclic_and_priority_hand_numbers(any_db):
    low = CompositeMemory.create(agent_id="a", memory_id="low", rank=2.0, keep_score=0.5)
    mid = CompositeMemory.create(agent_id="a", memory_id="mid", rank=5.0, keep_score=0.8)
    high = CompositeMemory.create(agent_id="a", memory_id="high", rank=10.0, keep_score=1.4)
    blank = CompositeMemory.create(agent_id="a", memory_id="blank")  # no rank: sorted signal 0
    for record in (low, mid, high, blank):
        CompositeMemory.rhythm.touch(record, now=T0 - DAY)
        CompositeMemory.rhythm.resolve_pressure(record, now=T0 - 2 * DAY)
    query = CompositeMemory.query.filter(agent_id="a")
    top = query.composite_score(indexes={"rank": 1.0}, limit=4, as_of=T0)
    assert [(r.memory_id, r._composite_score) for r in top] == [
        ("high", 1.0), ("mid", pytest.approx(3 / 8)), ("blank", 0.0), ("low", 0.0)]
    top = query.composite_score(indexes={"priority": 2.0}, limit=4, as_of=T0)
    assert [(r.memory_id, r._composite_score) for r in top] == [
        ("high", 2.0), ("mid", pytest.approx(1.6)), ("blank", 0.0), ("low", 0.0)]
    # cyclic at T0: 1 * 1 ** -0.1 + 0.5 * cos(0) - 0.2 * cos(2 pi * -2/7) + 0.1 * 2
    #   = 1 + 0.5 - 0.2 * (-0.2225209) + 0.2 = 1.7445042; logistic = 0.851258
    top = query.composite_score(indexes={"rhythm": 1.0}, limit=1, as_of=T0)
    assert top[0]._signals["rhythm"] == pytest.approx(0.851258, abs=1e-6)
    assert top[0]._signals["rhythm"] == pytest.approx(logistic(CompositeMemory.rhythm.score_of(top[0], as_of=T0)))
    assert top[0].memory_id == "blank"  # four equal scores: the smallest id


def test_exponential_decay_signal(any_db):
    a = Fading.create(agent_id="a", memory_id="a", importance=4.0)
    b = Fading.create(agent_id="a", memory_id="b", importance=1.0)
    Fading.relevance.touch(a, now=T0)
    Fading.relevance.touch(b, now=T0 + 1.5 * DAY)
    top = Fading.query.filter(agent_id="a").composite_score(indexes={"relevance": 1.0}, as_of=T0 + 2 * DAY)
    # a: 4 * 2^-2 = 1 -> 0.5;  b: 2^-0.5 = 0.707107 -> 0.414214
    assert [(r.memory_id, r._composite_score) for r in top] == [
        ("a", pytest.approx(0.5)), ("b", pytest.approx(0.414214, abs=1e-6))]


def test_min_score_ties_and_field_objects(any_db):
    for memory_id, rank in [("c", 1.0), ("a", 3.0), ("b", 3.0), ("d", 0.0)]:
        CompositeMemory.create(agent_id="a", memory_id=memory_id, rank=rank)
    query = CompositeMemory.query.filter(agent_id="a")
    top = query.composite_score(indexes={CompositeMemory.rank: 1.0}, min_score=1 / 3)
    assert [(r.memory_id, r._composite_score) for r in top] == [("a", 1.0), ("b", 1.0), ("c", pytest.approx(1 / 3))]
    assert names(query.composite_score(indexes={"rank": 1.0}, limit=1)) == ["a"]
    assert query.composite_score(indexes={"rank": 1.0}, min_score=1.5) == []
    assert query.composite_score(indexes={"rank": 1.0}, limit=0) == []
    assert query.composite_score(indexes={"rank": 0.0}, limit=2)[0]._signals == {"rank": 1.0}
    assert names(query.composite_score(indexes={"rank": 0.0}, limit=2)) == ["a", "b"]  # all 0: by id


def test_records_in_no_walked_list_come_by_id(any_db):
    """Records with no entry anywhere score the defaults' composite; the first by id fill the page."""
    agent = fresh_agent()
    space = CompositeMemory._meta.keyspace((agent,))
    for memory_id in ["e", "b", "d", "a", "c"]:
        CompositeMemory.create(agent_id=agent, memory_id=memory_id, rank=7.0 if memory_id == "d" else None)
    any_db.zrem(CompositeMemory.confidence.index_key(space), "b", "c")  # records from before the field
    query = CompositeMemory.query.filter(agent_id=agent)
    top = query.composite_score(indexes={"rank": 1.0, "confidence": 0.5}, limit=3)
    assert [(r.memory_id, r._composite_score) for r in top] == [("d", 1.25), ("a", 0.25), ("b", 0.25)]
    assert names(query.composite_score(indexes={"rank": 1.0}, limit=10)) == ["d", "a", "b", "c", "e"]


def test_ties_at_the_cut_go_by_record_id(any_db):
    """Sorted sets return equal scores in reverse id order: the walk must not stop on a tie."""
    ids = [f"{i:02d}" for i in range(40)]
    random.Random(5).shuffle(ids)
    for memory_id in ids:
        CompositeMemory.relevance.touch(CompositeMemory.create(agent_id="a", memory_id=memory_id, rank=1.0), now=T0)
    query = CompositeMemory.query.filter(agent_id="a")
    assert names(query.composite_score(indexes={"rank": 1.0}, limit=5)) == ["00", "01", "02", "03", "04"]
    top = query.composite_score(indexes={"relevance": 1.0, "rank": 0.5}, limit=3, as_of=T0 + DAY)
    assert [(r.memory_id, r._composite_score) for r in top] == [(i, 1.0) for i in ("00", "01", "02")]


# -- tenants -------------------------------------------------------------------------------------
def test_no_other_tenant_ever_appears(any_db):
    """Two agents whose scores interleave: each query sees its own records, scaled within its own partition."""
    for i in range(20):
        agent = "a" if i % 2 == 0 else "b"
        record = CompositeMemory.create(agent_id=agent, memory_id=f"{agent}{i:02d}", rank=float(i),
                               importance=1.0 + i, keep_score=0.7 + i / 100)
        CompositeMemory.relevance.touch(record, now=T0 - i * DAY)
        CompositeMemory.rhythm.touch(record, now=T0 - i * DAY)
    CompositeMemory.create(agent_id="b", memory_id="b-outlier", rank=1000.0, importance=50.0, keep_score=2.0)
    weights = {"rank": 0.2, "relevance": 0.3, "confidence": 0.1, "rhythm": 0.2, "priority": 0.2}
    for agent in ("a", "b"):
        top = CompositeMemory.query.filter(agent_id=agent).composite_score(indexes=weights, limit=100, as_of=T0)
        assert {r.agent_id for r in top} == {agent}
        assert len(top) == 10 + (agent == "b")
    top_a = CompositeMemory.query.filter(agent_id="a").composite_score(indexes={"rank": 1.0}, limit=100)
    assert top_a[0].memory_id == "a18" and top_a[0]._composite_score == 1.0  # b's outlier scales nothing of a
    assert top_a[-1].memory_id == "a00" and top_a[-1]._composite_score == 0.0


def test_unpartitioned_models_rank_their_one_keyspace(any_db):
    class CompositeNote(Model):
        note_id = KeyField()
        stars = SortedField(int)
        confidence = ConfidenceField()

    for note_id, stars in [("x", 1), ("y", 4), ("z", 3)]:
        CompositeNote.create(note_id=note_id, stars=stars)
    top = CompositeNote.query.composite_score(indexes={"stars": 1.0, "confidence": 1.0}, limit=2)
    assert [(r.note_id, r._composite_score) for r in top] == [("y", 1.5), ("z", pytest.approx(7 / 6))]


# -- errors --------------------------------------------------------------------------------------
def test_errors(any_db):
    query = CompositeMemory.query.filter(agent_id="a")
    with pytest.raises(QueryException, match="valid: rank, relevance, confidence, rhythm, priority"):
        query.composite_score(indexes={"importance": 1.0})
    with pytest.raises(QueryException, match="valid: relevance$"):
        Tracked.query.filter(agent_id="a").composite_score(indexes={"access": 1.0})
    with pytest.raises(QueryException, match="no signal"):
        query.composite_score(indexes={Fading.relevance: 1.0})  # another model's field
    with pytest.raises(QueryException, match="named twice"):
        query.composite_score(indexes={"rank": 1.0, CompositeMemory.rank: 2.0})
    for bad in ({}, None, [("rank", 1.0)]):
        with pytest.raises(QueryException, match="non-empty dict"):
            query.composite_score(indexes=bad)
    for weight in (-0.1, math.nan, math.inf, True, "1", None):
        with pytest.raises(ValidationError, match="weight"):
            query.composite_score(indexes={"rank": weight})
    for limit in (-1, 2.5, True, None):
        with pytest.raises(QueryException, match="limit"):
            query.composite_score(indexes={"rank": 1.0}, limit=limit)
    with pytest.raises(ValidationError, match="min_score"):
        query.composite_score(indexes={"rank": 1.0}, min_score=math.nan)
    with pytest.raises(QueryException, match="partition"):
        CompositeMemory.query.composite_score(indexes={"rank": 1.0})
    with pytest.raises(QueryException, match="partition only"):
        CompositeMemory.query.filter(agent_id="a", memory_id="x").composite_score(indexes={"rank": 1.0})
    assert query.composite_score(indexes={"rank": 1.0}) == []


# -- against brute force -----------------------------------------------------------------------------
AS_OF = [T0 - 2 * DAY, T0, T0 + 0.3 * DAY, T0 + 3.5 * DAY, T0 + 40 * DAY]
SIGNALS = ["rank", "relevance", "confidence", "rhythm", "priority"]


def populate(agent: str, specs: list[tuple]) -> None:
    """One CompositeMemory per spec (importance, t or None, confidence or None, rank or None, filter score,
    daily amplitude), with those values stored; t None: no decay entry."""
    space = CompositeMemory._meta.keyspace((agent,))
    records = [CompositeMemory(agent_id=agent, importance=base, rank=rank, keep_score=fs) for base, _, _, rank, fs, _ in specs]
    CompositeMemory.save_many(records)
    client = CompositeMemory._meta.client
    cyclic, daily = CompositeMemory.rhythm.keys_in(space), CompositeMemory.rhythm.cycles[0].key
    with client.pipeline(transaction=False) as pipe:
        for record, (_, t, confidence, _, _, amplitude) in zip(records, specs):
            rid = record.db_key.record_id
            if t is None:
                pipe.zrem(CompositeMemory.relevance.keys_in(space).updated, rid)
            else:
                CompositeMemory.relevance.touch(record, pipeline=pipe, now=t)
                CompositeMemory.rhythm.touch(record, pipeline=pipe, now=t)
                CompositeMemory.rhythm.resolve_pressure(record, pipeline=pipe, now=t - DAY)
            if confidence is None:
                pipe.zrem(CompositeMemory.confidence.index_key(space), rid)
            else:
                pipe.zadd(CompositeMemory.confidence.index_key(space), {rid: confidence})
            pipe.zadd(cyclic.amplitude(daily), {rid: amplitude})
        pipe.execute()


def stored(agent: str) -> list[tuple[str, dict]]:
    """Every record of the partition with the values each signal reads, read exhaustively."""
    space = CompositeMemory._meta.keyspace((agent,))
    client = CompositeMemory._meta.client
    cyclic = CompositeMemory.rhythm.keys_in(space)
    zsets = {
        "t": CompositeMemory.relevance.keys_in(space).updated, "c": CompositeMemory.confidence.index_key(space),
        "rank": space.key("z", "rank"), "priority": priority_key(space), "ct": cyclic.updated,
        "cr": cyclic.resolved, **{c.key: cyclic.amplitude(c.key) for c in CompositeMemory.rhythm.cycles},
    }
    values = {name: {m.decode(): s for m, s in client.zrange(key, 0, -1, withscores=True)}
              for name, key in zsets.items()}
    rows = []
    for record in CompositeMemory.query.filter(agent_id=agent).no_track().all():
        rid = record.db_key.record_id
        rows.append((rid, {"base": record.importance, **{name: v.get(rid) for name, v in values.items()}}))
    return rows


def brute_force(rows: list[tuple[str, dict]], weights: dict[str, float], now: float) -> list[tuple[str, float]]:
    """Every record's composite from the formulas, best first, ties by id."""
    ranks = [v["rank"] for _, v in rows if v["rank"] is not None]
    low, high = (min(ranks), max(ranks)) if ranks else (0.0, 0.0)
    scored = []
    for rid, v in rows:
        amplitudes = [v[c.key] if v[c.key] is not None else c.amplitude for c in CompositeMemory.rhythm.cycles]
        signals = {
            "relevance": 0.0 if v["t"] is None else saturate(CompositeMemory.relevance.score(v["base"], v["t"], v["c"], now)),
            "confidence": 0.5 if v["c"] is None else v["c"],
            "rank": 0.0 if v["rank"] is None else min_max(v["rank"], low, high),
            "priority": 0.0 if v["priority"] is None else clamp01(v["priority"]),
            "rhythm": 0.0 if v["ct"] is None else logistic(
                CompositeMemory.rhythm.score(v["base"], v["ct"], v["cr"], amplitudes, now)),
        }
        scored.append((rid, composite(weights, signals)))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored


spec = st.tuples(
    st.sampled_from([0.0, 0.25, 1.0, 1.0, 2.5, 10.0]),
    st.one_of(st.none(), st.sampled_from([T0 - 30 * DAY, T0 - 2 * DAY, T0 - DAY, T0 - 0.5, T0, T0 + DAY])),
    st.one_of(st.none(), st.sampled_from([0.0, 0.2, 0.5, 0.9, 1.0])),
    st.one_of(st.none(), st.sampled_from([-3.0, 0.0, 1.0, 1.0, 7.5])),
    st.sampled_from([0.1, 0.5, 0.7, 0.9, 1.5]),
    st.sampled_from([0.0, 0.5, 1.0]),
)
weight_sets = st.dictionaries(st.sampled_from(SIGNALS), st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.5]), min_size=1)
examples = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@examples
@given(data=st.lists(spec, max_size=150), weights=weight_sets, n=st.one_of(st.integers(1, 5), st.integers(1, 160)),
       floor=st.one_of(st.none(), st.sampled_from([0.1, 0.5, 1.0])))
def test_top_matches_brute_force(any_db, data, weights, n, floor):
    agent = fresh_agent()
    populate(agent, data)
    rows = stored(agent)
    query = CompositeMemory.query.filter(agent_id=agent).no_track()
    for now in AS_OF:
        expected = [p for p in brute_force(rows, weights, now) if floor is None or p[1] >= floor][:n]
        top = query.composite_score(indexes=weights, limit=n, min_score=floor, as_of=now)
        assert [(r.db_key.record_id, r._composite_score) for r in top] == expected


def test_records_without_evidence_count_at_the_initial_confidence(any_db):
    """The confidence list holds only records with evidence: an unseen record may still hold c0."""
    agent = fresh_agent()
    specs = [(1.0, T0 - i * 60.0, (i % 5) / 10, None, 0.5, 0.5) for i in range(100)]
    populate(agent, specs + [(0.25, T0 - 90 * DAY, None, None, 0.5, 0.5)])  # last in every walked list
    weights = {"confidence": 1.0, "relevance": 0.01}
    top = CompositeMemory.query.filter(agent_id=agent).composite_score(indexes=weights, limit=1, as_of=T0)
    assert [(r.db_key.record_id, r._composite_score) for r in top] == brute_force(stored(agent), weights, T0)[:1]
    assert top[0]._signals["confidence"] == 0.5


def test_many_records_match_brute_force(any_db):
    """A partition large enough for several rounds of the walk, and every signal weighted."""
    agent = fresh_agent()
    specs = [(float(i % 7), T0 - (i * 7919 % 600) * 3600.0, (i * 31 % 11) / 10, float(i * 13 % 17),
              0.5 + (i % 5) / 5, (i % 3) / 2) for i in range(600)]
    populate(agent, specs)
    rows = stored(agent)
    query = CompositeMemory.query.filter(agent_id=agent).no_track()
    for weights in ({"relevance": 0.6, "confidence": 0.3}, dict.fromkeys(SIGNALS, 1.0), {"rhythm": 1.0}):
        for now in AS_OF:
            top = query.composite_score(indexes=weights, limit=10, as_of=now)
            assert [(r.db_key.record_id, r._composite_score) for r in top] == brute_force(rows, weights, now)[:10]


def script_rows(agent: str, weights: dict, n: int, now: float, min_score: float | None = None) -> list[str]:
    """The record ids composite_select.lua itself returns (before Python ranks them)."""
    search = composite_search(CompositeMemory.query.filter(agent_id=agent), weights, n, min_score, now)
    return [rid for rid, _ in parse_reply(search.plan, search.calls()[0].run(CompositeMemory._meta.client))[1]]


def test_equal_scores_come_by_id_and_the_script_returns_exactly_n(any_db):
    """Every record touched within the same 200 s, same importance and confidence: all tie (a
    touch counts as 0.01 days old). The script breaks the ties by id and returns n rows, not the
    tied partition; a day later the same records differ by age and rank by it."""
    agent = fresh_agent()
    specs = [(1.0, T0 - i * 0.5, 0.5, None, 0.5, 0.5) for i in range(400)]
    populate(agent, specs)
    rows = stored(agent)
    by_id = sorted(rid for rid, _ in rows)
    weights = {"relevance": 0.6, "confidence": 0.3}
    query = CompositeMemory.query.filter(agent_id=agent).no_track()
    for n in (1, 7, 50):
        top = query.composite_score(indexes=weights, limit=n, as_of=T0)
        expected = brute_force(rows, weights, T0)[:n]
        assert [(r.db_key.record_id, r._composite_score) for r in top] == expected
        assert [rid for rid, _ in expected] == by_id[:n]
        assert sorted(script_rows(agent, weights, n, T0)) == by_id[:n]
    later = T0 + DAY
    top = query.composite_score(indexes=weights, limit=10, as_of=later)
    assert [(r.db_key.record_id, r._composite_score) for r in top] == brute_force(rows, weights, later)[:10]


def test_ties_below_distinct_leaders_and_under_a_floor(any_db):
    """A few records score above a large tie: they lead, then the tie fills the page by id."""
    agent = fresh_agent()
    specs = [(2.0 if i % 97 == 0 else 1.0, T0 - i * 0.5, 0.5, None, 0.5, 0.5) for i in range(500)]
    populate(agent, specs)
    rows = stored(agent)
    weights = {"relevance": 1.0, "confidence": 0.5}
    query = CompositeMemory.query.filter(agent_id=agent).no_track()
    for n, floor in ((10, None), (3, None), (10, 0.1), (10, 2.0)):
        expected = [p for p in brute_force(rows, weights, T0) if floor is None or p[1] >= floor][:n]
        top = query.composite_score(indexes=weights, limit=n, min_score=floor, as_of=T0)
        assert [(r.db_key.record_id, r._composite_score) for r in top] == expected
        assert len(script_rows(agent, weights, n, T0, floor)) == len(expected)
    assert len(query.composite_score(indexes=weights, limit=10, as_of=T0)) == 10
