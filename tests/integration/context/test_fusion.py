"""Reciprocal rank fusion and convex score fusion against hand-computed values, the adaptive
weights, and Query.fuse."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, BM25Field, KeyField, Model, QueryException, StringField, ValidationError
from redmem.context._fusion import convex_fusion, distinct_ranks, reciprocal_rank_fusion
from redmem.context._query_weights import query_adaptive_weights
from redmem.model._dbkey import DbKey


def test_rrf_matches_hand_computed_scores():
    fused = reciprocal_rank_fusion({"keyword": ["x", "y", "z"], "vector": ["y", "w"]}, limit=None)
    assert fused == [
        ("y", math.fsum([1 / 62, 1 / 61])),  # 0.0325224748...
        ("x", 1 / 61),  # 0.0163934426...
        ("w", 1 / 62),  # 0.0161290322...
        ("z", 1 / 63),  # 0.0158730158...
    ]
    assert fused[0][1] == pytest.approx(0.032522474881015)


def test_rrf_weights_k_and_limit():
    lists = {"keyword": ["x", "y"], "vector": ["y", "v"], "graph": ["v"]}
    fused = reciprocal_rank_fusion(lists, k=1, weights={"keyword": 2, "vector": 0.5}, limit=2)
    # x: 2/2 = 1.0;  y: 2/3 + 0.5/2 = 0.91666;  v: 0.5/3 + 1/2 = 0.66666 (graph weighs 1 by default)
    assert fused == [("x", 1.0), ("y", pytest.approx(2 / 3 + 0.25))]
    only_keyword = reciprocal_rank_fusion(lists, weights={"vector": 0, "graph": 0}, limit=None)
    assert [item for item, _ in only_keyword] == ["x", "y"]  # v is only in lists of weight 0
    assert reciprocal_rank_fusion(lists, limit=0) == []
    assert reciprocal_rank_fusion({}, limit=5) == []


def test_rrf_ties_keep_first_seen_order():
    assert [i for i, _ in reciprocal_rank_fusion({"a": ["x", "y"], "b": ["y", "x"]})] == ["x", "y"]
    assert [i for i, _ in reciprocal_rank_fusion({"b": ["y", "x"], "a": ["x", "y"]})] == ["y", "x"]
    assert [i for i, _ in reciprocal_rank_fusion({"a": ["p", "q", "r"], "b": ["r", "q", "p"]})] == ["p", "r", "q"]


def test_repeated_items_keep_their_first_rank():
    assert distinct_ranks(["a", "a", "b", "a", "c"]) == {"a": 1, "b": 2, "c": 3}
    assert reciprocal_rank_fusion({"l": ["a", "a", "b"]}, limit=None) == [("a", 1 / 61), ("b", 1 / 62)]


@pytest.mark.parametrize("bad", [{"k": 0}, {"k": -1}, {"k": float("inf")}, {"k": True}, {"limit": -1},
                                 {"weights": {"a": -1}}, {"weights": {"a": float("nan")}}])
def test_rrf_rejects_bad_parameters(bad):
    with pytest.raises(ValidationError):
        reciprocal_rank_fusion({"a": ["x"]}, **bad)


items = st.lists(st.sampled_from("abcdefghij"), max_size=8)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["keyword", "vector", "graph"]), items),
       st.dictionaries(st.sampled_from(["keyword", "vector", "graph"]), st.floats(0, 3)),
       st.integers(1, 100))
def test_rrf_equals_the_formula_and_ignores_list_order(lists, weights, k):
    fused = reciprocal_rank_fusion(lists, k=k, weights=weights, limit=None)
    expected = {}
    for name, ranked in lists.items():
        seen = []
        for item in ranked:
            if item not in seen:
                seen.append(item)
                expected[item] = expected.get(item, 0.0) + weights.get(name, 1.0) / (k + len(seen))
    assert dict(fused) == pytest.approx({i: s for i, s in expected.items() if s > 0})
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    reordered = reciprocal_rank_fusion(dict(reversed(list(lists.items()))), k=k, weights=weights, limit=None)
    assert dict(reordered) == dict(fused)  # exact sums: the same floats whatever the list order


# -- convex score fusion ------------------------------------------------------------------------
SCORED = {"keyword": [("x", 4.0), ("y", 2.0)], "vector": [("y", 0.8), ("z", 0.4)]}


def test_convex_matches_hand_computed_scores():
    # each score over its list's best, averaged: x (4/4 + 0)/2, y (2/4 + 0.8/0.8)/2, z (0 + 0.4/0.8)/2
    assert convex_fusion(SCORED, limit=None) == [("y", 0.75), ("x", 0.5), ("z", 0.25)]
    # keyword 3, vector 1: x 3/4, y (3 * 0.5 + 1)/4, z 0.5/4
    assert convex_fusion(SCORED, weights={"keyword": 3, "vector": 1}, limit=2) == [("x", 0.75), ("y", 0.625)]
    only_keyword = convex_fusion(SCORED, weights={"vector": 0}, limit=None)
    assert only_keyword == [("x", 1.0), ("y", 0.5)]  # z is only in a list of weight 0
    assert convex_fusion(SCORED, limit=0) == [] and convex_fusion({}) == []


def test_convex_bounds_an_item_missing_from_a_cut_list_by_the_lists_lowest_score():
    # the keyword list was asked for 2 and holds 2: z, missing from it, scored at most 2/4 there
    cut = convex_fusion(SCORED, limits={"keyword": 2}, limit=None)
    assert cut == [("y", 0.75), ("x", 0.5), ("z", 0.5)]  # z ties x: first-seen order keeps x first
    assert convex_fusion(SCORED, limits={"keyword": 3}, limit=None)[2] == ("z", 0.25)  # ended early: 0
    # a list that holds its limit bounds its missing items for a bound below its best too
    assert dict(convex_fusion(SCORED, limits={"vector": 2}, limit=None))["x"] == pytest.approx((1 + 0.5) / 2)


def test_convex_counts_negative_scores_as_zero_and_repeats_at_their_first_score():
    fused = convex_fusion({"a": [("x", 2.0), ("y", -5.0), ("x", 1.0)], "b": [("y", 0.0)]}, limit=None)
    assert fused == [("x", 1.0), ("y", 0.0)]  # b's best is 0: it adds nothing, not even its weight


@pytest.mark.parametrize("bad", [{"weights": {"a": -1}}, {"weights": {"a": float("inf")}}, {"limit": -1},
                                 {"limits": {"a": 0}}, {"limits": {"a": 2.5}}, {"limits": {"a": True}}])
def test_convex_rejects_bad_parameters(bad):
    with pytest.raises(ValidationError):
        convex_fusion({"a": [("x", 1.0)]}, **bad)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), "1", None])
def test_convex_rejects_scores_that_are_not_finite_numbers(score):
    with pytest.raises(ValidationError, match="score of 'x' in list 'a'"):
        convex_fusion({"a": [("x", score)]})


scores = st.floats(0, 100).filter(lambda x: x == 0 or x >= 1e-6)  # no subnormals: scaling by 2**e is exact
scored_items = st.lists(st.tuples(st.sampled_from("abcdefgh"), scores), max_size=8)
names = st.sampled_from(["keyword", "vector", "graph"])


def convex_reference(lists, weights, limits):
    """The formula of convex_fusion's docstring, computed the plain way: {item: score}."""
    columns = []
    for name, pairs in lists.items():
        first = dict(reversed(pairs))  # an item repeated in a list keeps its first score
        cut = len(first) >= limits.get(name, len(first) + 1)
        columns.append((weights.get(name, 1.0), first, min(first.values()) if cut else 0.0,
                        max(first.values(), default=0.0)))
    found = {item for weight, first, _, _ in columns if weight > 0 for item in first}
    total = sum(weight for weight, _, _, top in columns if top > 0)
    return {item: sum(weight * first.get(item, missing) / top / total
                      for weight, first, missing, top in columns if top > 0) if total else 0.0 for item in found}


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(names, scored_items), st.dictionaries(names, st.floats(0, 3)),
       st.dictionaries(names, st.integers(1, 8)), st.integers(-3, 3))
def test_convex_equals_the_formula_and_ignores_each_lists_scale(lists, weights, limits, exponent):
    fused = convex_fusion(lists, weights=weights, limits=limits, limit=None)
    assert dict(fused) == pytest.approx(convex_reference(lists, weights, limits))
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    scaled = {name: [(item, score * 2.0 ** exponent) for item, score in pairs] for name, pairs in lists.items()}
    assert convex_fusion(scaled, weights=weights, limits=limits, limit=None) == fused  # exact: powers of 2


@pytest.mark.parametrize("text, vector", [
    ("what did I say about the trip", 1.0),
    ("where do we keep our Passwords", 1.0),   # first person wins over a capitalised word
    ("my meeting on 3 May", 1.0),
    ('what is "project falcon"', 0.0),
    ("the budget for Q3", 0.0),
    ("notes from 2024-05-01", 0.0),
    ("plans for March", 0.0),
    ("what does Alice like", 0.0),
    ("Alice likes what", 1.0),                  # only the initial word is capitalised
    ("it rained. Then what happened", 1.0),     # a sentence's first word is initial too
    ("how does deployment work", 1.0),
    ("don't forget the keys", 1.0),             # an apostrophe is not a quote
    ("around which US holiday did Maria travel", 0.0),  # "US" is the country, not "us"
    ("is the US office open", 0.0),
    ("WHAT DID WE DO LAST WEEK", 1.0),          # all in capitals: "WE" is still "we"
    ("I told Alice", 1.0),
    ("", 1.0),
])
def test_query_adaptive_weights(text, vector):
    assert query_adaptive_weights(text) == {"keyword": 1.0, "vector": vector, "graph": 1.0}


class FusionMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()


def test_fuse_returns_records_with_scores_and_ranks(any_db):
    a = [FusionMemory.create(agent_id="a", content=f"m{i}") for i in range(4)]
    other = FusionMemory.create(agent_id="b", content="elsewhere")
    fused = FusionMemory.query.filter(agent_id="a").fuse(
        keyword=[a[0], a[1], other, a[2]],
        vector=[a[2].memory_id, a[1].memory_id, "no-such-id"],
        graph=[a[3].db_key],
        weights={"graph": 0.5},
    )
    expected = {
        "m1": 1 / 62 + 1 / 62, "m2": 1 / 63 + 1 / 61, "m0": 1 / 61, "m3": 0.5 / 61,
    }
    assert [m.content for m in fused] == ["m2", "m1", "m0", "m3"]
    assert [m._rrf_score for m in fused] == pytest.approx([expected[m.content] for m in fused])
    assert fused[0]._rrf_ranks == {"keyword": 3, "vector": 1}  # the other tenant's record takes no rank
    assert fused[1] is a[1]  # records passed in come back as they are
    assert all(m.agent_id == "a" for m in fused)


def test_fuse_needs_the_partition_and_known_items(any_db):
    with pytest.raises(QueryException, match="partition"):
        FusionMemory.query.fuse(keyword=["x"])
    with pytest.raises(QueryException, match="DbKeys or record ids"):
        FusionMemory.query.filter(agent_id="a").fuse(keyword=[FusionMemory(agent_id="a", content="unsaved")])
    assert FusionMemory.query.filter(agent_id="a").fuse(keyword=[], limit=3) == []


class FusionNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


def test_fuse_takes_redis_key_score_pairs_as_popoto_gives_them(any_db):
    a = [FusionMemory.create(agent_id="a", content=f"m{i}") for i in range(3)]
    other = FusionMemory.create(agent_id="b", content="elsewhere")
    keyword = [(a[0].db_key.redis_key, 9.5), (other.db_key.redis_key, 8.0), (a[1].db_key.redis_key, 7.25)]
    vector = [(a[1].db_key.redis_key, 0.9), (a[2].memory_id, 0.8), (a[0].db_key, 0.1)]
    fused = FusionMemory.query.filter(agent_id="a").fuse(keyword=keyword, vector=vector)
    assert [m.content for m in fused] == ["m1", "m0", "m2"]  # m1: 1/62 + 1/61, m0: 1/61 + 1/63
    assert [m._rrf_score for m in fused] == pytest.approx([1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 62])
    assert fused[0]._rrf_ranks == {"keyword": 2, "vector": 1}  # the other tenant's key takes no rank
    same = FusionMemory.query.filter(agent_id="a").fuse(keyword=[a[0], a[1]], vector=[a[1], a[2], a[0]])
    assert [(m.content, m._rrf_score) for m in same] == [(m.content, m._rrf_score) for m in fused]


def test_fuse_takes_what_a_bm25_search_returns(any_db):
    notes = [FusionNote.create(agent_id="a", content=text) for text in
             ["invoice paid in march", "invoice overdue", "standup at ten"]]
    query = FusionNote.query.filter(agent_id="a")
    found = FusionNote.content_bm25.search(query.partition(), "invoice")
    as_keys = [(DbKey(query.partition(), record_id).redis_key, score) for record_id, score in found.ranked]
    from_result = query.fuse(keyword=found, limit=5)
    assert [n._saved_key for n in from_result] == [DbKey(query.partition(), i) for i, _ in found.ranked]
    assert {n.content for n in from_result} == {notes[0].content, notes[1].content}
    for lists in ({"keyword": found.ranked}, {"keyword": as_keys}):
        assert [n.content for n in query.fuse(**lists, limit=5)] == [n.content for n in from_result]


def test_fuse_refuses_the_key_of_another_models_record(any_db):
    note = FusionNote.create(agent_id="a", content="x")
    with pytest.raises(QueryException, match="another model"):
        FusionMemory.query.filter(agent_id="a").fuse(keyword=[(note.db_key.redis_key, 1.0)])
    with pytest.raises(QueryException, match="Redis keys"):
        FusionMemory.query.filter(agent_id="a").fuse(keyword=[(1.0, "x")])

