"""SemanticTree: session -> topic -> interaction, and the hierarchical relevance search over it.

Topic assignment: a new interaction joins the topic whose vector is nearest its own when their
cosine is at least ``topic_threshold``; otherwise it opens a new topic whose vector is its own
and whose label is the first words of its user turn. A topic's vector never changes, so
concurrent writers need no read-modify-write (two may open near-identical topics; nothing is lost).

Search (:func:`tree_scores`): the session root has no text, so its score is 0; a node's score is
``0.7 * its cosine with the query + 0.3 * its parent's score``. Topics are the ``topic_beam``
nearest; a topic below ``threshold`` is skipped with all its interactions; an interaction below
``threshold`` is skipped. The best possible score is ``0.7 + 0.3 * 0.7 = 0.91`` (:data:`MAX_SCORE`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fields.embedding_search import VectorSearch
from ...fields.search_protocol import run_searches
from ...model.dbkey import DbKey
from ...model.loading import load_records
from ...store.validation import positive_int
from .models import HCEInteraction, HCETopic

__all__ = ["SemanticTree", "TreeHit", "hierarchical_relevance_search", "tree_scores", "OWN_WEIGHT",
           "PARENT_WEIGHT", "ROOT_SCORE", "MAX_SCORE"]

OWN_WEIGHT, PARENT_WEIGHT = 0.7, 0.3
#: The session node has no text of its own.
ROOT_SCORE = 0.0
MAX_SCORE = OWN_WEIGHT + PARENT_WEIGHT * (OWN_WEIGHT + PARENT_WEIGHT * ROOT_SCORE)


@dataclass(frozen=True)
class TreeHit:
    """An interaction the tree search kept: its score and its topic's."""

    interaction_id: str
    score: float
    topic_id: str
    topic_score: float


def tree_scores(topics: Iterable[tuple[str, float]], leaves: Iterable[tuple[str, float, str]],
                threshold: float) -> list[TreeHit]:
    """Hierarchical scores: ``topics`` are (topic id, cosine), ``leaves`` (interaction id, cosine,
    topic id); returns the interactions kept, best first (ties by id)."""
    kept_topics = {}
    for topic_id, cosine in topics:
        score = OWN_WEIGHT * cosine + PARENT_WEIGHT * ROOT_SCORE
        if score >= threshold:
            kept_topics[topic_id] = score
    hits = []
    for interaction_id, cosine, topic_id in leaves:
        parent = kept_topics.get(topic_id)
        if parent is None:
            continue
        score = OWN_WEIGHT * cosine + PARENT_WEIGHT * parent
        if score >= threshold:
            hits.append(TreeHit(interaction_id, score, topic_id, parent))
    return sorted(hits, key=lambda h: (-h.score, h.interaction_id))


class SemanticTree:
    """The semantic tree of one session (see the module docs).

    Args:
        session_id: the session.
        topic_threshold: the cosine at which an interaction joins a topic.
        threshold: the score below which a node (and a topic's subtree) is skipped.
        topic_beam: how many nearest topics the search considers.
        leaf_limit: how many nearest interactions the search scores.
    """

    def __init__(self, session_id: str, topic_threshold: float = 0.5, threshold: float = 0.1,
                 topic_beam: int = 20, leaf_limit: int = 50) -> None:
        self.session_id = session_id
        self.space = HCEInteraction._meta.keyspace((HCEInteraction.session_id.validate(session_id),))
        self.topic_space = HCETopic._meta.keyspace((HCETopic.session_id.validate(session_id),))
        self.topic_threshold, self.threshold = float(topic_threshold), float(threshold)
        self.topic_beam, self.leaf_limit = positive_int("topic_beam", topic_beam), positive_int("leaf_limit", leaf_limit)

    def topic_searcher(self, vector: np.ndarray, limit: int) -> VectorSearch:
        """The search of the ``limit`` topics nearest ``vector``."""
        search: VectorSearch = HCETopic.embedding.searcher(self.topic_space, vector, limit)
        return search

    def leaf_searcher(self, vector: np.ndarray) -> VectorSearch:
        """The search of the ``leaf_limit`` interactions nearest ``vector``."""
        search: VectorSearch = HCEInteraction.embedding.searcher(self.space, vector, self.leaf_limit)
        return search

    def assign(self, search: VectorSearch, vectors: np.ndarray, opening: list[tuple[str, str]],
               ) -> tuple[list[str], list[HCETopic]]:
        """Topic ids for ``vectors`` (in order) and the topics they open; ``search`` (a topic
        search just run) gives the session's topic matrix; ``opening`` is each vector's
        (id, label) should it open a topic. Later vectors may join topics opened by earlier ones."""
        matrix = search.matrix
        opened: list[tuple[str, np.ndarray]] = []
        ids, topics = [], []
        with matrix.lock:
            for vector, (new_id, label) in zip(vectors, opening):
                candidates = matrix.search(vector, 1) if matrix.dimensions else []
                candidates += [(tid, float(np.dot(vector, v))) for tid, v in opened]
                best = max(candidates, key=lambda c: c[1], default=None)
                if best is not None and best[1] >= self.topic_threshold:
                    ids.append(best[0])
                    continue
                opened.append((new_id, vector / (np.linalg.norm(vector) or 1.0)))
                ids.append(new_id)
                topics.append(HCETopic(session_id=self.session_id, topic_id=new_id, label=label, embedding=vector))
        return ids, topics

    def scored(self, topic_hits: list[tuple[str, float]], leaf_hits: list[tuple[str, float]],
               records: Mapping[str, HCEInteraction]) -> list[TreeHit]:
        """:func:`tree_scores` of searched hits, leaf topics read from the loaded ``records``."""
        leaves = [(rid, cosine, records[rid].topic_id) for rid, cosine in leaf_hits if rid in records]
        return tree_scores(topic_hits, leaves, self.threshold)


def hierarchical_relevance_search(tree: SemanticTree, query_vector: Any, top_k: int = 10) -> list[tuple[HCEInteraction, float]]:
    """The ``top_k`` interactions of ``tree`` by hierarchical score for a query vector: two round
    trips (both vector searches, then the interactions)."""
    vector = np.asarray(query_vector, dtype=np.float32)
    topic_hits, leaf_hits = run_searches(HCEInteraction._meta.client,
                                         [tree.topic_searcher(vector, tree.topic_beam), tree.leaf_searcher(vector)])
    loaded = load_records(HCEInteraction, [DbKey(tree.space, rid) for rid, _ in leaf_hits], track=False)
    records = {r.interaction_id: r for r in loaded}
    return [(records[h.interaction_id], h.score) for h in tree.scored(topic_hits, leaf_hits, records)[:top_k]]
