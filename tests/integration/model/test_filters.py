"""Metadata filters at retrieval time (``where=``): every path against a brute-force filter.

Each path is compared with the same search run without the filter and filtered afterwards in
Python (the brute force): the lexical, composite and vector top-k with ``where`` are exactly the
top-k of the matching records; the push scan and the graph expansion return exactly the
unfiltered answers that match; every assembled record matches. Bad filters fail before any
request is sent. Everything runs on the single server and on the cluster (``any_db``).
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import configured_embeddings
from redmem import (
    AutoKeyField,
    BM25Field,
    CoOccurrenceField,
    CyclicDecayField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    QueryException,
    SortedField,
    StringField,
    TagField,
)
from redmem.embeddings import HashingEmbeddings
from redmem.fields._composite import composite_search
from redmem.fields.search_protocol import run_search
from redmem.model._filters import compile_where
from redmem.recipes.context_assembler import ContextAssembler


class FiltersFact(Model):
    """Every filterable kind of field next to every path: ``kind`` a key field (indexed by value:
    the model has two non-partition key fields), ``importance`` sorted, ``tags`` tags.

    Local: no shared model has a value-indexed key field, a SortedField and a TagField.
    """

    memory_id = AutoKeyField()
    kind = KeyField()
    agent_id = KeyField()
    content = StringField()
    importance = SortedField(partition_by="agent_id")
    tags = TagField()
    salience = FloatField(default=0.0)
    rhythm = CyclicDecayField(base_score_field="salience", partition_by="agent_id")
    links = CoOccurrenceField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", partition_by="agent_id")


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(32)):
        yield


WORDS = ["deploy", "helm", "canary", "rollback", "freeze", "alert"]
KINDS = ["fact", "event", "plan"]
TAGS = ["ops", "db", "web"]
_agents = itertools.count()

records = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=5),   # content
        st.sampled_from(KINDS),
        st.integers(-2, 2),                                           # importance
        st.sets(st.sampled_from(TAGS), max_size=2),
        st.sampled_from([0.0, 1.0]),                                  # salience: 1.0 surfaces
    ),
    min_size=1, max_size=24,
)
ranges = st.lists(st.tuples(st.sampled_from(["gt", "gte", "lt", "lte", "eq"]), st.integers(-2, 2)), max_size=2)


@st.composite
def filters(draw):
    """A random ``where``: any of kind (= or __in), importance comparisons, tags (=, __any, __all)."""
    where = {}
    kind = draw(st.one_of(st.none(), st.sampled_from(KINDS), st.lists(st.sampled_from(KINDS), max_size=2)))
    if isinstance(kind, str):
        where["kind"] = kind
    elif kind is not None:
        where["kind__in"] = kind
    for op, value in draw(ranges):
        where[f"importance__{op}"] = value
    tag_op = draw(st.sampled_from([None, "eq", "any", "all"]))
    if tag_op == "eq":
        where["tags"] = draw(st.sampled_from(TAGS))
    elif tag_op is not None:
        where[f"tags__{tag_op}"] = draw(st.lists(st.sampled_from(TAGS), max_size=2))
    return where


def passes(record, where) -> bool:
    """The brute-force filter: ``where`` read field by field from the record itself."""
    compare = {"gt": float.__gt__, "gte": float.__ge__, "lt": float.__lt__, "lte": float.__le__,
               "eq": float.__eq__}
    for name, value in where.items():
        field, _, op = name.partition("__")
        have = getattr(record, field)
        if field == "importance":
            ok = compare[op or "eq"](float(have), float(value))
        elif field == "tags":
            ok = {"": value in have, "any": bool(set(value) & set(have)), "all": set(value) <= set(have)}[op]
        else:
            ok = have == value if not op else have in value
        if not ok:
            return False
    return True


def make(agent: str, rows) -> list[FiltersFact]:
    facts = [FiltersFact(agent_id=agent, kind=kind, content=" ".join(words), importance=importance, tags=sorted(tags),
                  salience=salience)
             for words, kind, importance, tags, salience in rows]
    FiltersFact.save_many(facts)
    return facts


def top(pairs, k):
    """Best first, ties by record id: the order every search answers in."""
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))[:k]


def same_ranking(found, expected):
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for (_, a), (_, b) in zip(found, expected))


HYPOTHESIS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- the server-side paths -------------------------------------------------------------------------
@HYPOTHESIS
@given(rows=records, where=filters(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       k=st.integers(1, 6))
def test_lexical_top_k_is_the_exact_top_k_of_the_matching_records(any_db, rows, where, words, k):
    agent = f"l{next(_agents)}"
    facts = {f._saved_key.record_id: f for f in make(agent, rows)}
    space, text, compiled = FiltersFact.query.filter(agent_id=agent).partition(), " ".join(words), compile_where(FiltersFact, where)
    every = FiltersFact.content_bm25.search(space, text, limit=len(facts), exhaustive=True).ranked
    expected = top([(i, s) for i, s in every if passes(facts[i], where)], k)
    for exhaustive in (False, True):
        same_ranking(FiltersFact.content_bm25.search(space, text, k, exhaustive, compiled).ranked, expected)
    hits = FiltersFact.query.filter(agent_id=agent).keyword_search(text, k, where=where)
    assert [h._saved_key.record_id for h in hits] == [i for i, _ in expected]


def test_a_filter_few_records_pass_scores_them_from_their_entries(any_db):
    """A filter that a quarter as many records pass as the query terms have postings or fewer:
    the search lists those records and scores each from its entry (no posting read), the exact
    top k with the scores a search of every posting gives them."""
    agent = f"l{next(_agents)}"
    facts = make(agent, [([WORDS[i % 6], WORDS[(i + 1) % 6], "deploy"], "plan" if i % 25 == 0 else "fact", 0, set(), 0.0)
                         for i in range(100)])
    space, where = FiltersFact.query.filter(agent_id=agent).partition(), {"kind": "plan"}
    every = FiltersFact.content_bm25.search(space, "deploy helm", limit=100, exhaustive=True).ranked
    kinds = {f._saved_key.record_id: f.kind for f in facts}
    found = FiltersFact.content_bm25.search(space, "deploy helm", 3, where=compile_where(FiltersFact, where))
    assert found.mode == "listed" and found.postings_read == 0
    same_ranking(found.ranked, top([(i, s) for i, s in every if kinds[i] == "plan"], 3))


@HYPOTHESIS
@given(rows=records, where=filters(), k=st.integers(1, 6))
def test_composite_top_k_is_the_exact_top_k_of_the_matching_records(any_db, rows, where, k):
    agent = f"c{next(_agents)}"
    facts = {f._saved_key.record_id: f for f in make(agent, rows)}
    query, weights = FiltersFact.query.filter(agent_id=agent), {"importance": 1.0, "rhythm": 0.5}
    every = run_search(any_db, composite_search(query, weights, len(facts), as_of=1e9))
    expected = top([(r.record_id, r.score) for r in every if passes(facts[r.record_id], where)], k)
    found = run_search(any_db, composite_search(query, weights, k, as_of=1e9, where=compile_where(FiltersFact, where)))
    same_ranking([(r.record_id, r.score) for r in found], expected)
    hits = query.composite_score(weights, k, as_of=1e9, where=where)
    assert [h._saved_key.record_id for h in hits] == [i for i, _ in expected]


@HYPOTHESIS
@given(rows=records, where=filters())
def test_push_scan_and_query_return_exactly_the_matching_records(any_db, rows, where):
    agent = f"p{next(_agents)}"
    facts = {f._saved_key.record_id: f for f in make(agent, rows)}
    space = FiltersFact.query.filter(agent_id=agent).partition()
    every = FiltersFact.rhythm.ranked(space, 1e9, 0.5, None)
    found = run_search(any_db, FiltersFact.rhythm.searcher(space, 1e9, 0.5, None, compile_where(FiltersFact, where)))
    same_ranking(found, [(i, s) for i, s in every if passes(facts[i], where)])
    listed = FiltersFact.query.filter(agent_id=agent, **where).keys()  # Query.filter speaks the same language
    assert [key.record_id for key in listed] == sorted(i for i, f in facts.items() if passes(f, where))


@HYPOTHESIS
@given(rows=records, where=filters(), edges=st.lists(st.tuples(st.integers(0, 23), st.integers(0, 23),
                                                          st.sampled_from([0.3, 0.6, 0.9])), max_size=30))
def test_graph_expansion_reaches_exactly_the_matching_records(any_db, rows, where, edges):
    agent = f"g{next(_agents)}"
    made = make(agent, rows)
    facts = {f._saved_key.record_id: f for f in made}
    graph = FiltersFact.links.graph(agent_id=agent)
    for a, b, weight in edges:
        if a % len(made) != b % len(made):
            graph.strengthen(made[a % len(made)], made[b % len(made)], weight)
    seeds = made[:2]
    every = graph.propagate(seeds, depth=3)
    found = run_search(any_db, graph.searcher(seeds, depth=3, where=compile_where(FiltersFact, where)))
    expected = [(node, w) for node, w in every if passes(facts[node.record_id], where)]
    assert found == expected


# -- the vector path and the whole assembly ------------------------------------------------------
@HYPOTHESIS
@given(rows=records, where=filters(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       k=st.integers(1, 6))
def test_vector_top_k_is_the_exact_top_k_of_the_matching_records(any_db, rows, where, words, k):
    agent = f"v{next(_agents)}"
    facts = {f._saved_key.record_id: f for f in make(agent, rows)}
    space, text = FiltersFact.query.filter(agent_id=agent).partition(), " ".join(words)
    every = run_search(any_db, FiltersFact.embedding.searcher(space, text, len(facts)))
    expected = top([(i, s) for i, s in every if passes(facts[i], where)], k)
    found = run_search(any_db, FiltersFact.embedding.searcher(space, text, k, compile_where(FiltersFact, where)))
    same_ranking(found, expected)


@pytest.mark.filterwarnings("ignore:.*falling back to composite:RuntimeWarning")
@HYPOTHESIS
@given(rows=records, where=filters(), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
       mode=st.sampled_from(["hybrid", "lexical", "semantic", "composite"]))
def test_every_assembled_record_matches_the_filter(any_db, rows, where, words, mode):
    agent = f"a{next(_agents)}"
    made = make(agent, rows)
    graph = FiltersFact.links.graph(agent_id=agent)
    for a, b in itertools.pairwise(made):
        graph.link(a, b, 0.8)
    assembler = ContextAssembler(FiltersFact, max_items=5, retrieval_mode=mode, score_weights={"importance": 1.0})
    result = assembler.assemble(" ".join(words), now=1e9, where=where, agent_id=agent)
    assert all(passes(record, where) for record in result.records)
    unfiltered = assembler.assemble(" ".join(words), now=1e9, agent_id=agent)
    if not any(passes(f, where) for f in made):
        assert result.records == []
    elif all(passes(f, where) for f in made):
        assert [r._saved_key for r in result.records] == [r._saved_key for r in unfiltered.records]


def test_a_filter_costs_no_round_trip(any_db, sent):
    agent = f"r{next(_agents)}"
    make(agent, [([WORDS[i % 6], WORDS[(i * 5) % 6]], KINDS[i % 3], i % 5 - 2, {TAGS[i % 3]}, float(i % 4 == 0))
                 for i in range(60)])
    assembler = ContextAssembler(FiltersFact, max_items=5)
    where = {"kind__in": ["fact", "plan"], "importance__gte": 0, "tags__any": ["ops", "db"]}
    counts = []
    for condition in (None, where):
        assembler.assemble("deploy helm", where=condition, agent_id=agent)  # warm: scripts and vectors
        sent.clear()
        result = assembler.assemble("deploy helm", where=condition, agent_id=agent)
        counts.append(len(sent))
        assert result.records
    assert counts[1] <= min(counts[0], 3)  # retrieve, load, post-effects (fewer when nothing needs one)
    assert all(passes(record, where) for record in result.records)


def test_a_filter_stays_inside_the_partition(any_db):
    rows = [(["deploy", word], "fact", 1, {"ops"}, 1.0) for word in WORDS[1:4]]
    make("mine", rows)
    make("theirs", rows)
    where = {"kind": "fact", "tags": "ops", "importance__gte": 0}
    space = FiltersFact.query.filter(agent_id="mine").partition()
    keys: list[str] = []
    compile_where(FiltersFact, where).plan(space, keys)
    assert keys and all(key.startswith(space.base + ":") for key in keys)
    result = ContextAssembler(FiltersFact, max_items=10).assemble("deploy", where=where, agent_id="mine")
    assert len(result.records) == 3 and {r.agent_id for r in result.records} == {"mine"}


# -- bad filters ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("where", "error"), [
    ({"colour": "red"}, "no field 'colour'"),
    ({"content": "x"}, "'content'.*indexed fields only"),
    ({"importance__any": [1]}, "'importance__any'"),
    ({"tags__gte": 1}, "'tags__gte'"),
    ({"importance__gte": "high"}, "'importance__gte'"),
    ({"tags__any": 5}, "'tags__any'"),
    ({"kind__in": "fact"}, "'kind__in'"),
    ({"kind": 3}, "'kind'"),
    ({"agent_id": "other"}, "partition field 'agent_id'"),
    (["kind", "fact"], "where must be a dict"),
])
def test_a_bad_filter_fails_before_any_request(db, sent, where, error):
    make("x", [(["deploy"], "fact", 1, {"ops"}, 0.0)])
    assembler = ContextAssembler(FiltersFact)
    sent.clear()
    with pytest.raises(QueryException, match=error):
        assembler.assemble("deploy", where=where, agent_id="x")
    with pytest.raises(QueryException, match=error):
        FiltersFact.query.filter(agent_id="x").keyword_search("deploy", where=where)
    assert sent == []


def test_no_filter_is_no_filter(db):
    assert compile_where(FiltersFact, None) is None and compile_where(FiltersFact, {}) is None


def test_every_include_is_expanded_when_a_script_is_loaded():
    """``--#include NAME`` lines are replaced by the snippet ``lua/include/NAME.lua`` (filter_check in
    the searches, graph_degree in the graph writes) without its comment-only lines, so no loaded
    script still names one."""
    from redmem.store._scripts import lua_files, script_source

    scripts, snippets = lua_files()
    names = list(scripts)
    including = [name for name in names if b"--#include" in scripts[name].read_bytes()]
    assert {"bm25_search", "filter_ids", "query", "graph_propagate", "graph_add"} <= set(including)
    for name in names:
        assert b"--#include" not in script_source(name)
    assert b"local function filter_of" in script_source("bm25_search")
    assert b"local function filter_list" in script_source("filter_ids")
    assert b"local function degree" in script_source("graph_unlink")
    snippet = snippets["filter_check"].read_bytes()
    assert snippet.startswith(b"-- filter_check") and snippet.split(b"\n")[0] not in script_source("bm25_search")


def test_a_filter_naming_records_by_key(any_db):
    """Every key field given by ``=`` names the record (no index key to read: the vector path's
    listing still runs on the partition's slot); a listed id that names no record is left out."""
    agent = f"k{next(_agents)}"
    made = make(agent, [(["deploy", word], "fact", 1, {"ops"}, 0.0) for word in WORDS[1:4]])
    space, chosen = FiltersFact.query.filter(agent_id=agent).partition(), made[1]
    for where in ({"memory_id": chosen.memory_id, "kind": "fact"}, {"memory_id": chosen.memory_id, "kind__in": ["fact"]}):
        compiled = compile_where(FiltersFact, where)
        assert [i for i, _ in run_search(any_db, FiltersFact.embedding.searcher(space, "deploy", 5, compiled))] == \
            [chosen._saved_key.record_id]
        assert [i for i, _ in FiltersFact.content_bm25.search(space, "deploy", 5, where=compiled).ranked] == \
            [chosen._saved_key.record_id]
    assert run_search(any_db, FiltersFact.embedding.searcher(space, "deploy", 5, compile_where(
        FiltersFact, {"memory_id": "nobody", "kind": "fact"}))) == []


@pytest.mark.parametrize("share", [0.01, 0.1, 0.3, 0.9, 1.0])
def test_matrix_search_among_is_the_exact_top_k_of_the_ids(share):
    """Both ways of ranking a filter's rows (only their rows for few ids; every row walked best
    first for many) give the brute-force top-k, ties at the cut settled by id."""
    import random

    import numpy as np

    from redmem.embeddings._codec import digest, encode_stored
    from redmem.embeddings._matrix import VectorMatrix

    rng = np.random.default_rng(7)
    ids = [f"{i:05d}" for i in range(2000)]
    rows = rng.normal(size=(2000, 16)).astype(np.float32)
    rows[1000:1400] = rows[:400]  # many exact ties
    matrix = VectorMatrix()
    matrix.apply((i, encode_stored(row, "float32", digest(b"t", row.tobytes()))) for i, row in zip(ids, rows))
    allowed = sorted(random.Random(3).sample(ids, int(share * len(ids))))
    for query in rows[:5]:
        every = matrix.search(query, len(ids))
        members = set(allowed)
        for limit in (1, 10, 60):
            expected = [pair for pair in every if pair[0] in members][:limit]
            assert matrix.search_among(query, [i.encode() for i in allowed], limit) == expected
