"""The semantic tree's search scores only the members of the topics it keeps: on a random tree it
returns exactly what an exhaustive evaluation of the rule (every topic, every interaction) returns."""

from __future__ import annotations

import numpy as np
import pytest

import hce_support
from hce_support import TableProvider
from redmem.embeddings._codec import decode_stored_vector
from redmem.fields.search_protocol import run_search
from redmem.recipes.hce import HCEPipeline, SemanticTree, hierarchical_relevance_search
from redmem.recipes.hce._models import HCEInteraction, HCETopic
from redmem.recipes.hce._tree import TreeSearch, tree_scores

DIMENSIONS = 24


def random_vectors(rng: np.random.Generator, count: int, clusters: int) -> list[np.ndarray]:
    """Clustered vectors of this module's width (:func:`hce_support.random_vectors`)."""
    return hce_support.random_vectors(rng, count, clusters, DIMENSIONS)


def topic_vectors(session: str) -> dict[str, np.ndarray]:
    """Each topic's vector as stored (the embedding field's vector hash)."""
    tree = SemanticTree(session)
    raw = HCETopic._meta.client.hgetall(HCETopic.embedding.keys(tree.topic_space)[0])
    return {k.decode(): decode_stored_vector(v)[0] for k, v in raw.items()}


def unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=np.float64) / np.linalg.norm(v)


def exhaustive(tree: SemanticTree, vectors: dict[str, np.ndarray], query: np.ndarray) -> list[tuple[str, float]]:
    """The rule over every stored interaction and topic (each topic's vector as stored, the id of
    the interaction that opened it); topics are the beam nearest (cosine > 0)."""
    stored = HCEInteraction.query.filter(session_id=tree.session_id).all()
    text = {r.interaction_id: r.user for r in stored}
    cosine = {r.interaction_id: float(unit(vectors[r.user]) @ unit(query)) for r in stored}
    topic_cosine = {t: float(unit(v) @ unit(query)) for t, v in topic_vectors(tree.session_id).items()}
    topics = sorted({r.topic_id for r in stored}, key=lambda t: (-topic_cosine[t], t))
    beam = [(t, topic_cosine[t]) for t in topics if topic_cosine[t] > 0][: tree.topic_beam]
    leaves = [(r.interaction_id, cosine[r.interaction_id], r.topic_id) for r in stored]
    assert all(t in text for t in topics)
    return [(h.interaction_id, h.score) for h in tree_scores(beam, leaves, tree.threshold)[: tree.leaf_limit]]


def searched(tree: SemanticTree, query: np.ndarray) -> list[tuple[str, float]]:
    return run_search(HCEInteraction._meta.client, TreeSearch(tree, query))


def assert_same(found: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [i for i, _ in found] == [i for i, _ in expected]
    assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-5)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_tree_search_equals_the_exhaustive_rule_on_a_random_tree(any_db, tmp_path, seed):
    rng = np.random.default_rng(seed)
    drawn = random_vectors(rng, 412, 25)  # queries near the same centres as the turns
    vectors = {f"u{n}": v for n, v in enumerate(drawn[:400])}
    queries = {f"q{n}": v for n, v in enumerate(drawn[400:])}
    provider = TableProvider({**vectors, **queries})
    trees = [SemanticTree("tree", topic_threshold=0.75, threshold=0.1, topic_beam=6, leaf_limit=1000,
                          follow_members=True),
             SemanticTree("tree", topic_threshold=0.75, threshold=0.35, topic_beam=3, leaf_limit=15)]
    pipe = HCEPipeline(session_id="tree", embedding_provider=provider, tree=trees[0])
    pipe.update_many((f"u{n}", "a") for n in range(250))
    pipe.save(tmp_path / "early")
    for start in range(250, 400, 50):  # later writes: the index catches up with its log
        pipe.update_many((f"u{n}", "a") for n in range(start, start + 50))
    topics = {r.topic_id for r in HCEInteraction.query.filter(session_id="tree").all()}
    assert 6 < len(topics) < 300  # a tree: topics of several members, more topics than the beam
    opener = {t.topic_id: unit(vectors[t.label]) for t in HCETopic.query.filter(session_id="tree").all()}
    assert any(unit(v) @ opener[t] < 0.999 for t, v in topic_vectors("tree").items())  # they followed their members
    for tree in trees:
        for query in queries.values():
            assert_same(searched(tree, query), exhaustive(tree, vectors, query))
        assert any(len(exhaustive(tree, vectors, q)) > 1 for q in queries.values())
    query = queries["q0"]
    found = hierarchical_relevance_search(trees[1], query, top_k=5)
    assert_same([(r.interaction_id, s) for r, s in found], exhaustive(trees[1], vectors, query)[:5])
    pipe.load(tmp_path / "early")  # the log is replaced: the index reads it again
    for tree in trees:
        assert_same(searched(tree, query), exhaustive(tree, vectors, query))
    assert len(HCEInteraction.query.filter(session_id="tree").all()) == 250


def test_a_topic_vector_is_the_running_mean_direction_of_its_members(db):
    a, b, c = (np.eye(DIMENSIONS, dtype=np.float32)[i] + np.eye(DIMENSIONS, dtype=np.float32)[0] * 2 for i in (1, 2, 3))
    far = np.eye(DIMENSIONS, dtype=np.float32)[5]
    provider = TableProvider({"u1": a, "u2": b, "u3": c, "u4": far})
    pipe = HCEPipeline(session_id="mean", embedding_provider=provider, tree=SemanticTree("mean", topic_threshold=0.6, follow_members=True))
    pipe.update("u1", "a")

    def topic_vector() -> np.ndarray:
        [topic] = [t.topic_id for t in HCETopic.query.filter(session_id="mean").all() if t.label == "u1"]
        return unit(topic_vectors("mean")[topic])

    assert topic_vector() == pytest.approx(unit(a), abs=1e-3)
    pipe.update_many([("u2", "a")])
    assert topic_vector() == pytest.approx(unit(unit(a) + unit(b)), abs=1e-3)  # two members: their mean
    pipe.update_many([("u3", "a"), ("u4", "a")])  # u4 opens a topic of its own
    expected = unit(2 * unit(unit(a) + unit(b)) + unit(c))
    assert topic_vector() == pytest.approx(expected, abs=1e-3)
    assert len(HCETopic.query.filter(session_id="mean").all()) == 2


@pytest.mark.parametrize("seed", [4, 5])
def test_a_batch_joins_topics_as_the_same_turns_one_by_one(db, seed):
    rng = np.random.default_rng(seed)
    vectors = {f"u{n}": v for n, v in enumerate(random_vectors(rng, 40, 4))}
    provider = TableProvider(vectors)

    def tree_of(session: str, batch: bool) -> tuple[list[str], dict[str, np.ndarray]]:
        pipe = HCEPipeline(session_id=session, embedding_provider=provider,
                           tree=SemanticTree(session, topic_threshold=0.8, follow_members=True))
        turns = [(f"u{n}", "a") for n in range(40)]
        if batch:
            pipe.update_many(turns)
        else:
            for turn in turns:
                pipe.update(*turn)
        label = {t.topic_id: t.label for t in HCETopic.query.filter(session_id=session).all()}
        members = sorted(HCEInteraction.query.filter(session_id=session).all(), key=lambda r: int(r.user[1:]))
        return [label[r.topic_id] for r in members], {label[t]: unit(v) for t, v in topic_vectors(session).items()}

    (batch_topics, batch_vectors), (single_topics, single_vectors) = tree_of("batch", True), tree_of("single", False)
    assert batch_topics == single_topics and len(set(batch_topics)) > 1
    assert batch_vectors.keys() == single_vectors.keys()
    for label, vector in batch_vectors.items():  # one by one, each topic vector went through float16 storage
        assert vector == pytest.approx(single_vectors[label], abs=2e-3)


def test_by_default_a_topic_keeps_the_openers_vector(db):
    a, b = np.eye(DIMENSIONS, dtype=np.float32)[1] + 2 * np.eye(DIMENSIONS, dtype=np.float32)[0], \
        np.eye(DIMENSIONS, dtype=np.float32)[2] + 2 * np.eye(DIMENSIONS, dtype=np.float32)[0]
    pipe = HCEPipeline(session_id="frozen", embedding_provider=TableProvider({"u1": a, "u2": b}),
                       tree=SemanticTree("frozen", topic_threshold=0.6))
    pipe.update("u1", "a")
    pipe.update("u2", "a")
    [vector] = topic_vectors("frozen").values()
    assert unit(vector) == pytest.approx(unit(a), abs=1e-3)
