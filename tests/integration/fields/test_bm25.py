"""BM25Field: formulas, scores and rankings against independent references, exact index stats
under random saves/updates/deletes, avgdl drift, tenants, analyser cases, errors.

The references: a plain numpy implementation written here (``numpy_scores``) and
``rank_bm25.BM25Okapi`` with its idf replaced by the variant redmem uses (``LuceneIdfOkapi``:
rank_bm25's own idf is ``ln((N - df + 0.5)/(df + 0.5))`` floored at ``0.25 * mean idf``).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from conftest import all_keys
from redmem import (
    AutoKeyField,
    IntField,
    KeyField,
    Model,
    ModelException,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.fields._bm25 import BM25Field
from redmem.fields._bm25_math import bm25_score, idf, impact_bound, impact_unit, term_frequency, tf_norm
from redmem.fields.search_protocol import run_search
from redmem.store._keys import escape
from redmem.text import Analyzer, default_analyzer

tokens = default_analyzer().tokens


class Bm25Memory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content", partition_by="agent_id")


class Bm25Note(Model):
    """Unpartitioned, keyed by hand, other parameters and no stemming."""

    note_id = KeyField()
    body = StringField()
    words = BM25Field(source="body", k1=2.0, b=0.3, analyzer=Analyzer(stem=False))


_agents = itertools.count()


def fresh_agent() -> str:
    return f"agent-{next(_agents)}"


# -- references ------------------------------------------------------------------------------
def numpy_scores(docs: dict[str, list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    """BM25 of every document, computed with numpy from the raw term lists."""
    if not docs:
        return {}
    ids = sorted(docs)
    vocabulary = sorted({t for terms in docs.values() for t in terms} | set(query))
    column = {term: i for i, term in enumerate(vocabulary)}
    tf = np.zeros((len(ids), len(vocabulary)))
    for row, record_id in enumerate(ids):
        for term in docs[record_id]:
            tf[row, column[term]] += 1
    dl = tf.sum(axis=1)
    n, df = len(ids), (tf > 0).sum(axis=0)
    weights = np.log((n - df + 0.5) / (df + 0.5) + 1)
    avgdl = dl.mean() or 1.0  # every document empty: every score is 0 anyway
    norm = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl[:, None] / avgdl))
    qtf = np.zeros(len(vocabulary))
    for term in query:
        qtf[column[term]] += 1
    return dict(zip(ids, norm @ (qtf * weights)))


class LuceneIdfOkapi(BM25Okapi):
    """rank_bm25's Okapi scorer with the idf ``ln((N - df + 0.5)/(df + 0.5) + 1)``."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log((self.corpus_size - freq + 0.5) / (freq + 0.5) + 1)


def expected_ranking(scores: dict[str, float], limit: int) -> list[str]:
    """Best first, ties by id; scores within 1e-12 (relative) of each other count as ties, since
    the numpy reference sums by matrix product, whose rounding may differ between equal rows."""
    matching = sorted(((s, rid) for rid, s in scores.items() if s > 0), key=lambda pair: (-pair[0], pair[1]))
    groups: list[list[tuple[float, str]]] = []
    for pair in matching:
        if groups and pair[0] >= groups[-1][0][0] * (1 - 1e-12):
            groups[-1].append(pair)
        else:
            groups.append([pair])
    return [rid for group in groups for _, rid in sorted(group, key=lambda pair: pair[1])][:limit]


def check_search(model: type, agent: str | None, docs: dict[str, str], text: str, limit: int = 10, **kw) -> list:
    """Run keyword_search (bounded and exhaustive) and compare with the numpy reference."""
    field = next(f for f in model._meta.fields.values() if isinstance(f, BM25Field))
    reference = numpy_scores({rid: field.analyzer.tokens(t) for rid, t in docs.items()},
                             field.analyzer.tokens(text), field.k1, field.b)
    query = model.query.filter(agent_id=agent) if agent is not None else model.query
    found = query.keyword_search(text, limit=limit, **kw)
    ids = [r._saved_key.record_id for r in found]
    expected = expected_ranking(reference, limit)
    # each position holds a record of the expected score; records whose scores tie in exact
    # arithmetic may differ by an ulp in either implementation, so among near-ties the order is
    # redmem's own: its float score, then the record id
    assert [reference[i] for i in ids] == pytest.approx([reference[i] for i in expected], rel=1e-12, abs=1e-12)
    assert ids == sorted(ids, key=lambda i: (-next(r._bm25_score for r in found if r._saved_key.record_id == i), i))
    for record in found:
        assert record._bm25_score == pytest.approx(reference[record._saved_key.record_id], abs=1e-9, rel=1e-12)
    exhaustive = query.keyword_search(text, limit=limit, exhaustive=True, **kw)
    assert [r._saved_key.record_id for r in exhaustive] == ids
    assert [r._bm25_score for r in exhaustive] == [r._bm25_score for r in found]
    bounded = server_search(field, query.partition(), text, limit)
    assert bounded.ranked == [(r._saved_key.record_id, r._bm25_score) for r in found]
    return found


def server_search(field: BM25Field, space, text: str, limit: int):
    """The search ranked inside Redis (``bm25_search.lua``, bounded) instead of in-process."""
    return run_search(field.model._meta.client, field.server_searcher(space, field.term_counts(text), limit))


def index_state(field: BM25Field, space, client) -> dict:
    """Everything the index holds in one partition, read back from Redis, by record id (postings by
    escaped term, impacts unscaled); checks that docnos and record ids correspond one to one."""
    keys = field.keys_in(space)
    rows = {int(k): v.decode().split(" ", 1) for k, v in client.hgetall(keys.lengths).items()}
    ids = {docno: record_id for docno, (_, record_id) in rows.items()}
    entries = {k.decode(): json.loads(v) for k, v in client.hgetall(keys.entries).items()}
    assert {record_id: entry[0] for record_id, entry in entries.items()} == {v: k for k, v in ids.items()}
    prefix = keys.postings + ":"
    postings = {}
    for key in sorted(k for k in all_keys(client) if k.startswith(prefix)):
        stored = client.zrange(key, 0, -1, withscores=True)
        assert all(score == int(score) and score < 2**52 for _, score in stored)
        postings[key[len(prefix):]] = {ids[int(m)]: s / field.unit for m, s in stored}
    return {
        "lengths": {record_id: int(dl) for dl, record_id in rows.values()},
        "entries": {record_id: entry[1:] for record_id, entry in entries.items()},
        "total": client.hget(keys.totals, "total"),
        "references": {k.decode(): v.decode().split() for k, v in client.hgetall(keys.references).items()},
        "postings": postings,
    }


def assert_index_exact(field: BM25Field, space, client, texts: dict[str, str | None]) -> None:
    """The stored index equals one recomputed from scratch from ``texts`` (record id -> text)."""
    state = index_state(field, space, client)
    counts = {rid: Counter(field.analyzer.tokens(t)) if t else Counter() for rid, t in texts.items()}
    lengths = {rid: sum(c.values()) for rid, c in counts.items()}
    assert state["lengths"] == lengths
    assert int(state["total"] or 0) == sum(lengths.values())
    assert state["entries"] == {
        rid: [lengths[rid], *[x for t in sorted(c) for x in (t, c[t])]] for rid, c in counts.items()
    }
    expected_postings = {}
    for rid, c in counts.items():
        for term in c:
            expected_postings.setdefault(term, set()).add(rid)
    assert {escape(t) for t in expected_postings} == set(state["postings"])
    assert {escape(t) for t in state["references"]} == set(state["postings"])
    for term, members in expected_postings.items():
        stored = state["postings"][escape(term)]
        assert set(stored) == members  # df exact
        assert int(state["references"][term][2]) == len(members)  # the df the writes keep
        reference = float(state["references"][term][0])
        for rid in members:
            tf, dl = counts[rid][term], lengths[rid]
            assert term_frequency(stored[rid], dl, reference, field.k1, field.b) == tf
            exact = tf_norm(tf, dl, reference, field.k1, field.b)
            assert exact * (1 - 1e-15) <= stored[rid] <= exact + 2 / field.unit  # rounded up to the grid


# -- formulas --------------------------------------------------------------------------------
def test_idf_by_hand():
    assert idf(3, 1) == pytest.approx(math.log(8 / 3))  # ln(2.5/1.5 + 1)
    assert idf(1, 1) == pytest.approx(math.log(4 / 3))
    assert idf(100, 100) > 0  # a term in every document still weighs something
    assert idf(100, 1) > idf(100, 10) > idf(100, 90)


def test_impact_unit_by_hand():
    assert impact_unit(1.2) == 2.0**50  # k1 + 1 = 2.2 < 4 = 2**2
    assert impact_unit(0.5) == 2.0**51  # 1.5 < 2
    assert impact_unit(1.0) == 2.0**50  # 2 is not below 2**1
    assert impact_unit(100.0) == 2.0**45  # 101 < 128
    for k1 in (1e-9, 0.5, 1.0, 1.2, 3.0, 100.0):
        assert math.ceil((k1 + 1) * impact_unit(k1)) <= 2**52  # an integer Redis keeps as one


def test_tf_norm_by_hand():
    assert tf_norm(1, 10, 10, 1.2, 0.75) == pytest.approx(1.0)  # average length: 2.2 / 2.2
    assert tf_norm(2, 5, 10, 1.2, 0.75) == pytest.approx(4.4 / 2.75)  # 2 + 1.2 * (0.25 + 0.375)
    assert tf_norm(3, 7, 20, 1.2, 0.0) == pytest.approx(6.6 / 4.2)  # b = 0: no length normalisation
    assert tf_norm(10**6, 10**6, 10, 1.2, 0.75) < 2.2


@settings(max_examples=300)
@given(
    tf=st.integers(1, 2000), extra=st.integers(0, 5000),
    reference=st.floats(0.5, 1e4), k1=st.floats(0.01, 10), b=st.floats(0, 1),
)
def test_term_frequency_inverts_the_stored_impact(tf, extra, reference, k1, b):
    dl = tf + extra
    assert term_frequency(tf_norm(tf, dl, reference, k1, b), dl, reference, k1, b) == tf
    unit = impact_unit(k1)
    stored = math.ceil(tf_norm(tf, dl, reference, k1, b) * unit)  # as the postings keep it
    assert term_frequency(stored / unit, dl, reference, k1, b) == tf


@settings(max_examples=300)
@given(
    tf=st.integers(1, 50), extra=st.integers(0, 500), reference=st.floats(1, 500),
    avgdl=st.floats(1, 500), k1=st.floats(0.05, 5), b=st.floats(0, 1), slack=st.floats(1, 3),
)
def test_impact_bound_holds_whatever_avgdl_drifted_to(tf, extra, reference, avgdl, k1, b, slack):
    dl = tf + extra
    stored = tf_norm(tf, dl, reference, k1, b)
    now = tf_norm(tf, dl, avgdl, k1, b)
    assert now <= impact_bound(stored, avgdl, reference, k1, b) * (1 + 1e-12)
    # monotone: a bound read further down a list (a lower stored impact) is never larger
    assert impact_bound(stored / slack, avgdl, reference, k1, b) <= impact_bound(stored, avgdl, reference, k1, b)
    # tight without drift
    assert impact_bound(stored, reference, reference, k1, b) == pytest.approx(stored, rel=1e-12)


def test_scores_by_hand(any_db):
    agent = fresh_agent()
    first = Bm25Memory.create(agent_id=agent, content="apple banana")  # terms: appl banana
    second = Bm25Memory.create(agent_id=agent, content="apple apple cherry")
    Bm25Memory.create(agent_id=agent, content="durian")
    # N = 3, avgdl = 2; "apple": df = 2, idf = ln(1.5/2.5 + 1) = ln 1.6
    found = Bm25Memory.query.filter(agent_id=agent).keyword_search("apple")
    assert [r.content for r in found] == [second.content, first.content]
    # second: tf 2, dl 3 -> 4.4 / (2 + 1.2 * (0.25 + 0.75 * 1.5)) = 4.4 / 3.65
    assert found[0]._bm25_score == pytest.approx(math.log(1.6) * 4.4 / 3.65, abs=1e-12)
    assert found[1]._bm25_score == pytest.approx(math.log(1.6) * 1.0, abs=1e-12)  # tf 1, dl = avgdl


def test_a_repeated_query_word_counts_twice(any_db):
    agent = fresh_agent()
    Bm25Memory.create(agent_id=agent, content="apple banana")
    Bm25Memory.create(agent_id=agent, content="cherry")
    once = Bm25Memory.query.filter(agent_id=agent).keyword_search("apple")[0]._bm25_score
    twice = Bm25Memory.query.filter(agent_id=agent).keyword_search("apple apples")[0]._bm25_score
    assert twice == pytest.approx(2 * once, rel=1e-12)


# -- rankings against the references -----------------------------------------------------------
WORDS = ["deploy", "redis", "cluster", "memory", "agent", "python", "vector", "search", "index", "lua", "script", "key", "value", "latency", "budget", "token", "prompt", "context", "window", "retrieval", "ranking", "summary", "tenant", "shard"]


def random_corpus(rng: random.Random, size: int, common: float = 1.1) -> list[str]:
    weights = [1 / (i + 1) ** common for i in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(0, 25))) for _ in range(size)]


def test_rankings_equal_numpy_and_rank_bm25(any_db):
    agent, rng = fresh_agent(), random.Random(7)
    records = [Bm25Memory.create(agent_id=agent, content=text) for text in random_corpus(rng, 120)]
    docs = {r._saved_key.record_id: r.content for r in records}
    ordered = sorted(docs)
    okapi = LuceneIdfOkapi([tokens(docs[rid]) for rid in ordered], k1=1.2, b=0.75)
    for _ in range(25):
        text = " ".join(rng.sample(WORDS, rng.randint(1, 4)))
        found = check_search(Bm25Memory, agent, docs, text, limit=rng.choice([1, 5, 10, 50]))
        okapi_scores = dict(zip(ordered, okapi.get_scores(tokens(text))))
        for record in found:
            assert record._bm25_score == pytest.approx(okapi_scores[record._saved_key.record_id], abs=1e-9)


def test_scores_agree_with_the_python_formula(db):
    agent, rng = fresh_agent(), random.Random(3)
    records = [Bm25Memory.create(agent_id=agent, content=t) for t in random_corpus(rng, 40)]
    doc_tf = {r._saved_key.record_id: Counter(tokens(r.content or "")) for r in records}
    n, avgdl = len(doc_tf), sum(sum(c.values()) for c in doc_tf.values()) / len(doc_tf)
    query = Counter(tokens("redis cluster cluster agent"))
    df = {t: sum(1 for c in doc_tf.values() if t in c) for t in query}
    for record in Bm25Memory.query.filter(agent_id=agent).keyword_search("redis cluster cluster agent", limit=40):
        rid = record._saved_key.record_id
        expected = bm25_score(query, doc_tf[rid], sum(doc_tf[rid].values()), df, n, avgdl, 1.2, 0.75)
        assert record._bm25_score == pytest.approx(expected, abs=1e-9)


def test_unpartitioned_model_with_its_own_parameters(any_db):
    texts = {"n1": "running runners run", "n2": "the runner", "n3": "running", "n4": "walking the dog"}
    for key, body in texts.items():
        Bm25Note.create(note_id=key, body=body)
    assert Bm25Note.words.analyzer.tokens("running runners") == ["running", "runners"]  # no stemming
    check_search(Bm25Note, None, texts, "running the runner")
    check_search(Bm25Note, None, texts, "dog runners", limit=2)


def test_a_renamed_record_moves_in_the_index(any_db):
    note = Bm25Note.create(note_id="old", body="renamed later")
    Bm25Note.create(note_id="other", body="stays here")
    note.note_id = "new"
    note.save()
    assert [n.note_id for n in Bm25Note.query.keyword_search("renamed")] == ["new"]
    texts = {"new": "renamed later", "other": "stays here"}
    assert_index_exact(Bm25Note.words, Bm25Note.query.partition(), any_db, texts)


def test_ties_go_by_record_id(any_db):
    for key in ["c", "a", "d", "b"]:
        Bm25Note.create(note_id=key, body="twin words")
    Bm25Note.create(note_id="e", body="other words")
    found = Bm25Note.query.keyword_search("twin", limit=3)
    assert [n.note_id for n in found] == ["a", "b", "c"]
    assert len({n._bm25_score for n in found}) == 1


def test_bounded_search_reads_part_of_long_lists(any_db):
    agent, rng = fresh_agent(), random.Random(11)
    texts = [" ".join(["memory"] * rng.randint(1, 3) + rng.choices(WORDS, k=rng.randint(3, 30))) for _ in range(400)]
    records = [Bm25Memory.create(agent_id=agent, content=t) for t in texts]
    space = Bm25Memory.query.filter(agent_id=agent).partition()
    result = server_search(Bm25Memory.content_bm25, space, "memory", 5)
    exhaustive = Bm25Memory.content_bm25.search(space, "memory", 5, exhaustive=True)
    assert (result.mode, exhaustive.mode) == ("bounded", "exhaustive")
    assert result.ranked == exhaustive.ranked
    assert exhaustive.postings_read == 400
    assert result.postings_read < 100
    check_search(Bm25Memory, agent, {r._saved_key.record_id: r.content for r in records}, "memory", limit=5)


def test_records_that_cannot_reach_the_top_are_not_scored(any_db):
    """A question of many common words: most records first seen deep in a list are dropped by their
    upper bound (impact bounds and the unread lists' bounds) before their lengths are read."""
    agent, rng = fresh_agent(), random.Random(13)
    records = [Bm25Memory.create(agent_id=agent, content=t) for t in random_corpus(rng, 600, common=0.6)]
    space = Bm25Memory.query.filter(agent_id=agent).partition()
    question = "which agent memory search index latency in the redis cluster"
    result = server_search(Bm25Memory.content_bm25, space, question, 10)
    exhaustive = Bm25Memory.content_bm25.search(space, question, 10, exhaustive=True)
    assert result.mode == "bounded" and result.ranked == exhaustive.ranked
    assert result.records_scored < result.postings_read / 4
    check_search(Bm25Memory, agent, {r._saved_key.record_id: r.content for r in records}, question)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS[:10] + ["the"]), max_size=14).map(" ".join), min_size=1, max_size=120),
    question=st.lists(st.sampled_from(WORDS[:12] + ["what", "the"]), min_size=1, max_size=9).map(" ".join),
    limit=st.integers(1, 12),
)
def test_pruned_search_equals_brute_force(any_db, texts, question, limit):
    """Bounded search with pruning == numpy brute force == exhaustive, ids and scores, on corpora of a
    few shared words (long overlapping lists, the case where most records are pruned)."""
    agent = fresh_agent()
    records = [Bm25Memory(agent_id=agent, content=t) for t in texts]
    Bm25Memory.save_many(records, chunk_size=37)
    check_search(Bm25Memory, agent, {r._saved_key.record_id: r.content for r in records}, question, limit=limit)


def test_a_list_without_a_reference_falls_back_to_scoring_every_posting(any_db):
    agent, rng = fresh_agent(), random.Random(2)
    records = [Bm25Memory.create(agent_id=agent, content=t) for t in random_corpus(rng, 50)]
    space = Bm25Memory.query.filter(agent_id=agent).partition()
    before = server_search(Bm25Memory.content_bm25, space, "redis cluster", 5)
    any_db.hdel(Bm25Memory.content_bm25.keys_in(space).references, "cluster")  # damaged by hand
    after = server_search(Bm25Memory.content_bm25, space, "redis cluster", 5)
    assert (before.mode, after.mode) == ("bounded", "exhaustive")
    assert after.ranked == before.ranked
    check_search(Bm25Memory, agent, {r._saved_key.record_id: r.content for r in records}, "redis cluster", limit=5)


@pytest.mark.parametrize("growth", ["longer", "shorter"])
def test_exact_after_avgdl_drifts_away_from_the_lists_references(any_db, growth):
    """Lists written at one avgdl, searched at a very different one (their references stay)."""
    agent, rng = fresh_agent(), random.Random(5)
    docs = {}
    early = 3 if growth == "longer" else 90
    for _ in range(60):
        text = " ".join(["alpha"] * rng.randint(1, 3) + ["beta"] * rng.randint(0, 2) + ["gamma"] * rng.randint(0, early))
        record = Bm25Memory.create(agent_id=agent, content=text)
        docs[record._saved_key.record_id] = text
    late = 200 if growth == "longer" else 1
    for _ in range(300):  # never touch alpha/beta: their lists keep their references
        text = " ".join(["gamma"] * rng.randint(late // 2, late) + ["delta"])
        record = Bm25Memory.create(agent_id=agent, content=text)
        docs[record._saved_key.record_id] = text
    space = Bm25Memory.query.filter(agent_id=agent).partition()
    state = index_state(Bm25Memory.content_bm25, space, any_db)
    avgdl = int(state["total"]) / len(state["lengths"])
    reference = float(state["references"]["alpha"][0])
    assert (avgdl > 3 * reference) if growth == "longer" else (avgdl < reference / 3)
    for text in ["alpha", "alpha beta", "beta gamma", "alpha delta gamma"]:
        for limit in (1, 3, 10):
            check_search(Bm25Memory, agent, docs, text, limit=limit)


# -- exact stats under random writes ------------------------------------------------------------
operations = st.lists(
    st.tuples(
        st.sampled_from(["save", "save", "update", "delete", "clear"]),
        st.integers(0, 7),
        st.lists(st.sampled_from(WORDS[:8] + ["the", "and"]), max_size=12).map(" ".join),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_stats_stay_exact_under_saves_updates_deletes(any_db, ops):
    agent = fresh_agent()
    live: dict[int, Bm25Memory] = {}
    for action, slot, text in ops:
        record = live.get(slot)
        if action == "save" and record is None:
            live[slot] = Bm25Memory.create(agent_id=agent, content=text)
        elif action in ("save", "update") and record is not None:
            record.content = text
            record.save()
        elif action == "clear" and record is not None:
            record.content = None
            record.save()
        elif action == "delete" and record is not None:
            record.delete()
            del live[slot]
    texts = {r._saved_key.record_id: r.content for r in live.values()}
    space = Bm25Memory.query.filter(agent_id=agent).partition()
    assert_index_exact(Bm25Memory.content_bm25, space, any_db, texts)
    for text in ["redis", "deploy cluster memory", "agent python the"]:
        check_search(Bm25Memory, agent, {rid: t or "" for rid, t in texts.items()}, text, limit=4)


def drifting_corpus(rng: random.Random) -> list[str]:
    """Short texts, then long ones: avgdl moves far and the growing lists get rebased."""
    early = [" ".join(["alpha"] * rng.randint(1, 3) + ["gamma"] * rng.randint(0, 3)) for _ in range(60)]
    late = [" ".join(["gamma"] * rng.randint(20, 60) + ["delta"] + rng.choices(WORDS, k=3)) for _ in range(200)]
    return early + late


def by_position(state: dict, ids: list[str]) -> dict:
    """An index state with each record id replaced by its position in ``ids``."""
    position = {record_id: i for i, record_id in enumerate(ids)}
    return {
        "lengths": {position[rid]: dl for rid, dl in state["lengths"].items()},
        "entries": {position[rid]: entry for rid, entry in state["entries"].items()},
        "total": state["total"],
        "references": state["references"],
        "postings": {t: {position[rid]: s for rid, s in p.items()} for t, p in state["postings"].items()},
    }


@pytest.mark.parametrize("chunk_size", [1, 13, 500])
def test_save_many_stores_the_index_of_one_save_per_record(any_db, chunk_size):
    """One script call per chunk applies its records in order: the same lengths, references (and
    their rebases) and impacts as one save() per record."""
    texts = drifting_corpus(random.Random(8))
    one, many = fresh_agent(), fresh_agent()
    singles = [Bm25Memory.create(agent_id=one, content=text) for text in texts]
    bulk = [Bm25Memory(agent_id=many, content=text) for text in texts]
    Bm25Memory.save_many(bulk, chunk_size=chunk_size)
    states = [index_state(Bm25Memory.content_bm25, Bm25Memory.query.filter(agent_id=agent).partition(), any_db)
              for agent in (one, many)]
    assert by_position(states[1], [r.memory_id for r in bulk]) == by_position(states[0], [r.memory_id for r in singles])
    assert float(states[1]["references"]["gamma"][0]) != float(states[1]["references"]["alpha"][0])  # rebased
    docs = {r.memory_id: r.content for r in bulk}
    assert_index_exact(Bm25Memory.content_bm25, Bm25Memory.query.filter(agent_id=many).partition(), any_db, docs)
    for text in ["alpha", "gamma delta", "alpha gamma redis"]:
        check_search(Bm25Memory, many, docs, text, limit=5)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.lists(st.sampled_from(WORDS[:8] + ["the"]), max_size=10).map(" ".join),
                                  st.integers(1, 6), st.integers(1, 4), st.integers(0, 3)), min_size=1, max_size=6))
def test_stats_stay_exact_under_bulk_saves_between_updates(any_db, batches):
    agent, live = fresh_agent(), []
    for text, copies, chunk_size, changes in batches:
        made = [Bm25Memory(agent_id=agent, content=" ".join(text.split()[i:]) or None) for i in range(copies)]
        Bm25Memory.save_many(made, chunk_size=chunk_size)
        live += made
        for record in live[:changes]:
            record.content = text[::-1]
            record.save()
        if changes == 3:
            live.pop().delete()
    texts = {r.memory_id: r.content for r in live}
    assert_index_exact(Bm25Memory.content_bm25, Bm25Memory.query.filter(agent_id=agent).partition(), any_db, texts)


def test_concurrent_writers_keep_the_stats_exact(db):
    agent = fresh_agent()
    made = [Bm25Memory.create(agent_id=agent, content="seed text") for _ in range(8)]

    def work(seed: int) -> None:  # each writer holds its own instances, as separate processes do
        rng = random.Random(seed)
        mine = [Bm25Memory.create(agent_id=agent, content=" ".join(rng.choices(WORDS, k=5))) for _ in range(10)]
        shared = [Bm25Memory.query.get(agent_id=agent, memory_id=m.memory_id) for m in made]
        for _ in range(20):
            record = rng.choice(mine + shared)
            record.content = " ".join(rng.choices(WORDS, k=rng.randint(0, 8)))
            record.save()
        for record in mine[:4]:
            record.delete()

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    query = Bm25Memory.query.filter(agent_id=agent)
    texts = {r._saved_key.record_id: r.content for r in query.all()}
    assert len(texts) == 8 + 4 * 6
    assert_index_exact(Bm25Memory.content_bm25, query.partition(), db, texts)


def test_deleting_every_record_leaves_no_index_key(any_db):
    agent = fresh_agent()
    records = [Bm25Memory.create(agent_id=agent, content=f"note {i} about redis") for i in range(5)]
    records.append(Bm25Memory.create(agent_id=agent, content=None))
    keys = {k for k in all_keys(any_db) if ":b:" in k}
    assert keys and all(f"{{{agent}}}" in k for k in keys)  # one partition, one slot
    for record in records:
        record.delete()
    assert not {k for k in all_keys(any_db) if ":b:" in k}
    assert Bm25Memory.query.filter(agent_id=agent).keyword_search("redis") == []


def test_empty_texts_count_as_documents(any_db):
    agent = fresh_agent()
    docs = {}
    for text in ["redis cluster", "", None, "the and of", "redis"]:
        record = Bm25Memory.create(agent_id=agent, content=text)
        docs[record._saved_key.record_id] = text or ""
    check_search(Bm25Memory, agent, docs, "redis")  # N = 5, avgdl = 3 / 5


def test_a_text_with_thousands_of_distinct_terms(any_db):
    agent = fresh_agent()
    big = Bm25Memory.create(agent_id=agent, content=" ".join(f"w{i}" for i in range(9000)))
    small = Bm25Memory.create(agent_id=agent, content="w7 w7 short")
    docs = {big._saved_key.record_id: big.content, small._saved_key.record_id: small.content}
    check_search(Bm25Memory, agent, docs, "w7 w8999 short")
    big.content = "now short"
    big.save()
    docs[big._saved_key.record_id] = big.content
    assert_index_exact(Bm25Memory.content_bm25, Bm25Memory.query.filter(agent_id=agent).partition(), any_db, docs)


# -- tenants ---------------------------------------------------------------------------------
def test_no_cross_tenant_hit_ever(any_db):
    rng = random.Random(21)
    first, second = fresh_agent(), fresh_agent()
    docs: dict[str, dict[str, str]] = {first: {}, second: {}}
    for i, text in enumerate(random_corpus(rng, 160)):
        agent = first if i % 2 else second
        record = Bm25Memory.create(agent_id=agent, content=text + (" solo" if agent == first else ""))
        docs[agent][record._saved_key.record_id] = record.content
    for _ in range(10):
        text = " ".join(rng.sample(WORDS, 3))
        for agent in (first, second):
            found = check_search(Bm25Memory, agent, docs[agent], text, limit=50)
            assert all(r.agent_id == agent for r in found)
            assert {r._saved_key.record_id for r in found} <= set(docs[agent])
    assert Bm25Memory.query.filter(agent_id=second).keyword_search("solo") == []
    assert len(Bm25Memory.query.filter(agent_id=first).keyword_search("solo", limit=100)) == 80


# -- analyser cases --------------------------------------------------------------------------
class SplitAnalyzer(Analyzer):
    """Terms are the text's pieces between single spaces, as they are: key-special characters
    included, and the empty term between two spaces."""

    def tokens(self, text: str) -> list[str]:
        return text.split(" ")


class Odd(Model):
    odd_id = AutoKeyField()
    agent_id = KeyField()
    text = StringField()
    words = BM25Field(source="text", analyzer=SplitAnalyzer(), partition_by="agent_id")


def test_terms_with_key_special_characters(any_db):
    agent = fresh_agent()
    texts = ["a:b 50% {x}", "50% 50% é\\z", "[y]*  a:b", "plain"]
    made = [Odd(agent_id=agent, text=text) for text in texts]
    Odd.save_many(made[:2])
    made[2].save()
    made[3].save()
    made[3].text = "a:b {x} %41"
    made[3].save()
    made[0].delete()
    docs = {r.odd_id: r.text for r in made[1:]}
    assert_index_exact(Odd.words, Odd.query.filter(agent_id=agent).partition(), any_db, docs)
    check_search(Odd, agent, docs, "a:b 50%")
    check_search(Odd, agent, docs, "%41 {x}")


def test_cjk_and_identifier_queries(any_db):
    agent = fresh_agent()
    texts = ["東京都に行きます", "京都の寺を見た", "大阪の夜", "Q3 revenue report", "shipped v2 today",
             "fixes #594 in the parser", "notes on gpt-4o latency", "Python 3.5 is old"]
    made = {t: Bm25Memory.create(agent_id=agent, content=t) for t in texts}
    search = Bm25Memory.query.filter(agent_id=agent).keyword_search

    def hits(text: str) -> list[str]:
        return [r.content for r in search(text)]

    assert set(hits("京都")) == {"東京都に行きます", "京都の寺を見た"}
    assert hits("東京") == ["東京都に行きます"]
    assert hits("q3") == hits("Q3") == ["Q3 revenue report"]
    assert hits("#594") == ["fixes #594 in the parser"]
    assert hits("GPT-4o") == ["notes on gpt-4o latency"]
    assert hits("v2") == ["shipped v2 today"]
    assert hits("ship") == ["shipped v2 today"]  # stemmed
    assert hits("3.5") == ["Python 3.5 is old"]
    assert hits("594") == []
    check_search(Bm25Memory, agent, {r._saved_key.record_id: t for t, r in made.items()}, "京都 report")


@pytest.mark.parametrize("text", ["", "   ", "the and of", "...!!!", "I don't know what it's about"])
def test_queries_without_terms_find_nothing(any_db, text):
    agent = fresh_agent()
    Bm25Memory.create(agent_id=agent, content="the and of redis")
    assert Bm25Memory.query.filter(agent_id=agent).keyword_search(text) == []


def test_unknown_terms_and_empty_partitions(any_db):
    assert Bm25Memory.query.filter(agent_id=fresh_agent()).keyword_search("redis") == []
    agent = fresh_agent()
    Bm25Memory.create(agent_id=agent, content="redis")
    assert Bm25Memory.query.filter(agent_id=agent).keyword_search("postgres") == []
    assert Bm25Memory.query.filter(agent_id=agent).keyword_search("redis", limit=0) == []


# -- declarations and errors -----------------------------------------------------------------
@pytest.mark.parametrize("options", [{"k1": 0}, {"k1": -1}, {"k1": float("nan")}, {"b": 1.5}, {"b": -0.1},
                                     {"k1": True}, {"b": "0.5"}, {"analyzer": str.split}])
def test_bad_parameters_are_rejected(options):
    with pytest.raises(ModelException):
        BM25Field(**options)


def test_source_must_be_a_stored_str_field():
    with pytest.raises(ModelException, match="source"):
        class Missing(Model):
            key = KeyField()
            index = BM25Field(source="content")

    with pytest.raises(ModelException, match="source"):
        class Number(Model):
            key = KeyField()
            content = IntField()
            index = BM25Field(source="content")


def test_declaration_changes_move_the_index():
    class Other(Model):
        memory_id = AutoKeyField()
        agent_id = KeyField()
        content = StringField()
        content_bm25 = BM25Field(source="content", k1=1.5, partition_by="agent_id")

        class Meta:
            name = "Bm25Memory"

    space = Bm25Memory.query.filter(agent_id="x").partition()
    assert Other.content_bm25.keys_in(space) != Bm25Memory.content_bm25.keys_in(space)
    same = BM25Field(source="content", analyzer=Analyzer())
    assert same.version == Bm25Memory.content_bm25.version


def test_search_errors(any_db):
    with pytest.raises(QueryException, match="partition"):
        Bm25Memory.query.keyword_search("redis")
    with pytest.raises(QueryException, match="partition only"):
        Bm25Memory.query.filter(agent_id="a", memory_id="m").keyword_search("redis")
    for limit in (-1, 1.5, True):
        with pytest.raises(QueryException, match="limit"):
            Bm25Memory.query.filter(agent_id="a").keyword_search("redis", limit=limit)
    with pytest.raises(ValidationError):
        Bm25Memory.query.filter(agent_id="a").keyword_search(["redis"])
    with pytest.raises(QueryException, match="not a BM25Field"):
        Bm25Memory.query.filter(agent_id="a").keyword_search("redis", field="content")

    class TwoIndexes(Model):
        key = KeyField()
        title = StringField()
        body = StringField()
        title_bm25 = BM25Field(source="title")
        body_bm25 = BM25Field(source="body")

    TwoIndexes.create(key="k", title="redis", body="cluster")
    with pytest.raises(QueryException, match="field="):
        TwoIndexes.query.keyword_search("redis")
    assert [r.key for r in TwoIndexes.query.keyword_search("redis", field="title_bm25")] == ["k"]
    assert TwoIndexes.query.keyword_search("redis", field="body_bm25") == []
