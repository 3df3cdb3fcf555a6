"""Queries: key, range and tag filters, ordering, paging and partitions, against brute force."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import (
    AutoKeyField,
    Field,
    KeyField,
    Model,
    ModelException,
    QueryException,
    SortedField,
    StringField,
    TagField,
)
from redmem.model.query_methods import MissingQueryMethod


class QueryMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = SortedField(partition_by="agent_id")
    created = SortedField(type=datetime, partition_by="agent_id")
    tags = TagField()


class QuerySetting(Model):
    """Unpartitioned, with a composite key."""

    scope = KeyField()
    name = KeyField()
    value = StringField()
    tags = TagField()


@pytest.fixture
def memories(any_db):
    made = []
    for i in range(12):
        made.append(QueryMemory.create(
            agent_id="a" if i % 3 else "b", content=f"m{i}", importance=i % 5,
            created=datetime(2025, 1, 1 + i, tzinfo=UTC),
            tags=[["red"], ["blue"], ["red", "blue"], []][i % 4],
        ))
    return made


def contents(records):
    return [r.content for r in records]


def test_partition_filter_and_count(memories):
    assert QueryMemory.query.filter(agent_id="a").count() == 8
    assert QueryMemory.query.filter(agent_id="b").count() == 4
    assert QueryMemory.query.filter(agent_id="nobody").all() == []


def test_sorted_ranges(memories):
    q = QueryMemory.query.filter(agent_id="a")
    assert sorted(contents(q.filter(importance__gte=2, importance__lt=4))) == ["m2", "m7", "m8"]
    assert sorted(contents(q.filter(importance__gt=3))) == ["m4"]
    assert sorted(contents(q.filter(importance=1))) == ["m1", "m11"]
    assert sorted(contents(q.filter(importance__lte=0))) == ["m10", "m5"]
    jan5 = datetime(2025, 1, 5, tzinfo=UTC)
    assert sorted(contents(q.filter(created__lte=jan5))) == ["m1", "m2", "m4"]


def test_order_by_limit_offset(memories):
    q = QueryMemory.query.filter(agent_id="a").order_by("-importance")
    assert contents(q.limit(2)) == ["m4", "m8"]  # importance 4, then 3
    assert [m.importance for m in q] == sorted((m.importance for m in q), reverse=True)
    page1, page2 = q.limit(4).all(), q.limit(4, offset=4).all()
    assert contents(page1 + page2) == contents(q.all())
    ascending = QueryMemory.query.filter(agent_id="a").order_by("importance")
    assert [m.importance for m in ascending] == sorted(m.importance for m in ascending)


def test_queries_are_immutable(memories):
    base = QueryMemory.query.filter(agent_id="a")
    narrowed = base.filter(importance__gte=3)
    assert base.count() == 8 and narrowed.count() == 2
    assert base.limit(2).count() == 8  # count ignores the page


def test_tag_filters(memories):
    q = QueryMemory.query.filter(agent_id="a")
    assert sorted(contents(q.filter(tags="red"))) == ["m10", "m2", "m4", "m8"]
    assert sorted(contents(q.filter(tags__all=["red", "blue"]))) == ["m10", "m2"]
    assert sorted(contents(q.filter(tags__any=["red", "blue"]))) == ["m1", "m10", "m2", "m4", "m5", "m8"]


def test_partitioned_ranges_need_the_partition(memories):
    with pytest.raises(QueryException, match="need the partition"):
        QueryMemory.query.filter(importance__gte=1).all()
    with pytest.raises(QueryException, match="need the partition"):
        QueryMemory.query.order_by("importance").all()


def test_cross_partition_queries_fan_out(memories):
    assert QueryMemory.query.count() == 12
    assert sorted(contents(QueryMemory.query.filter(tags="blue"))) == ["m1", "m10", "m2", "m5", "m6", "m9"]
    everything = QueryMemory.query.all()
    assert QueryMemory.query.limit(5, offset=3).keys() == [m.db_key for m in everything][3:8]


def test_keys_without_hydration(memories):
    keys = QueryMemory.query.filter(agent_id="b").keys()
    assert len(keys) == 4 and all("{b}" in k.redis_key for k in keys)
    assert sorted(m.db_key for m in QueryMemory.query.filter(agent_id="b")) == sorted(keys)


def test_unknown_and_unindexed_fields_are_query_errors(db):
    with pytest.raises(QueryException, match="has no field 'colour'"):
        QueryMemory.query.filter(colour="red")
    with pytest.raises(QueryException, match="cannot filter QueryMemory on 'content'"):
        QueryMemory.query.filter(content="x")
    with pytest.raises(QueryException, match="only be ordered by a sorted field"):
        QueryMemory.query.order_by("content")
    with pytest.raises(QueryException, match="get\\(\\) needs exactly the key fields"):
        QueryMemory.query.get(agent_id="a")


def test_composite_keys_filter_on_part_of_the_key(any_db):
    for scope in ("user", "team"):
        for name in ("theme", "lang"):
            QuerySetting.create(scope=scope, name=name, value=f"{scope}-{name}", tags=[scope])
    assert sorted(s.value for s in QuerySetting.query.filter(name="theme")) == ["team-theme", "user-theme"]
    assert [s.value for s in QuerySetting.query.filter(scope="user", name="lang")] == ["user-lang"]
    assert QuerySetting.query.get(scope="team", name="lang").value == "team-lang"
    assert QuerySetting.query.filter(scope="user").filter(tags="team").count() == 0


def test_first_returns_one_record_or_none(memories):
    assert QueryMemory.query.filter(agent_id="b").order_by("importance").first().content == "m0"
    assert QueryMemory.query.filter(agent_id="zzz").first() is None


_examples = itertools.count()
rows = st.lists(
    st.tuples(st.integers(-3, 3), st.sets(st.sampled_from("xyz"), max_size=3)), max_size=25
)
bounds = st.tuples(st.sampled_from(["gt", "gte", "lt", "lte", "eq"]), st.integers(-3, 3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=rows, conditions=st.lists(bounds, max_size=2), tag=st.one_of(st.none(), st.sampled_from("xyz")),
       descending=st.booleans(), limit=st.one_of(st.none(), st.integers(0, 6)), offset=st.integers(0, 4))
def test_queries_match_brute_force(any_db, rows, conditions, tag, descending, limit, offset):
    agent = f"h{next(_examples)}"
    made = [QueryMemory.create(agent_id=agent, content=str(i), importance=score, tags=list(tags))
            for i, (score, tags) in enumerate(rows)]
    ops = {"gt": float.__gt__, "gte": float.__ge__, "lt": float.__lt__, "lte": float.__le__, "eq": float.__eq__}
    expected = [m for m in made
                if all(ops[op](float(m.importance), float(v)) for op, v in conditions)
                and (tag is None or tag in m.tags)]
    expected.sort(key=lambda m: m.memory_id)
    expected.sort(key=lambda m: m.importance, reverse=descending)
    query = QueryMemory.query.filter(agent_id=agent, **({"tags": tag} if tag else {}))
    for op, value in conditions:
        query = query.filter(**{f"importance__{op}": value})
    query = query.order_by(("-" if descending else "") + "importance")
    if limit is not None:
        query = query.limit(limit, offset)
        page = expected[offset: offset + limit]
    else:
        page = expected
    assert [m.memory_id for m in query.all()] == [m.memory_id for m in page]
    assert query.count() == len(expected)


def loudest(query, n=1):
    """A toy search: the partition's records with the longest content."""
    records = query.model.query.filter(agent_id=query.partition().partition_values[0]).all()
    return sorted(records, key=lambda m: -len(m.content))[:n]


class LoudnessIndex(Field):
    """A toy primitive: stores nothing, offers ``loudest`` to its model's queries."""

    stored = False

    @classmethod
    def query_methods(cls):
        return {"loudest": loudest}


class QueryLoud(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    loudness = LoudnessIndex()


def test_primitives_can_add_query_methods(any_db):
    QueryLoud.create(agent_id="q", content="short")
    QueryLoud.create(agent_id="q", content="much longer text")
    assert [m.content for m in QueryLoud.query.filter(agent_id="q").loudest()] == ["much longer text"]
    with pytest.raises(QueryException, match="needs the partition"):
        QueryLoud.query.loudest()
    with pytest.raises(AttributeError):
        QueryLoud.query.no_such_method()


def test_a_query_offers_the_methods_of_its_own_models_fields_only():
    assert QueryLoud._meta.query_methods == {"loudest": loudest}
    assert "loudest" in dir(QueryLoud.query) and "loudest" not in dir(QueryMemory.query)
    assert {"fuse", "composite_score", "filter"} <= set(dir(QueryMemory.query))  # every model's, and the builder's
    assert QueryLoud.query.loudest.__func__ is loudest
    with pytest.raises(MissingQueryMethod, match="QueryMemory queries have no method 'loudest': it comes with "
                                                 "LoudnessIndex, which QueryMemory does not have") as missing:
        QueryMemory.query.loudest()
    assert isinstance(missing.value, AttributeError) and isinstance(missing.value, QueryException)
    assert not hasattr(QueryMemory.query, "loudest")
    with pytest.raises(MissingQueryMethod, match=r"no method 'keyword_search': it comes with BM25Field"):
        QueryMemory.query.filter(agent_id="a").keyword_search("x")
    with pytest.raises(AttributeError, match="no method 'no_such_method' .query methods: composite_score, fuse"):
        QueryMemory.query.no_such_method()


def test_model_classes_offer_query_methods_and_subclasses_inherit_them():
    class Rated(Model):
        item_id = KeyField()
        agent_id = KeyField(partition_by="agent_id")
        content = StringField()

        @classmethod
        def query_methods(cls):
            return {"loudest": loudest}

    class Subclass(Rated):
        pass

    assert Subclass._meta.query_methods == {"loudest": loudest}
    assert QueryLoud.query.loudest.__func__ is Subclass.query.loudest.__func__


def test_two_classes_offering_different_methods_under_one_name_are_refused():
    class Other(LoudnessIndex):
        @classmethod
        def query_methods(cls):
            return {"loudest": lambda query: []}

    with pytest.raises(ModelException, match="LoudnessIndex and Other both offer a different query method 'loudest'"):
        class Both(Model):
            key = KeyField()
            one = LoudnessIndex()
            two = Other()


def test_read_effects_ride_with_hydration_unless_no_track(any_db):
    class QueryCounted(Model):
        item_id = KeyField()
        owner = KeyField()
        rank = SortedField(partition_by="owner")

        @classmethod
        def queue_read_effects(cls, pipe, keys):
            for key in keys:
                pipe.incr(key.keyspace.key("reads", key.record_id))

    QueryCounted.create(item_id="1", owner="o", rank=1)
    reads = QueryCounted._meta.keyspace(("o",)).key("reads", "1")
    QueryCounted.query.filter(owner="o").all()
    QueryCounted.query.get(item_id="1", owner="o")
    assert any_db.get(reads) == b"2"
    QueryCounted.query.filter(owner="o").no_track().all()
    QueryCounted.query.no_track().get(item_id="1", owner="o")
    assert any_db.get(reads) == b"2"
