"""SemanticTree: session -> topic -> interaction, and the hierarchical relevance search over it.

Topic assignment: a new interaction joins the topic whose vector is nearest its own when their
cosine is at least ``topic_threshold``; otherwise it opens a new topic whose vector is its own
and whose label is the first words of its user turn. With ``follow_members`` (off by default,
see :data:`FOLLOW_MEMBERS`) a topic's vector follows its members: each join moves it to
:func:`joined` (the running mean direction of its members), written in the interaction's
transaction; otherwise it keeps the vector of the interaction that opened it. Two concurrent writers joining one topic each move it from the
vector they read, so the last write wins and the other's pull is lost until the next join;
membership is never lost (the member log), and two writers may open near-identical topics.

Search (:func:`tree_scores`, the rule): the session root has no text, so its score is 0; a node's
score is ``0.7 * its cosine with the query + 0.3 * its parent's score``. Topics are the
``topic_beam`` nearest; a topic below ``threshold`` is skipped with all its interactions; an
interaction below ``threshold`` is skipped; the ``leaf_limit`` best are kept. The best possible
score is ``0.7 + 0.3 * 0.7 = 0.91`` (:data:`MAX_SCORE`).

Only the members of the topics kept are scored (:meth:`SemanticTree.hits`): the session's member
index (:mod:`.members`) lists them, and their rows of the session's vector matrix are scored
alone, so a search costs the size of the topics it keeps, not of the session.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...fields.embedding_search import VectorSearch
from ...fields.search_protocol import Hits, LocalSearch, Search, run_search
from ...model.dbkey import DbKey
from ...model.loading import load_records
from ...store.validation import positive_int
from .keys import HCEKeyKind
from .members import MemberIndex, MemberRead, member_entry
from .models import HCEInteraction, HCETopic
from .provider import query_vector_of
from .validity import Visibility

__all__ = ["SemanticTree", "TreeHit", "TreeSearch", "hierarchical_relevance_search", "tree_scores", "joined",
           "FOLLOW_MEMBERS", "OWN_WEIGHT",
           "PARENT_WEIGHT", "ROOT_SCORE", "MAX_SCORE"]

OWN_WEIGHT, PARENT_WEIGHT = 0.7, 0.3
#: Whether topic vectors follow their members by default (see :class:`SemanticTree`). Off: on
#: LoCoMo dev (MiniLM, exact counts) following them gave evidence recall 0.735 / 0.868 on the dev
#: half at 500 / 1,500 tokens (0.701 / 0.844 without) but 0.692 / 0.830 on the held-out half
#: (0.698 / 0.836), and fewer, larger topics (30 instead of 131 at 3,000 synthetic exchanges),
#: so a search scores more members.
FOLLOW_MEMBERS = False
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
        leaf_limit: how many interactions (the best by score) the search returns.
        follow_members: a topic's vector moves with each member that joins (:func:`joined`);
            False keeps the vector of the interaction that opened it.
    """

    def __init__(self, session_id: str, topic_threshold: float = 0.5, threshold: float = 0.1,
                 topic_beam: int = 20, leaf_limit: int = 50, follow_members: bool = FOLLOW_MEMBERS) -> None:
        self.session_id = session_id
        self.follow_members = bool(follow_members)
        self.space = HCEInteraction._meta.keyspace((HCEInteraction.session_id.validate(session_id),))
        self.topic_space = HCETopic._meta.keyspace((HCETopic.session_id.validate(session_id),))
        self.topic_threshold, self.threshold = float(topic_threshold), float(threshold)
        self.topic_beam, self.leaf_limit = positive_int("topic_beam", topic_beam), positive_int("leaf_limit", leaf_limit)
        self.members_key = self.space.key(HCEKeyKind.TREE_MEMBERS)

    def topic_searcher(self, vector: np.ndarray, limit: int) -> VectorSearch:
        """The search of the ``limit`` topics nearest ``vector``."""
        search: VectorSearch = HCETopic.embedding.searcher(self.topic_space, vector, limit)
        return search

    def leaf_sync(self) -> VectorSearch:
        """The search that brings the session's interaction vectors up to date, ranking none
        (:meth:`hits` scores the members of the topics kept)."""
        search: VectorSearch = HCEInteraction.embedding.searcher(self.space, None, 0)
        return search

    def member_reader(self) -> MemberRead:
        """The search that brings the session's member index up to date."""
        return MemberRead(HCEInteraction._meta.client, self.members_key)

    def queue_members(self, pipe: Any, members: Iterable[tuple[str, str]]) -> None:
        """Queue the log entries of new (interaction id, topic id) pairs, in the interactions' transaction."""
        entries = [member_entry(interaction, topic) for interaction, topic in members]
        if entries:
            pipe.rpush(self.members_key, *entries)

    def assign(self, search: VectorSearch, vectors: np.ndarray, opening: list[tuple[str, str]], members: MemberIndex,
               ) -> tuple[list[str], list[HCETopic], dict[str, np.ndarray]]:
        """Topic ids for ``vectors`` (in order), the topics they open and the new vectors of the
        stored topics they join. ``search`` (a topic search just run) gives the session's topic
        vectors, ``members`` (read in the same round trip) their sizes; ``opening`` is each
        vector's (id, label) should it open a topic. Each vector is compared with the topics as
        the earlier ones of the batch left them (:func:`joined`)."""
        known = search.matrix.unit_vectors(list(search.matrix.ids))
        ids = list(known)
        table = np.stack(list(known.values())) if known else np.zeros((0, vectors.shape[-1]), dtype=np.float32)
        sizes: dict[str, int] = {}
        labels: dict[str, str] = {}
        chosen = []
        for vector, (new_id, label) in zip(vectors, opening):
            v = _unit(np.asarray(vector, dtype=np.float32))
            cosines = table @ v if ids and table.shape[-1] == v.shape[-1] else np.zeros(0, dtype=np.float32)
            best = int(np.argmax(cosines)) if cosines.size else -1
            if best >= 0 and cosines[best] >= self.topic_threshold:
                topic = ids[best]
                size = sizes.get(topic) or max(len(members.by_topic.get(topic, ())), 1)
                if self.follow_members:
                    table[best], sizes[topic] = joined(table[best], size, v), size + 1
                chosen.append(topic)
                continue
            ids.append(new_id)
            table = np.vstack([table, v[None, :]]) if table.size else v[None, :].copy()
            sizes[new_id], labels[new_id] = 1, label
            chosen.append(new_id)
        row = {topic: n for n, topic in enumerate(ids)}
        topics = [HCETopic(session_id=self.session_id, topic_id=t, label=label, embedding=table[row[t]])
                  for t, label in labels.items()]
        return chosen, topics, {t: table[row[t]] for t in sizes if t not in labels}

    def queue_moves(self, pipe: Any, moved: dict[str, np.ndarray]) -> None:
        """Queue the new vectors of stored topics, in the interactions' transaction."""
        HCETopic.embedding.queue_vectors(pipe, self.topic_space, moved)

    def hits(self, vector: np.ndarray, topic_hits: list[tuple[str, float]], leaves: VectorSearch,
             index: MemberIndex) -> list[TreeHit]:
        """:func:`tree_scores` of the topics searched and every member of those kept (read from
        ``index``, scored on the matrix ``leaves`` brought up to date), the ``leaf_limit`` best."""
        kept = {t: OWN_WEIGHT * c + PARENT_WEIGHT * ROOT_SCORE for t, c in topic_hits}
        topics = [t for t, score in kept.items() if score >= self.threshold]
        matrix = leaves.matrix
        with matrix.lock:
            if not topics or matrix.dimensions != vector.shape[-1]:
                return []
            groups, rows = index.rows(topics, matrix)
            cosines = matrix.cosines_at(vector, np.concatenate(rows))
        sizes = [r.size for r in rows]
        owners = np.repeat(np.arange(len(topics)), sizes)
        starts = np.cumsum([0, *sizes])
        parents = np.array([kept[t] for t in topics], dtype=np.float64)[owners]
        scores = OWN_WEIGHT * cosines.astype(np.float64) + PARENT_WEIGHT * parents
        chosen = np.flatnonzero(scores >= self.threshold)
        if chosen.size > self.leaf_limit:
            kth = np.partition(scores[chosen], chosen.size - self.leaf_limit)[chosen.size - self.leaf_limit]
            chosen = chosen[scores[chosen] >= kth]
        found = [TreeHit(groups[owners[n]][n - starts[owners[n]]], float(scores[n]), topics[owners[n]], float(parents[n]))
                 for n in chosen]
        return sorted(found, key=lambda h: (-h.score, h.interaction_id))[: self.leaf_limit]


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def joined(direction: np.ndarray, size: int, member: np.ndarray) -> np.ndarray:
    """A topic's unit vector once ``member`` (a unit vector) joins its ``size`` members:
    ``unit(size * direction + member)``, the online spherical k-means update (each member pulls
    the topic by ``1 / (size + 1)``): exactly the mean direction of the first two members, a
    running approximation of it after."""
    return _unit(size * direction + member).astype(np.float32)


class TreeSearch:
    """The tree's hierarchical search as one ranked list of (interaction id, score), a
    :class:`~redmem.fields.search_protocol.LocalSearch` sharing any round trip: the topic search,
    the update of the interaction vectors and of the member index, then :meth:`SemanticTree.hits`
    (kept in :attr:`hits`)."""

    def __init__(self, tree: SemanticTree, vector: np.ndarray) -> None:
        self.tree, self.vector = tree, vector
        self.leaves = tree.leaf_sync()
        self.parts: list[Search[Any]] = [tree.topic_searcher(vector, tree.topic_beam), self.leaves,
                                         tree.member_reader()]
        self.sizes: list[int] = []
        self.hits: list[TreeHit] = []

    def calls(self) -> list[Any]:
        planned = [part.calls() for part in self.parts]
        self.sizes = [len(calls) for calls in planned]
        return [call for calls in planned for call in calls]

    def work(self) -> None:
        for part in self.parts:
            if isinstance(part, LocalSearch):
                part.work()

    def abandon(self) -> None:
        for part in self.parts:
            if isinstance(part, LocalSearch):
                part.abandon()

    def finish(self, replies: list[Any]) -> Hits:
        answers, start = [], 0
        for part, size in zip(self.parts, self.sizes):
            answers.append(part.finish(replies[start:start + size]))
            start += size
        topic_hits, _, index = answers
        self.hits = self.tree.hits(self.vector, topic_hits, self.leaves, index)
        return [(hit.interaction_id, hit.score) for hit in self.hits]


def hierarchical_relevance_search(tree: SemanticTree, query: Any, top_k: int = 10, *,
                                  embedding_provider: Any = None, as_of: Any = None,
                                  ) -> list[tuple[HCEInteraction, float]]:
    """The ``top_k`` interactions of ``tree`` by hierarchical score for ``query``, a text (embedded
    by ``embedding_provider``, default the pipeline's: the configured provider, else feature
    hashing) or a vector: two round trips (the topic search with the updates of the vectors and
    the member index, then the interactions; more loads only when some loaded were not visible).
    Only the current interactions, or those valid ``as_of`` (see :class:`~redmem.recipes.hce.validity.Visibility`)."""
    visible = Visibility(as_of)
    search = TreeSearch(tree, query_vector_of(query, embedding_provider))
    run_search(HCEInteraction._meta.client, search)
    found: list[tuple[HCEInteraction, float]] = []
    hits = search.hits
    while hits and len(found) < top_k:  # a second load only when superseded ones were left out
        wanted, hits = hits[:top_k - len(found)], hits[top_k - len(found):]
        loaded = load_records(HCEInteraction, [DbKey(tree.space, h.interaction_id) for h in wanted], track=False)
        records = {r.interaction_id: r for r in loaded if visible(r.valid_from or r.timestamp, r.valid_to)}
        found += [(records[h.interaction_id], h.score) for h in wanted if h.interaction_id in records]
    return found
