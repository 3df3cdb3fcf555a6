"""CoOccurrenceField: links, caps, pruning, weakening, propagation over known graphs, deletes, concurrency."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import all_keys
from redmem import AutoKeyField, KeyField, Model, RecordNotFound, StringField, ValidationError
from redmem.fields import CoOccurrenceField, Entity
from redmem.fields._cooccurrence import propagation_weights, rank_weight, weight_rank
from redmem.store._aio import is_cluster


class CooccurrenceMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    associations = CoOccurrenceField(partition_by="agent_id")


class Hub(Model):
    """Unpartitioned, directed, at most three edges per node."""

    name = KeyField()
    links = CoOccurrenceField(symmetric=False, max_edges=3)


class Topic(Model):
    """Unpartitioned and symmetric: entity-only calls need no partition."""

    name = KeyField()
    related = CoOccurrenceField(max_edges=3)


E = Entity


def names(pairs):
    return [(node.name if isinstance(node, Entity) else node.record_id, weight) for node, weight in pairs]


def graph_texts(client, graph) -> str:
    """Everything the graph's keys hold, as one string (to look for a node id)."""
    w, adj, inbound, degrees = graph.keys.listed()
    parts = [k.decode() for key in (w, degrees) for k in client.hkeys(key)]
    parts += [m.decode() for key in (adj, inbound) for m in client.zrange(key, 0, -1)]
    return "\n".join(parts)


# -- pure functions ---------------------------------------------------------------------------
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_rank_order_is_weight_descending_and_invertible(a, b):
    assert (weight_rank(a) < weight_rank(b)) == (a > b)
    assert rank_weight(weight_rank(a)) == a


#: S-A 0.8, S-B 0.4, S-E 0.4, A-C 0.2, B-C 1.0, C-D 0.9 (undirected)
KNOWN = {("S", "A"): 0.8, ("S", "B"): 0.4, ("S", "E"): 0.4, ("A", "C"): 0.2, ("B", "C"): 1.0, ("C", "D"): 0.9}


def adjacency(edges):
    out: dict = {}
    for (a, b), w in edges.items():
        out.setdefault(a, {})[b] = w
        out.setdefault(b, {})[a] = w
    return out


# depth 1: A = 0.5*0.8, B = E = 0.5*0.4. depth 2: C = max(0.4*0.5*0.2, 0.2*0.5*1.0) = 0.1 (via B).
# depth 3: D = 0.1*0.5*0.9 = 0.045. B and E tie at 0.2: node id order.
EXPECTED = {
    0: [],
    1: [("A", 0.4), ("B", 0.2), ("E", 0.2)],
    2: [("A", 0.4), ("B", 0.2), ("E", 0.2), ("C", 0.1)],
    3: [("A", 0.4), ("B", 0.2), ("E", 0.2), ("C", 0.1), ("D", 0.045)],
}


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_reference_propagation_on_a_known_graph(depth):
    got = propagation_weights(adjacency(KNOWN), ["S"], depth, 0.5, 0.01)
    ordered = sorted(got.items(), key=lambda item: (-item[1], item[0]))
    assert ordered == [(n, pytest.approx(w, abs=1e-15)) for n, w in EXPECTED[depth]]


# -- against Redis ----------------------------------------------------------------------------
@pytest.fixture
def known(any_db):
    graph = CooccurrenceMemory.associations.graph(agent_id="a")
    for (a, b), w in KNOWN.items():
        graph.link(E(a), E(b), initial_weight=w)
    return graph


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_propagation_weights_on_a_known_graph(known, depth):
    got = names(known.propagate([E("S")], depth=depth))
    assert got == [(n, pytest.approx(w, abs=1e-15)) for n, w in EXPECTED[depth]]


def test_propagation_threshold_is_inclusive_and_cuts(known):
    assert names(known.propagate([E("S")], depth=3, threshold=0.1)) == [
        ("A", pytest.approx(0.4)), ("B", pytest.approx(0.2)), ("E", pytest.approx(0.2)), ("C", pytest.approx(0.1)),
    ]
    assert [n for n, _ in names(known.propagate([E("S")], depth=3, threshold=0.11))] == ["A", "B", "E"]
    assert names(known.propagate([E("S")], depth=3, threshold=0.5)) == []


def test_propagation_from_several_seeds_keeps_the_max_and_drops_seeds(known):
    got = dict(names(known.propagate([E("S"), E("C")], depth=1)))
    # from C: B = 0.5*1.0, D = 0.5*0.9, A = max(0.5*0.8 from S, 0.5*0.2 from C)
    assert got == {"A": pytest.approx(0.4), "B": 0.5, "D": 0.45, "E": pytest.approx(0.2)}
    assert known.propagate([], depth=2) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    edges=st.dictionaries(
        st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefg")).filter(lambda p: p[0] < p[1]),
        st.floats(0.001, 1.0), max_size=15,
    ),
    seeds=st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=3),
    depth=st.integers(0, 4),
    decay=st.floats(0.1, 1.0),
    threshold=st.floats(0.0, 0.3),
)
def test_lua_propagation_matches_the_reference_exactly(any_db, edges, seeds, depth, decay, threshold):
    graph = CooccurrenceMemory.associations.graph(agent_id="h")
    any_db.delete(*graph.keys.listed())
    for (a, b), w in edges.items():
        graph.link(E(a), E(b), initial_weight=w)
    expected = propagation_weights(adjacency(edges), seeds, depth, decay, threshold)
    got = graph.propagate([E(s) for s in seeds], depth=depth, decay_per_hop=decay, threshold=threshold)
    assert dict(names(got)) == expected
    assert [w for _, w in got] == sorted((w for _, w in got), reverse=True)


def test_link_keeps_an_existing_weight_and_refuses_self_loops(any_db):
    one, two = (CooccurrenceMemory.create(agent_id="a", content=c) for c in ("one", "two"))
    assert CooccurrenceMemory.associations.link(one, two) == 0.1
    assert CooccurrenceMemory.associations.link(two, one, initial_weight=0.9) == 0.1
    assert names(CooccurrenceMemory.associations.get_linked(two)) == [(one.db_key.record_id, 0.1)]
    with pytest.raises(ValidationError, match="self loops"):
        CooccurrenceMemory.associations.link(one, one.db_key)
    with pytest.raises(ValidationError):
        CooccurrenceMemory.associations.link(one, two, initial_weight=0)


def test_strengthen_is_capped_at_one(any_db):
    graph = Topic.related.graph()
    assert graph.strengthen(E("x"), E("y"), delta=0.3) == 0.3  # created from 0
    for _ in range(5):
        weight = graph.strengthen(E("x"), E("y"), delta=0.3)
    assert weight == 1.0
    assert names(graph.get_linked(E("y"))) == [("x", 1.0)]


def test_unlink_and_weaken_all(any_db):
    graph = Topic.related.graph()
    graph.link(E("x"), E("y"), initial_weight=0.5)
    graph.link(E("x"), E("z"), initial_weight=0.00104)
    assert graph.weaken_all(E("x")) == 1  # 0.00104 * 0.95 < 0.001: dropped
    assert names(graph.get_linked(E("y"))) == [("x", pytest.approx(0.475, abs=1e-15))]
    assert graph.get_linked(E("z"), min_weight=0) == []
    assert graph.weaken_all(E("y"), factor=0.5) == 0
    assert names(graph.get_linked(E("x"))) == [("y", pytest.approx(0.2375, abs=1e-15))]
    assert graph.unlink(E("y"), E("x")) is True
    assert graph.unlink(E("x"), E("y")) is False
    assert graph.get_linked(E("x"), min_weight=0) == []
    assert all_keys(any_db) == set()


def test_get_linked_orders_filters_and_limits(any_db):
    graph = CooccurrenceMemory.associations.graph(agent_id="a")
    for name, weight in [("b", 0.2), ("a", 0.2), ("c", 0.05), ("d", 0.001)]:
        graph.link(E("hub"), E(name), initial_weight=weight)
    assert names(graph.get_linked(E("hub"))) == [("a", 0.2), ("b", 0.2), ("c", 0.05)]
    assert names(graph.get_linked(E("hub"), min_weight=0.05)) == [("a", 0.2), ("b", 0.2), ("c", 0.05)]
    assert names(graph.get_linked(E("hub"), min_weight=0.0, limit=2)) == [("a", 0.2), ("b", 0.2)]
    assert names(graph.get_linked(E("hub"), min_weight=0.0))[-1] == ("d", 0.001)
    assert graph.get_linked(E("hub"), limit=0) == []


def test_each_node_keeps_its_max_edges_strongest(any_db):
    graph = Topic.related.graph()
    for name, weight in [("a", 0.5), ("b", 0.1), ("c", 0.3), ("d", 0.2), ("e", 0.4)]:
        graph.link(E("hub"), E(name), initial_weight=weight)
    assert names(graph.get_linked(E("hub"), min_weight=0)) == [("a", 0.5), ("e", 0.4), ("c", 0.3)]
    assert graph.get_linked(E("b"), min_weight=0) == graph.get_linked(E("d"), min_weight=0) == []
    assert graph.link(E("hub"), E("f"), initial_weight=0.05) == 0.0  # weakest: pruned at once
    assert graph.strengthen(E("hub"), E("c"), delta=0.6) == pytest.approx(0.9)
    assert [n for n, _ in names(graph.get_linked(E("hub")))] == ["c", "a", "e"]


def test_directed_edges_and_pruning(any_db):
    graph = Hub.links.graph()
    graph.link(E("a"), E("b"), initial_weight=0.3)
    assert names(graph.get_linked(E("a"))) == [("b", 0.3)]
    assert graph.get_linked(E("b")) == []
    for name, weight in [("c", 0.1), ("d", 0.2), ("e", 0.4)]:
        graph.link(E("a"), E(name), initial_weight=weight)
    assert [n for n, _ in names(graph.get_linked(E("a")))] == ["e", "b", "d"]
    assert "e:c" not in graph_texts(any_db, graph)


def test_directed_weaken_and_unlink_leave_the_reverse_edge_alone(any_db):
    field = Hub.links  # unpartitioned: calls naming only entities need no partition
    field.link(E("a"), E("b"), initial_weight=0.5)
    field.link(E("b"), E("a"), initial_weight=0.2)
    assert field.weaken_all(E("a"), factor=0.5) == 0
    assert names(field.get_linked(E("a"))) == [("b", 0.25)]
    assert names(field.get_linked(E("b"))) == [("a", 0.2)]
    assert field.unlink(E("b"), E("a")) is True
    assert names(field.get_linked(E("a"))) == [("b", 0.25)]
    assert field.weaken_all(E("a"), factor=0.0) == 1
    assert all_keys(any_db) == set()


def test_deleting_a_record_removes_its_edges_both_ways(any_db):
    doomed, kept, other = (CooccurrenceMemory.create(agent_id="a", content=c) for c in ("doomed", "kept", "other"))
    field = CooccurrenceMemory.associations
    field.link(doomed, kept, initial_weight=0.4)
    field.link(other, doomed, initial_weight=0.3)
    field.link(doomed, E("Paris"), initial_weight=0.2)
    field.link(kept, E("Paris"))
    graph = field.graph(agent_id="a")
    node = "r:" + doomed.db_key.record_id
    assert node in graph_texts(any_db, graph)
    doomed.delete()
    assert node not in graph_texts(any_db, graph)
    assert names(field.get_linked(kept)) == [("Paris", 0.1)]
    assert field.get_linked(other) == []
    assert names(graph.get_linked(E("Paris"))) == [(kept.db_key.record_id, 0.1)]
    with pytest.raises(RecordNotFound, match="not stored"):
        field.link(doomed.db_key, kept)
    assert names(field.get_linked(kept)) == [("Paris", 0.1)]


def test_deleting_a_record_removes_incoming_directed_edges(any_db):
    target, source = Hub.create(name="target"), Hub.create(name="source")
    Hub.links.link(source, target)
    Hub.links.link(target, E("x"))
    target.delete()
    assert Hub.links.get_linked(source) == []
    graph = Hub.links.graph()
    assert "r:target" not in graph_texts(any_db, graph)
    assert graph_texts(any_db, graph) == ""


def test_nodes_are_scoped_to_their_partition_and_named_without_collisions(any_db):
    mine = CooccurrenceMemory.create(agent_id="a", content="mine")
    theirs = CooccurrenceMemory.create(agent_id="b", content="theirs")
    with pytest.raises(ValidationError, match="different partitions"):
        CooccurrenceMemory.associations.link(mine, theirs)
    with pytest.raises(ValidationError, match="only entities"):
        CooccurrenceMemory.associations.link(E("x"), E("y"))
    with pytest.raises(ValidationError, match="Entity"):
        CooccurrenceMemory.associations.link(mine, "entity:Paris")
    with pytest.raises(ValidationError, match="partition"):
        CooccurrenceMemory.associations.graph(agent_id="b").link(mine, E("x"))
    tricky = [mine.db_key.record_id, "r:" + mine.db_key.record_id, "a b", "{x}:*", ""]
    for name in tricky:
        CooccurrenceMemory.associations.link(mine, E(name))
    CooccurrenceMemory.associations.graph(agent_id="b").link(E("a b"), E("c"))
    linked = CooccurrenceMemory.associations.get_linked(mine)
    assert sorted(node.name for node, _ in linked) == sorted(tricky)
    assert all(isinstance(node, Entity) for node, _ in linked)
    assert names(CooccurrenceMemory.associations.graph(agent_id="a").get_linked(E("a b"))) == [(mine.db_key.record_id, 0.1)]


def test_edge_writes_queue_into_the_callers_pipeline(any_db):
    one, two, gone = (CooccurrenceMemory.create(agent_id="a", content=c) for c in ("one", "two", "gone"))
    gone.delete()
    field = CooccurrenceMemory.associations
    with any_db.pipeline(transaction=False) as pipe:
        assert field.link(one, two, initial_weight=0.3, pipeline=pipe) is None
        field.strengthen(one, two, delta=0.2, pipeline=pipe)
        field.link(one, E("x"), pipeline=pipe)
        field.link(one, gone.db_key, pipeline=pipe)
        field.weaken_all(one, factor=0.5, pipeline=pipe)
        field.unlink(one, E("x"), pipeline=pipe)
        assert field.get_linked(one) == []  # nothing sent yet
        replies = pipe.execute()
    assert replies == [b"0.3", b"0.5", b"0.1", None, 0, 1]
    assert names(field.get_linked(one)) == [(two.db_key.record_id, 0.25)]


def test_records_hydrates_record_nodes(any_db):
    one, two = (CooccurrenceMemory.create(agent_id="a", content=c) for c in ("one", "two"))
    graph = CooccurrenceMemory.associations.graph(agent_id="a")
    graph.link(one, two, initial_weight=0.6)
    graph.link(one, E("x"), initial_weight=0.8)
    hydrated = graph.records(graph.get_linked(one))
    assert [(r.content, w) for r, w in hydrated] == [("two", 0.6)]


# -- concurrency ------------------------------------------------------------------------------
def _url(request, client) -> str:
    return request.getfixturevalue("cluster_url" if is_cluster(client) else "redis_url")


def _strengthen_many(url: str, prefix: str, start: Any, highest: Any) -> None:
    """Worker process: its own connection, then 50 strengthens of two edges once all workers are up."""
    redmem.connect(url)
    redmem.configure(key_prefix=prefix)
    graph = Topic.related.graph()
    start.wait()
    seen = 0.0
    for _ in range(50):
        seen = max(seen, graph.strengthen(E("x"), E("capped"), delta=0.004))
        graph.strengthen(E("x"), E("summed"), delta=0.001)
    highest.put(seen)


def test_concurrent_strengthen_never_exceeds_the_cap_and_loses_nothing(any_db, request):
    graph = Topic.related.graph()
    graph.link(E("x"), E("capped"), initial_weight=0.1)
    graph.link(E("x"), E("summed"), initial_weight=0.1)
    forked = multiprocessing.get_context("fork")  # children start without re-importing redmem
    start, highest = forked.Barrier(8), forked.SimpleQueue()
    args = (_url(request, any_db), redmem.store.settings().key_prefix, start, highest)
    procs = [forked.Process(target=_strengthen_many, args=args) for _ in range(8)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 8
    assert max(highest.get() for _ in procs) <= 1.0
    # 8 x 50 x 0.004 = 1.6 over the cap; 8 x 50 x 0.001 = 0.4, every increment kept
    assert names(graph.get_linked(E("x"))) == [("capped", 1.0), ("summed", pytest.approx(0.5, abs=1e-9))]


# -- weighted degrees and strengthen without creating -------------------------------------------
def reference_degrees(client, graph) -> dict[str, float]:
    """Every node's weighted degree summed from the weight hash (both ends of every edge)."""
    degrees: dict[str, float] = {}
    for pair, weight in client.hgetall(graph.keys.weights).items():
        for node in pair.decode().split(" "):
            degrees[node] = degrees.get(node, 0.0) + float(weight)
    return degrees


def stored_degrees(client, graph) -> dict[str, float]:
    return {node.decode(): float(value) for node, value in client.hgetall(graph.keys.degrees).items()}


operations = st.lists(st.tuples(
    st.sampled_from(["link", "strengthen", "reinforce", "unlink", "weaken", "remove"]),
    st.integers(0, 4), st.integers(0, 4), st.floats(0.01, 1.0)), max_size=25)


@pytest.mark.parametrize("model", [Topic, Hub])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_degree_sums_follow_every_graph_operation(any_db, model, ops):
    field = model._meta.fields_of(CoOccurrenceField)[0]
    graph = field.graph()
    any_db.delete(*graph.keys.listed())
    records = [model.create(name=f"n{i}") for i in range(5)]
    for op, a, b, amount in ops:
        if op == "remove":
            records[a].delete()
            records[a] = model.create(name=f"n{a}")
        elif a == b:
            continue
        elif op == "link":
            graph.link(records[a], records[b], amount)
        elif op in ("strengthen", "reinforce"):
            graph.strengthen(records[a], records[b], amount, create=op == "strengthen")
        elif op == "unlink":
            graph.unlink(records[a], records[b])
        else:
            graph.weaken_all(records[a], amount)
    expected, stored = reference_degrees(any_db, graph), stored_degrees(any_db, graph)
    assert stored.keys() == expected.keys()  # a node without edges has no entry
    for node, degree in expected.items():
        assert stored[node] == pytest.approx(degree, abs=1e-9)
    assert graph.degrees(records) == [pytest.approx(expected.get(graph.node_id(r), 0.0), abs=1e-9) for r in records]


def test_strengthen_without_create_only_touches_existing_edges(any_db):
    graph = Topic.related.graph()
    assert graph.strengthen(E("x"), E("y"), delta=0.1, create=False) == 0.0
    assert not any_db.exists(*graph.keys.listed())
    graph.link(E("x"), E("y"), initial_weight=0.95)
    assert graph.strengthen(E("x"), E("y"), delta=0.1, create=False) == 1.0
    assert graph.degrees([E("x"), E("y"), E("z")]) == [1.0, 1.0, 0.0]
