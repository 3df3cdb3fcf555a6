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

Nested trees (``nest_threshold``, off by default, see :data:`NEST_THRESHOLD`): session -> group ->
topic -> interaction. A topic, when it opens, joins the group (:class:`HCEGroup`) nearest its
vector at cosine ``nest_threshold`` or more, or opens one, by the same rule as an interaction
joins a topic; the group log (``<topic id> <group id>``, :mod:`.members`) records it. The search
keeps the ``group_beam`` nearest groups scoring ``threshold`` or more, scores their topics
``0.7 * cosine + 0.3 * group score`` and keeps the ``topic_beam`` best, then their members as
above (best possible score ``0.7 + 0.3 * (0.7 + 0.3 * 0.7) = 0.973``).

Only the members of the topics kept are scored (:meth:`SemanticTree.hits`): the session's member
index (:mod:`.members`) lists them, and their rows of the session's vector matrix are scored
alone, so a search costs the size of the topics it keeps, not of the session. In a flat tree they
are scored while the server answers the search's round trip, from the cached topics, vectors and
index (:class:`TreeSearch`), and scored again only when the replies change any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from ...embeddings._matrix import VectorMatrix
from ...fields._embedding_search import VectorSearch
from ...fields.search_protocol import Hits, LocalSearch, Search, run_search
from ...model._dbkey import DbKey
from ...model._loading import load_records
from ...model._persistence import queue_new_records
from ...store._errors import ValidationError
from ...store._validation import is_real, positive_int
from ._keys import HCEKeyKind
from ._members import MemberIndex, MemberRead, member_entry
from ._models import HCEGroup, HCEInteraction, HCETopic
from ._provider import query_vector_of
from ._validity import Visibility

__all__ = ["SemanticTree", "TreeHit", "TreeSearch", "Placement", "GROUP_BEAM", "hierarchical_relevance_search", "tree_scores", "joined",
           "FOLLOW_MEMBERS", "OWN_WEIGHT",
           "PARENT_WEIGHT", "ROOT_SCORE", "MAX_SCORE"]

OWN_WEIGHT, PARENT_WEIGHT = 0.7, 0.3
#: Whether topic vectors follow their members by default (see :class:`SemanticTree`). Off: on
#: LoCoMo dev (MiniLM, exact counts) following them gave evidence recall 0.735 / 0.868 on the dev
#: half at 500 / 1,500 tokens (0.701 / 0.844 without) but 0.692 / 0.830 on the held-out half
#: (0.698 / 0.836), and fewer, larger topics (30 instead of 131 at 3,000 synthetic exchanges),
#: so a search scores more members.
FOLLOW_MEMBERS = False
#: Whether trees are nested by default (None: topics hang from the root; see :class:`SemanticTree`).
#: Off: on LoCoMo dev (MiniLM, exact counts) nesting at 0.35 raised the block's evidence recall on the
#: dev half (0.730 / 0.865 at 500 / 1,500 tokens, against 0.701 / 0.844) but lowered it on the
#: held-out half (0.634 / 0.818, against 0.698 / 0.836; below the ContextAssembler's 0.694 at 500),
#: ``benchmarks/results/hce_nested.md``: a dev-half gain that does not carry over.
NEST_THRESHOLD: float | None = None
#: How many nearest groups a nested search keeps.
GROUP_BEAM = 8
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


class Placement(NamedTuple):
    """Where a batch of interactions goes: each one's topic, the topics and groups it opens, the new
    vectors of the stored topics and groups it joins, and each opened topic's group (nested trees)."""

    topic_ids: list[str]
    topics: list[HCETopic]
    moved_topics: dict[str, np.ndarray]
    groups: list[HCEGroup]
    moved_groups: dict[str, np.ndarray]
    group_of: dict[str, str]


class SemanticTree:
    """The semantic tree of one session (see the module docs).

    Args:
        session_id: the session.
        topic_threshold: the cosine at which an interaction joins a topic.
        threshold: the score below which a node (and its subtree) is skipped.
        topic_beam: how many topics the search keeps (the nearest, or in a nested tree the best
            scored children of the groups kept).
        leaf_limit: how many interactions (the best by score) the search returns.
        follow_members: a topic's (and group's) vector moves with each member that joins
            (:func:`joined`); False keeps the vector of the member that opened it.
        nest_threshold: None (the default, :data:`NEST_THRESHOLD`): topics hang from the session
            root; a cosine: the tree is nested, each new topic joins the group (:class:`HCEGroup`)
            nearest its vector when their cosine is at least this, or opens a group; a search
            keeps the ``group_beam`` nearest groups, then scores their topics. A session's
            nesting is chosen when its first interaction is written: topics written without it
            belong to no group, and a nested search does not reach them.
        group_beam: how many nearest groups a nested search keeps.
    """

    def __init__(self, session_id: str, topic_threshold: float = 0.5, threshold: float = 0.1,
                 topic_beam: int = 20, leaf_limit: int = 50, follow_members: bool = FOLLOW_MEMBERS,
                 nest_threshold: float | None = NEST_THRESHOLD, group_beam: int = GROUP_BEAM) -> None:
        self.session_id = session_id
        self.follow_members = bool(follow_members)
        self.space = HCEInteraction._meta.keyspace((HCEInteraction.session_id.validate(session_id),))
        self.topic_space = HCETopic._meta.keyspace((HCETopic.session_id.validate(session_id),))
        self.group_space = HCEGroup._meta.keyspace((HCEGroup.session_id.validate(session_id),))
        self.topic_threshold, self.threshold = float(topic_threshold), float(threshold)
        self.topic_beam, self.leaf_limit = positive_int("topic_beam", topic_beam), positive_int("leaf_limit", leaf_limit)
        if nest_threshold is not None and (not is_real(nest_threshold) or not -1 <= nest_threshold <= 1):
            raise ValidationError(f"nest_threshold must be None or a cosine in [-1, 1], not {nest_threshold!r}")
        self.nest_threshold = None if nest_threshold is None else float(nest_threshold)
        self.group_beam = positive_int("group_beam", group_beam)
        self.members_key = self.space.key(HCEKeyKind.TREE_MEMBERS)
        self.groups_key = self.space.key(HCEKeyKind.TREE_GROUPS)

    @property
    def nested(self) -> bool:
        """Whether topics group under parent topics (``nest_threshold`` given)."""
        return self.nest_threshold is not None

    def topic_searcher(self, vector: np.ndarray | None, limit: int) -> VectorSearch:
        """The search of the ``limit`` topics nearest ``vector`` (None, 0: their vectors brought up to date)."""
        search: VectorSearch = HCETopic.embedding.searcher(self.topic_space, vector, limit)
        return search

    def group_searcher(self, vector: np.ndarray, limit: int) -> VectorSearch:
        """The search of the ``limit`` groups nearest ``vector``."""
        search: VectorSearch = HCEGroup.embedding.searcher(self.group_space, vector, limit)
        return search

    def leaf_sync(self) -> VectorSearch:
        """The search that brings the session's interaction vectors up to date, ranking none
        (:meth:`hits` scores the members of the topics kept)."""
        search: VectorSearch = HCEInteraction.embedding.searcher(self.space, None, 0)
        return search

    def member_reader(self) -> MemberRead:
        """The search that brings the session's member index up to date."""
        return MemberRead(HCEInteraction._meta.client, self.members_key)

    def group_reader(self) -> MemberRead:
        """The search that brings the session's group index (group -> its topics) up to date."""
        return MemberRead(HCEInteraction._meta.client, self.groups_key)

    def write_searches(self, vector: np.ndarray) -> list[Search[Any]]:
        """What :meth:`assign` reads, to share the write's first round trip: the topics' vectors and
        the member index (and in a nested tree the groups' vectors and the group index)."""
        parts: list[Search[Any]] = [self.topic_searcher(vector, 1), self.member_reader()]
        if self.nested:
            parts += [self.group_searcher(vector, 1), self.group_reader()]
        return parts

    def assign(self, parts: list[Search[Any]], answers: list[Any], vectors: np.ndarray,
               opening: list[tuple[str, str]]) -> Placement:
        """Where ``vectors`` go (in order), from the searches of :meth:`write_searches` (``parts``,
        run together) and their ``answers``; ``opening`` is each vector's (id, label) should it open a topic (and its
        topic a group). Each vector is compared with the topics as the earlier ones of the batch
        left them (:func:`joined`); each opened topic with the groups likewise."""
        topics = _Level(cast(VectorSearch, parts[0]), answers[1], self.follow_members, vectors.shape[-1])
        chosen = [topics.place(_unit(np.asarray(v, dtype=np.float32)), new_id, label, self.topic_threshold)
                  for v, (new_id, label) in zip(vectors, opening)]
        opened = [HCETopic(session_id=self.session_id, topic_id=t, label=label, embedding=topics.vector(t))
                  for t, label in topics.labels.items()]
        groups: list[HCEGroup] = []
        moved_groups: dict[str, np.ndarray] = {}
        group_of: dict[str, str] = {}
        if self.nested and opened:
            level = _Level(cast(VectorSearch, parts[2]), answers[3], self.follow_members, vectors.shape[-1])
            group_of = {t.topic_id: level.place(_unit(np.asarray(t.embedding, dtype=np.float32)), t.topic_id, t.label,
                                                cast(float, self.nest_threshold)) for t in opened}
            groups = [HCEGroup(session_id=self.session_id, group_id=g, label=label, embedding=level.vector(g))
                      for g, label in level.labels.items()]
            moved_groups = level.moved()
        return Placement(chosen, opened, topics.moved(), groups, moved_groups, group_of)

    def queue_placement(self, pipe: Any, client: Any, placement: Placement, members: Iterable[tuple[str, str]]) -> None:
        """Queue, in the interactions' transaction, the topics and groups opened, the new vectors of
        those joined, the log entries of the new (interaction id, topic id) pairs and of the new
        (topic id, group id) pairs."""
        if placement.topics:
            queue_new_records(pipe, client, placement.topics, fresh=True)
        if placement.groups:
            queue_new_records(pipe, client, placement.groups, fresh=True)
        HCETopic.embedding.queue_vectors(pipe, self.topic_space, placement.moved_topics)
        HCEGroup.embedding.queue_vectors(pipe, self.group_space, placement.moved_groups)
        entries = [member_entry(interaction, topic) for interaction, topic in members]
        if entries:
            pipe.rpush(self.members_key, *entries)
        if placement.group_of:
            pipe.rpush(self.groups_key, *[member_entry(t, g) for t, g in placement.group_of.items()])

    def read_searches(self, vector: np.ndarray) -> list[Search[Any]]:
        """What a search reads in its round trip (:meth:`kept_topics`, then :meth:`hits`): the
        ``topic_beam`` nearest topics, or in a nested tree the ``group_beam`` nearest groups with
        the topics' vectors and the group index; then the interactions' vectors and the member index."""
        if self.nested:
            parts: list[Search[Any]] = [self.group_searcher(vector, self.group_beam), self.topic_searcher(None, 0),
                                        self.group_reader()]
        else:
            parts = [self.topic_searcher(vector, self.topic_beam)]
        return [*parts, self.leaf_sync(), self.member_reader()]

    def kept_topics(self, vector: np.ndarray, parts: list[Search[Any]], answers: list[Any]) -> dict[str, float]:
        """The topics a search keeps and their scores, from the searches of :meth:`read_searches`
        but its last two (``parts``, run) and their ``answers``: a node scores ``OWN_WEIGHT * cosine + PARENT_WEIGHT * its parent's score``
        (the root 0) and is kept at ``threshold`` or more; in a nested tree the ``topic_beam`` best
        children of the groups kept."""
        if not self.nested:
            top = {t: OWN_WEIGHT * c + PARENT_WEIGHT * ROOT_SCORE for t, c in answers[0]}
            return {t: score for t, score in top.items() if score >= self.threshold}
        group_hits, _, index = answers
        groups = {g: OWN_WEIGHT * c + PARENT_WEIGHT * ROOT_SCORE for g, c in group_hits}
        kept_groups = [g for g, score in groups.items() if score >= self.threshold]
        matrix = cast(VectorSearch, parts[1]).matrix
        with matrix.lock:
            if not kept_groups or matrix.dimensions != vector.shape[-1]:
                return {}
            children, rows = index.rows(kept_groups, matrix)
            cosines = matrix.cosines_at(vector, np.concatenate(rows))
        owners = np.repeat(np.arange(len(kept_groups)), [r.size for r in rows])
        names = [t for group, r in zip(children, rows) for t in group[: r.size]]
        scores = OWN_WEIGHT * cosines.astype(np.float64) + PARENT_WEIGHT * np.array(
            [groups[g] for g in kept_groups], dtype=np.float64)[owners]
        ranked = sorted(((float(s), t) for s, t in zip(scores, names) if s >= self.threshold), key=lambda x: (-x[0], x[1]))
        return {t: s for s, t in ranked[: self.topic_beam]}

    def hits(self, vector: np.ndarray, kept: dict[str, float], leaves: VectorSearch,
             index: MemberIndex) -> list[TreeHit]:
        """The members of the ``kept`` topics (read from ``index``, scored on the matrix ``leaves``
        brought up to date): ``OWN_WEIGHT * cosine + PARENT_WEIGHT * topic score``, those at
        ``threshold`` or more, the ``leaf_limit`` best."""
        with leaves.matrix.lock:
            return self.scored_members(vector, kept, leaves.matrix, index.rows)

    def scored_members(self, vector: np.ndarray, kept: dict[str, float], matrix: VectorMatrix,
                       rows_of: Callable[[list[str], VectorMatrix], tuple[list[list[str]], list[np.ndarray]]],
                       ) -> list[TreeHit]:
        """:meth:`hits` for a caller holding ``matrix``'s lock, the members' rows read by ``rows_of``
        (:meth:`MemberIndex.rows`, or :meth:`MemberIndex.rows_held` under the index's lock)."""
        topics = list(kept)
        if not topics or matrix.dimensions != vector.shape[-1]:
            return []
        groups, rows = rows_of(topics, matrix)
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


class _Level:
    """One level's clustering during a write: the stored nodes' unit vectors (from a vector search
    just run) and sizes (from their index), and the nodes the batch opens."""

    def __init__(self, search: VectorSearch, index: MemberIndex, follow: bool, dimensions: int) -> None:
        known = search.matrix.unit_vectors(list(search.matrix.ids))
        self.ids = list(known)
        self.table = (np.stack(list(known.values())) if known else np.zeros((0, dimensions), dtype=np.float32))
        self.index, self.follow = index, follow
        self.sizes: dict[str, int] = {}
        self.labels: dict[str, str] = {}

    def place(self, v: np.ndarray, new_id: str, label: str, threshold: float) -> str:
        """The node the unit vector ``v`` joins (moving it when nodes follow their members), or
        ``new_id``, opened with ``label``, when none is at ``threshold`` or nearer."""
        cosines = self.table @ v if self.ids and self.table.shape[-1] == v.shape[-1] else np.zeros(0, dtype=np.float32)
        best = int(np.argmax(cosines)) if cosines.size else -1
        if best >= 0 and cosines[best] >= threshold:
            node = self.ids[best]
            size = self.sizes.get(node) or max(len(self.index.by_topic.get(node, ())), 1)
            if self.follow:
                self.table[best], self.sizes[node] = joined(self.table[best], size, v), size + 1
            else:
                self.sizes.setdefault(node, size)
            return node
        self.ids.append(new_id)
        self.table = np.vstack([self.table, v[None, :]]) if self.table.size else v[None, :].copy()
        self.sizes[new_id], self.labels[new_id] = 1, label
        return new_id

    def vector(self, node: str) -> np.ndarray:
        row: np.ndarray = self.table[self.ids.index(node)]
        return row

    def moved(self) -> dict[str, np.ndarray]:
        """The new vectors of the stored nodes joined (when nodes follow their members)."""
        if not self.follow:
            return {}
        row = {node: n for n, node in enumerate(self.ids)}
        return {t: self.table[row[t]] for t in self.sizes if t not in self.labels}


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def joined(direction: np.ndarray, size: int, member: np.ndarray) -> np.ndarray:
    """A topic's unit vector once ``member`` (a unit vector) joins its ``size`` members:
    ``unit(size * direction + member)``, the online spherical k-means update (each member pulls
    the topic by ``1 / (size + 1)``): exactly the mean direction of the first two members, a
    running approximation of it after."""
    return _unit(size * direction + member).astype(np.float32)


class _Early(NamedTuple):
    """A flat tree's hits scored while the server answered, and what they were scored from: the
    nearest topics, the interactions' matrix (its id list and generation) and the member index
    (its topic lists and entries read). Any change the replies bring makes them a new object or count."""

    topics: list[tuple[str, float]]
    ids: list[str]
    generation: int
    by_topic: dict[str, list[str]]
    read: int
    hits: list[TreeHit]

    def holds(self, topics: list[tuple[str, float]], matrix: VectorMatrix, index: MemberIndex) -> bool:
        """Whether the replies changed nothing the hits were scored from."""
        return (topics == self.topics and matrix.ids is self.ids and matrix.generation == self.generation
                and index.by_topic is self.by_topic and index.read == self.read)


class TreeSearch:
    """The tree's hierarchical search as one ranked list of (interaction id, score), a
    :class:`~redmem.fields.search_protocol.LocalSearch` sharing any round trip: the searches of
    :meth:`SemanticTree.read_searches`, then :meth:`SemanticTree.kept_topics` and
    :meth:`SemanticTree.hits` (kept in :attr:`hits`).

    In a flat tree the members are scored in :meth:`work`, while the server answers, from the
    cached topics, vectors and member index (the search holds their locks from :meth:`calls` to
    :meth:`finish`); :meth:`finish` keeps those hits when the replies changed none of them (the
    usual read: nothing written since the last) and scores again otherwise, so the answer is
    always that of the state the replies bring.
    """

    def __init__(self, tree: SemanticTree, vector: np.ndarray) -> None:
        self.tree, self.vector = tree, vector
        self.parts: list[Search[Any]] = tree.read_searches(vector)
        self.sizes: list[int] = []
        self.hits: list[TreeHit] = []
        self._early: _Early | None = None

    def calls(self) -> list[Any]:
        planned = [part.calls() for part in self.parts]
        self.sizes = [len(calls) for calls in planned]
        return [call for calls in planned for call in calls]

    def work(self) -> None:
        for part in self.parts:
            if isinstance(part, LocalSearch):
                part.work()
        if not self.tree.nested:
            self._early = self._scored_early()

    def _scored_early(self) -> _Early:
        """The hits as the cached state stands (the parts' locks held since :meth:`calls`)."""
        topics = cast(VectorSearch, self.parts[0]).work().hits
        matrix, index = cast(VectorSearch, self.parts[-2]).matrix, cast(MemberRead, self.parts[-1]).index
        kept = self.tree.kept_topics(self.vector, self.parts[:1], [topics])
        hits = self.tree.scored_members(self.vector, kept, matrix, index.rows_held)
        return _Early(topics, matrix.ids, matrix.generation, index.by_topic, index.read, hits)

    def abandon(self) -> None:
        self._early = None
        for part in self.parts:
            if isinstance(part, LocalSearch):
                part.abandon()

    def finish(self, replies: list[Any]) -> Hits:
        answers, start = [], 0
        for part, size in zip(self.parts, self.sizes):
            answers.append(part.finish(replies[start:start + size]))
            start += size
        *topic_answers, _, index = answers
        leaves = cast(VectorSearch, self.parts[-2])
        early, self._early = self._early, None
        with leaves.matrix.lock:
            kept_early = early is not None and early.holds(topic_answers[0], leaves.matrix, index)
        if early is not None and kept_early:
            self.hits = early.hits
        else:
            kept = self.tree.kept_topics(self.vector, self.parts[:-2], topic_answers)
            self.hits = self.tree.hits(self.vector, kept, leaves, index)
        return [(hit.interaction_id, hit.score) for hit in self.hits]


def hierarchical_relevance_search(tree: SemanticTree, query: Any, top_k: int = 10, *,
                                  embedding_provider: Any = None, as_of: Any = None,
                                  ) -> list[tuple[HCEInteraction, float]]:
    """The ``top_k`` interactions of ``tree`` by hierarchical score for ``query``, a text (embedded
    by ``embedding_provider``, default the pipeline's: the configured provider, else feature
    hashing) or a vector: two round trips (the topic search with the updates of the vectors and
    the member index, then the interactions; more loads only when some loaded were not visible).
    Only the current interactions, or those valid ``as_of`` (see :class:`~redmem.recipes.hce._validity.Visibility`)."""
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
