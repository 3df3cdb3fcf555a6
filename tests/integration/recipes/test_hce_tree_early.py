"""A flat tree scores its topics' members while the server answers (``TreeSearch.work``) and keeps
those hits only when the replies changed nothing they were scored from: a read with no write
since the last one never scores again, and after any interleaving of writes and reads a search
answers exactly (ids and scores) as one through a new client, whose caches are read anew."""

from __future__ import annotations

import itertools

import numpy as np
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hce_support
import redmem
from hce_support import TableProvider
from redmem.recipes.hce import HCEPipeline, SemanticTree
from redmem.store._connection import settings as redmem_settings
from test_hce_tree import DIMENSIONS, assert_same, exhaustive, searched

_sessions = itertools.count()


def fresh(tree: SemanticTree, query: np.ndarray) -> list[tuple[str, float]]:
    """The search through a new client: matrices and member index read anew, as a new process would."""
    saved = redmem_settings()
    redmem.configure(client=redis.Redis(connection_pool=saved.client.connection_pool), key_prefix=saved.key_prefix)
    try:
        return searched(tree, query)
    finally:
        redmem.configure(client=saved.client, key_prefix=saved.key_prefix)


def test_a_read_after_no_write_keeps_the_members_scored_during_the_round_trip(db, monkeypatch):
    rng = np.random.default_rng(7)
    drawn = hce_support.random_vectors(rng, 125, 6, DIMENSIONS)
    vectors = {f"u{n}": v for n, v in enumerate(drawn[:120])}
    queries = drawn[120:]
    tree = SemanticTree("early", topic_threshold=0.75, topic_beam=4, leaf_limit=20)
    pipe = HCEPipeline(session_id="early", embedding_provider=TableProvider(vectors), tree=tree)
    pipe.update_many((f"u{n}", "a") for n in range(120))
    first = [searched(tree, q) for q in queries]  # the caches catch up with the writes here

    def scored_again(*args: object) -> None:
        raise AssertionError("the members were scored again after the replies")

    monkeypatch.setattr(tree, "hits", scored_again)
    again = [searched(tree, q) for q in queries]
    assert again == first and any(first)
    for query, found in zip(queries, again):
        assert_same(found, exhaustive(tree, vectors, query))


def test_a_write_between_reads_has_the_members_scored_again(db):
    rng = np.random.default_rng(8)
    drawn = hce_support.random_vectors(rng, 81, 4, DIMENSIONS)
    vectors = {f"u{n}": v for n, v in enumerate(drawn[:80])}
    tree = SemanticTree("again", topic_threshold=0.75, topic_beam=4, leaf_limit=80)
    pipe = HCEPipeline(session_id="again", embedding_provider=TableProvider(vectors), tree=tree)
    pipe.update_many((f"u{n}", "a") for n in range(40))
    first = searched(tree, drawn[80])
    pipe.update_many((f"u{n}", "a") for n in range(40, 80))
    found = searched(tree, drawn[80])
    assert {i for i, _ in found} - {i for i, _ in first}  # later members are in: the early hits were not kept
    assert_same(found, exhaustive(tree, vectors, drawn[80]))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), steps=st.lists(st.tuples(st.integers(0, 30), st.integers(1, 3)), min_size=1,
                                                   max_size=5),
       beam=st.integers(1, 6), limit=st.integers(1, 60))
def test_any_interleaving_of_writes_and_reads_answers_as_a_new_process(db, seed, steps, beam, limit):
    rng = np.random.default_rng(seed)
    drawn = hce_support.random_vectors(rng, 160, 5, DIMENSIONS)
    vectors = {f"u{n}": v for n, v in enumerate(drawn[:150])}
    queries = drawn[150:]
    session = f"mixed{next(_sessions)}"
    tree = SemanticTree(session, topic_threshold=0.75, topic_beam=beam, leaf_limit=limit)
    pipe = HCEPipeline(session_id=session, embedding_provider=TableProvider(vectors), tree=tree)
    written = 0
    for batch, reads in steps:  # a batch written (or none), then reads with nothing written between
        if batch and written + batch <= len(vectors):
            pipe.update_many((f"u{n}", "a") for n in range(written, written + batch))
            written += batch
        for query in queries[:reads]:
            assert searched(tree, query) == fresh(tree, query)
