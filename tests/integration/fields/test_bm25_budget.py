"""BM25Field's postings budget: the search inside Redis reads at most the budget of each query
term's list, scores what it finds exactly, and is the exact search when no list is longer."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import AutoKeyField, KeyField, Model, QueryArgumentError, StringField
from redmem.fields._bm25 import BM25Field, SearchResult
from redmem.fields.search_protocol import run_search
from redmem.model._filters import compile_where

WORDS = ["deploy", "redis", "cluster", "memory", "agent", "python", "vector", "search", "index", "lua"]


class BudgetMemory(Model):
    memory_id = AutoKeyField()
    kind = KeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


_agents = itertools.count()


def stored(texts: list[str], kinds: list[str] | None = None) -> tuple[list[BudgetMemory], object]:
    """A fresh partition holding ``texts`` (kinds: "a" unless given); its records and key space."""
    agent = f"budget-{next(_agents)}"
    records = [BudgetMemory(agent_id=agent, content=t, kind=(kinds or ["a"] * len(texts))[i])
               for i, t in enumerate(texts)]
    BudgetMemory.save_many(records, chunk_size=37)
    return records, BudgetMemory.query.filter(agent_id=agent).partition()


def searched(space: object, text: str, limit: int, budget: int | None = None, where: object = None) -> SearchResult:
    field = BudgetMemory.content_bm25
    call = field.server_searcher(space, field.term_counts(text), limit, where=where, postings_budget=budget)
    return run_search(field.model._meta.client, call)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS[:6] + ["the"]), max_size=12).map(" ".join), min_size=1, max_size=90),
    question=st.lists(st.sampled_from(WORDS[:8]), min_size=1, max_size=6).map(" ".join),
    limit=st.integers(1, 12),
    budget=st.integers(1, 120),
)
def test_a_budget_reads_at_most_the_budget_and_scores_exactly(any_db, texts, question, limit, budget):
    """At most budget x terms postings read; each hit's score is its exact BM25 score, best first;
    a budget no list exceeds gives the exact ranking."""
    _, space = stored(texts)
    terms = set(BudgetMemory.content_bm25.term_counts(question))
    result = searched(space, question, limit, budget)
    exact = searched(space, question, limit)
    every = dict(BudgetMemory.content_bm25.search(space, question, len(texts), exhaustive=True).ranked)
    assert result.mode == "bounded"
    assert result.postings_read <= budget * len(terms)
    assert len(result.ranked) == min(limit, len(result.ranked))
    for record_id, score in result.ranked:
        assert score == pytest.approx(every[record_id], rel=1e-12, abs=1e-12)
    assert result.ranked == sorted(result.ranked, key=lambda pair: (-pair[1], pair[0]))
    longest = max((sum(term in BudgetMemory.content_bm25.term_counts(t) for t in texts) for term in terms), default=0)
    if budget >= longest:
        assert result.ranked == exact.ranked


def test_a_common_word_reads_its_budget_not_its_list(any_db):
    """400 records hold "memory": asked for 50 with a budget of 20, the search reads 20 postings and
    returns the 20 records of highest impact (one query word: the best 20 scores)."""
    texts = ["memory " + " ".join(["redis"] * (i % 40)) for i in range(400)]
    _, space = stored(texts)
    unbounded, bounded = searched(space, "memory", 50), searched(space, "memory", 50, budget=20)
    assert bounded.postings_read == 20 and unbounded.postings_read >= 50
    assert [score for _, score in bounded.ranked] == [score for _, score in unbounded.ranked][:20]


def test_a_budget_keeps_the_filter(any_db):
    """A broad filter with a budget: only records that pass it, each scored exactly."""
    texts = [f"memory {'agent ' * (i % 5)}" for i in range(200)]
    records, space = stored(texts, ["a" if i % 3 else "b" for i in range(200)])
    where = compile_where(BudgetMemory, {"kind": "a"})
    found = searched(space, "memory agent", 10, budget=16, where=where)
    every = dict(BudgetMemory.content_bm25.search(space, "memory agent", 200, exhaustive=True).ranked)
    kinds = {r._saved_key.record_id: r.kind for r in records}
    assert 0 < found.postings_read <= 32 and len(found.ranked) == 10
    assert all(kinds[rid] == "a" and score == pytest.approx(every[rid]) for rid, score in found.ranked)


@pytest.mark.parametrize("budget", [0, -1, 1.5, "3"])
def test_a_bad_budget_is_refused(any_db, budget):
    _, space = stored(["memory"])
    with pytest.raises(QueryArgumentError):
        searched(space, "memory", 5, budget)
