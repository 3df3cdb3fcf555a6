"""retrieve(): any set of searches in one round trip, the pre-check, the graph expansion, the
fallback and the fusion, as a recipe calls it (the assembler's use: test_context_assembler.py)."""

from __future__ import annotations

import time

import pytest

from conftest import configured_embeddings
from models import RhythmicMemory as Memory
from redmem.context._retrieval import Expansion, Fallback, Fusion, Retrieval, keyword_hits, retrieve
from redmem.embeddings import HashingEmbeddings
from redmem.fields._cooccurrence import Graph


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


@pytest.fixture
def made(db):
    texts = ["deploy the helm chart", "canary rollback at noon", "green tea for Ana", "deploy freeze"]
    return [Memory.create(agent_id="a", topic="ops", content=text, salience=1.0) for text in texts]


def space():
    return Memory.query.filter(agent_id="a").partition()


def lists(text: str) -> dict:
    return {"keyword": keyword_hits(Memory.content_bm25, space(), text, 10),
            "vector": Memory.embedding.searcher(space(), text, 10)}


def test_lists_pre_check_and_riders_share_one_round_trip(made, sent):
    push = Memory.rhythm.searcher(space(), time.time(), 0.5, 10)
    retrieval = Retrieval(space(), lists("deploy helm"), Fusion("rrf", {}, 10, 5), "hybrid",
                          existence=Memory.topics_seen.searcher(space(), ["ops"]), riders=[push])
    sent.clear()
    found = retrieve(Memory._meta.client, retrieval)
    assert len(sent) == 1
    assert found.candidates[0].key == made[0].db_key and set(found.candidates[0].signals) == {"bm25", "vector", "rrf", "match"}
    assert found.mode == "hybrid" and found.warnings == [] and found.matrix is not None
    assert len(found.riders[0]) == 4  # the push scan, answered as it is


def test_a_definitely_missing_pre_check_pulls_nothing_by_keyword_but_answers_the_riders(made, sent):
    push = Memory.rhythm.searcher(space(), time.time(), 0.5, 10)
    keyword_only = {"keyword": keyword_hits(Memory.content_bm25, space(), "deploy", 10)}
    retrieval = Retrieval(space(), keyword_only, Fusion("rrf", {}, 10, 5),
                          existence=Memory.topics_seen.searcher(space(), ["kubernetes"]), riders=[push])
    sent.clear()
    found = retrieve(Memory._meta.client, retrieval)
    assert (found.candidates, found.lists, len(found.riders[0]), len(sent)) == ([], {}, 4, 1)


def test_a_definitely_missing_pre_check_leaves_the_vector_list_its_say(made, sent):
    retrieval = Retrieval(space(), lists("deploy"), Fusion("rrf", {}, 10, 5),
                          existence=Memory.topics_seen.searcher(space(), ["kubernetes"]))
    found = retrieve(Memory._meta.client, retrieval)
    assert set(found.lists) == {"vector"} and found.candidates
    assert all("bm25" not in c.signals for c in found.candidates)


def test_the_graph_expands_from_the_first_list_that_found_anything_only_when_it_has_an_edge(made, sent):
    expansion = Expansion(Graph(Memory.associations, space()), seeds=1, depth=2)
    retrieval = Retrieval(space(), {"keyword": keyword_hits(Memory.content_bm25, space(), "helm", 10)},
                          Fusion("rrf", {}, 10, 5), expansion=expansion)
    sent.clear()
    assert retrieve(Memory._meta.client, retrieval).lists["graph"] == [] and len(sent) == 1
    Memory.associations.link(made[0], made[2], initial_weight=0.8)
    retrieve(Memory._meta.client, retrieval)  # the propagation script loaded
    sent.clear()
    found = retrieve(Memory._meta.client, retrieval)
    assert found.lists["graph"] == [(made[2].memory_id, pytest.approx(0.4))] and len(sent) == 2
    assert [c.key for c in found.candidates] == [made[0].db_key, made[2].db_key]


def test_the_fallback_is_built_and_run_only_when_every_list_came_back_empty(made, sent):
    built = []

    def fallback_lists():
        built.append(True)
        return {"keyword": keyword_hits(Memory.content_bm25, space(), "tea", 10)}

    fallback = Fallback(fallback_lists, "fallen back", "nothing found")
    found = retrieve(Memory._meta.client, Retrieval(space(), {"keyword": keyword_hits(Memory.content_bm25, space(),
                     "deploy", 10)}, Fusion("rrf", {}, 10, 5), "first", fallback=fallback))
    assert (found.mode, found.warnings, built) == ("first", [], [])
    sent.clear()
    found = retrieve(Memory._meta.client, Retrieval(space(), {"keyword": keyword_hits(Memory.content_bm25, space(),
                     "zebra", 10)}, Fusion("convex", {}, 10, 5), "first", fallback=fallback))
    assert (found.mode, found.warnings, len(sent)) == ("fallen back", ["nothing found"], 2)
    assert [c.key for c in found.candidates] == [made[2].db_key] and found.candidates[0].pull == 1.0
