"""HCEPipeline: a chat middleware whose memory is a focus buffer, an entity graph and a semantic tree.

Per query (:meth:`HCEPipeline.retrieve_candidates`), at most three round trips whatever the
session's size: (1) the existence filter's check of the query's entity keys, the tree's topic
search with the updates of its interaction vectors and member index, and the focus buffer (the
tree then scores the members of the topics it keeps); (2) spreading activation from the entities that may
exist (skipped without any); (3) the interactions found, loaded. Then the candidates are
normalised per source, an interaction still in the focus buffer is left to the buffer, the graph
and the tree's findings of one interaction merge (its best utility), and the greedy knapsack
fits them into ``context_budget`` tokens.

Per turn (:meth:`HCEPipeline.update`): the turn pair is embedded, then two round trips: the
topic search and the member index's update with the existence check of its lower-case
mentions, then one MULTI/EXEC that stores the interaction (and its topic when it opens one, or
its topic's new vector when it joins one), its tree membership, its graph edges and both focus
entries.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, NamedTuple, cast

import numpy as np

from ...context._candidates import Candidate
from ...context._explain import Explanation
from ...context._fusion import checked_weights
from ...context._oversize import check_oversize
from ...context._result import ContextResult, Trail
from ...context._retrieval import (
    GRAPH_LIST,
    KEYWORD_LIST,
    SIGNAL_OF_LIST,
    Fusion,
    Retrieval,
    SeededLists,
    keyword_hits,
    retrieve,
)
from ...context._superseded import SupersededHit, combined, dropped_hits, superseded_hits
from ...context._tokens import ExactCounter, TokenCounter, resolve_counter
from ...embeddings._base import embed_in_batches
from ...fields.search_protocol import Hits, Mapped, Search, run_searches
from ...model._dbkey import DbKey
from ...model._field import Field
from ...model._loading import load_records
from ...model._persistence import queue_new_records
from ...observation._protocol import ObservationProtocol
from ...store._aio import async_variant
from ...store._connection import server_errors
from ...store._errors import ArgumentTypeError, QueryException, ValidationError
from ...store._scripts import run_script
from ...store._validation import is_real, positive_int, utf8_text
from ._budgeting import SOURCES, ContextCandidate, fit_context, normalised
from ._explain import HCETrail
from ._export import clear_session, load_session, save_session
from ._extractor import EntityExtractor, ExtractedEntity, significant_word_set, significant_words
from ._focus import FocusBuffer, FocusEntry
from ._graph import EntityGraph
from ._kinds import NodeType
from ._models import HCEInteraction, entity_term, interaction_id, interaction_text
from ._provider import DEFAULT_DIMENSIONS, resolve_provider
from ._summaries import SUMMARY_TOKENS, Summariser, TopicSummary, read_summaries, summarise_topics
from ._tree import Placement, SemanticTree, TreeSearch
from ._validity import Visibility
from ._wrapping import wrap_chat

__all__ = ["HCEPipeline", "RetrievedContext", "DEFAULT_DIMENSIONS", "UTILITY_SHARPNESS", "FUSION_WEIGHTS",
           "TREE_LIST", "LISTS", "FUSED_LIMIT"]

#: Words of a user turn that label the topic it opens.
LABEL_WORDS = 8
#: The power normalised utilities are raised to (see :func:`~redmem.recipes.hce._budgeting.normalised`):
#: on LoCoMo dev (2 conversations, 500 tokens) evidence recall was 0.38 / 0.50 / 0.54 / 0.55 at 1 / 3 / 8 / 12.
UTILITY_SHARPNESS = 8.0
#: The tree's list in the shared retrieval (its hierarchical scores).
TREE_LIST = "tree"
#: The lists an interaction can be found by, in the order its label names them.
LISTS = (TREE_LIST, KEYWORD_LIST, GRAPH_LIST)
#: The weights of the lists in the convex fusion of the shared retrieval.
FUSION_WEIGHTS = {TREE_LIST: 1.0, KEYWORD_LIST: 1.0, GRAPH_LIST: 0.25}
#: The most fused interactions offered to the knapsack.
FUSED_LIMIT = 60


@dataclass
class RetrievedContext(ContextResult):
    """One retrieval: the candidates offered, those selected (admission order), the focus entries
    read, the round trips it took, the token count of :attr:`block` (the pipeline's counter, at
    most ``context_budget`` unless ``oversize="admit"``) and what became of candidates bigger than
    the whole budget (``{"truncated": [...], "skipped": [...], "admitted": [...]}``, by interaction
    id, or ``buffer:<position>`` for a focus entry); ``session_id``: whose interactions these are."""

    candidates: list[ContextCandidate]
    selected: list[ContextCandidate]
    focus: list[FocusEntry]
    round_trips: int
    token_count: int = 0
    oversize: dict[str, list[str]] = field(default_factory=dict)
    session_id: str = ""
    trail: Trail | None = field(default=None, repr=False, compare=False)

    @property
    def block(self) -> str:
        """The context block: the selected candidates' texts, one after another, each labelled
        with its date and sources (:func:`block_label`)."""
        return "\n".join(c.content for c in self.selected)

    @property
    def text(self) -> str:
        """:attr:`block` (:class:`~redmem.context._result.ContextResult`'s name)."""
        return self.block

    def explain(self) -> Explanation:
        """Why each text is in the block (the lists that found it and what each added to its fused
        relevance, its utility, its utility per token) and why the other candidates are not
        (:mod:`redmem.recipes.hce._explain`): from what the retrieval computed, no round trip."""
        if self.trail is None:
            raise QueryException("this context carries no trail to explain (it was not made by retrieve_candidates())")
        return self.trail.explain()

    def report(self, outcome: str | Mapping[Any, str], *, now: float | None = None) -> dict[str, str]:
        """Report what the agent did with the block's interactions (``"acted"`` for every one, or
        ``{interaction id: outcome}``): :meth:`ObservationProtocol.on_context_used` over them
        (loaded in one round trip; focus-buffer entries are not records and take no outcome)."""
        ids = [str(c.metadata["interaction_id"]) for c in self.selected if c.metadata.get("interaction_id")]
        space = HCEInteraction._meta.keyspace((self.session_id,))
        records = load_records(HCEInteraction, [DbKey(space, rid) for rid in ids], track=False)
        return ObservationProtocol.on_context_used(records, outcome, now=now)

    # The asyncio API (docs/asyncio.md).
    areport = async_variant(report)


class Shown(NamedTuple):
    """What a candidate interaction shows and costs: its text, its time, its stored token counts."""

    text: str
    timestamp: float
    tokens: dict[str, int]


def _query_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a str, not {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{name} must not be empty")
    return utf8_text(name, value)


class HCEPipeline:
    """A session's chat memory (see the module docs and the recipe page).

    Args:
        max_focus: entries the focus buffer keeps (a turn adds two).
        context_budget: tokens of the context block.
        graph: a pre-built entity graph of this session (None: built here).
        tree: a pre-built semantic tree of this session (None: built here).
        session_id: the session (user) whose state this is; every key carries it as hash tag.
        embedding_provider: embeds turns and queries; None: the configured provider, else
            feature hashing (:data:`DEFAULT_DIMENSIONS`), deterministic and offline.
        token_counter: None: the configured counter, else the exact cl100k_base count (as every
            recipe; :func:`~redmem.context._tokens.resolve_counter`); "words": the seed's
            ``len(text.split()) * 4 // 3``; "cl100k_base" or "o200k_base"; or a callable ``text -> int``.
        extractor: the entity extractor (default :class:`EntityExtractor`).
        utility_sharpness: the power normalised utilities are raised to before the knapsack
            (1: the seed's plain ratio, where short texts win; default :data:`UTILITY_SHARPNESS`).
        fusion_weights: the convex fusion weights of the tree, keyword and graph lists
            (default :data:`FUSION_WEIGHTS`; a list not named weighs 1).
        oversize: a text bigger than the whole ``context_budget`` is ``"truncate"``-d to the room
            the others leave (the default) or ``"skip"``-ped (the seed's knapsack; ``"admit"`` is
            the same: the knapsack never admitted anything over budget).
    """

    def __init__(self, max_focus: int = 10, context_budget: int = 1500, graph: EntityGraph | None = None,
                 tree: SemanticTree | None = None, *, session_id: str = "default", embedding_provider: Any = None,
                 token_counter: TokenCounter | str | None = None,
                 extractor: EntityExtractor | None = None, utility_sharpness: float = UTILITY_SHARPNESS,
                 oversize: str = "truncate", fusion_weights: dict[str, float] | None = None) -> None:
        self.session_id = _query_text("session_id", session_id)
        self.context_budget = positive_int("context_budget", context_budget)
        self.focus = FocusBuffer(max_focus, session_id=session_id)
        self.graph = graph or EntityGraph(session_id)
        self.tree = tree or SemanticTree(session_id)
        for part in (self.graph, self.tree):
            if part.session_id != session_id:
                raise ValidationError(f"{type(part).__name__} of session {part.session_id!r} given to {session_id!r}")
        self.provider = resolve_provider(embedding_provider)
        self.count_tokens = resolve_counter(token_counter, stacklevel=3)
        self.extractor = extractor or EntityExtractor()
        if not is_real(utility_sharpness) or not 0 < utility_sharpness <= 100:
            raise ValidationError(f"utility_sharpness must be a number in (0, 100], not {utility_sharpness!r}")
        self.utility_sharpness = float(utility_sharpness)
        self.oversize = check_oversize(oversize)
        self.fusion_weights = checked_weights(FUSION_WEIGHTS if fusion_weights is None else fusion_weights)

    @property
    def client(self) -> Any:
        return HCEInteraction._meta.client

    # -- reading -------------------------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        """The query's vector (``input_type="query"``)."""
        vector: np.ndarray = embed_in_batches(self.provider, [_query_text("query", query)], "query")[0]
        return vector

    def retrieve_candidates(self, query: str, *, query_vector: Any = None, for_prompt: bool = False,
                            as_of: Any = None) -> RetrievedContext:
        """Every candidate for ``query`` and the knapsack's selection (``query_vector``: the query
        already embedded). ``for_prompt``: the focus buffer is shown beside the block, so its
        entries are not candidates. ``as_of``: the interactions valid at that time (epoch
        seconds or a datetime; ``"all"``: every one); None: the current ones, an interaction
        superseded (:func:`redmem.lifecycle.supersede`) left out of every list."""
        query = _query_text("query", query)
        visible = Visibility(as_of)
        vector = self.embed_query(query) if query_vector is None else np.asarray(query_vector, dtype=np.float32)
        entities = self.extractor.extract(query)
        keys = list(dict.fromkeys([e.key for e in entities] + self.extractor.mentions(query)))
        existence = HCEInteraction.entities_seen.term_searcher(self.graph.space, [entity_term(k) for k in keys])
        seeds: list[str] = []

        def graph_list(lists: dict[str, Hits], riders: list[Any]) -> dict[str, Search[Hits]]:
            seeds.extend(key for key, maybe in zip(keys, riders[0]) if maybe)
            return {GRAPH_LIST: Mapped(self.graph.searcher(seeds, where=visible.where), _interaction_hits)} if seeds else {}

        space, depth = self.graph.space, self.tree.leaf_limit
        lists: dict[str, Search[Hits]] = {
            KEYWORD_LIST: keyword_hits(HCEInteraction.text_bm25, space, query, depth, visible.where),
            TREE_LIST: TreeSearch(self.tree, vector)}
        twin: dict[str, Search[Any]] = ({} if visible.superseded is None else
                                        {KEYWORD_LIST: keyword_hits(HCEInteraction.text_bm25, space, query, depth,
                                                                    visible.superseded)})
        fusion = Fusion("convex", dict(self.fusion_weights), depth, FUSED_LIMIT)
        retrieval = Retrieval(space, lists, fusion, "hce", riders=[existence, self.focus.reader(), *twin.values()],
                              seeded=SeededLists(graph_list))
        found = retrieve(self.client, retrieval)
        focus: list[FocusEntry] = found.riders[1]
        trips = 1 + bool(seeds)
        wanted = [c.key for c in found.candidates]
        twin_hits = superseded_hits(retrieval, found, twin, found.riders[2:], depth)
        records, successors = self._shown(wanted, visible, twin_hits)
        superseded = combined(dropped_hits(found.candidates, found.lists, successors, depth), twin_hits)
        trips += bool(wanted)
        candidates = self._candidates(query, found.candidates, records, focus, for_prompt)
        selected, fitted = fit_context(candidates, self.context_budget, self.count_tokens, self.oversize)
        names = [c.metadata.get("interaction_id") or f"buffer:{c.metadata.get('position')}" for c in candidates]
        in_focus = {str(e.interaction_id) for e in focus} & {c.key.record_id for c in found.candidates}
        trail = HCETrail(fusion, found.lists, max((c.pull or 0.0 for c in found.candidates), default=0.0) or 1.0,
                         self.utility_sharpness, candidates, fitted, self.context_budget, in_focus, space, superseded)
        return RetrievedContext(candidates, selected, focus, trips, fitted.token_count, fitted.oversize.report(names),
                                self.session_id, trail)

    def _shown(self, keys: list[DbKey], visible: Visibility, superseded: list[SupersededHit],
               ) -> tuple[dict[str, Shown], dict[str, str | None]]:
        """Per interaction id, what a candidate shows and costs, for those ``visible``: only those
        fields are read and decoded (one round trip: the script ``hce_rows``, an HMGET each), not its
        vector or entity list; and the candidates left out as superseded, each with the id of its
        successor. The successors of the ``superseded`` hits (the keyword twin's) are read in the
        same command."""
        if not keys:
            return {}, {}
        fields: list[Field[Any]] = [HCEInteraction.user, HCEInteraction.assistant, HCEInteraction.timestamp, HCEInteraction.tokens,
                  HCEInteraction.valid_from, HCEInteraction.valid_to, HCEInteraction.superseded_by]
        client = self.client
        with server_errors(client):
            replies = run_script("hce_rows", [k.redis_key for k in [*keys, *(hit.key for hit in superseded)]],
                                 [len(keys), HCEInteraction.superseded_by.name, *[f.name for f in fields]], client)
        for hit, by in zip(superseded, replies[len(keys):]):
            hit.superseded_by = HCEInteraction.superseded_by.decode(by) if by else None
        shown, dropped = {}, {}
        decoders = [f.decode for f in fields]
        decoders[fields.index(HCEInteraction.tokens)] = _stored_tokens
        for key, raw in zip(keys, replies):
            if None in raw[:3]:
                continue
            user, assistant, stamp, tokens, start, end, by = [None if r is None else decode(r)
                                                              for decode, r in zip(decoders, raw)]
            when = cast(float, stamp)  # not None: checked above
            if visible(when if start is None else start, end):
                shown[key.record_id] = Shown(interaction_text(str(user), str(assistant)), when, tokens or {})
            elif visible.closed(end):
                dropped[key.record_id] = by or None
        return shown, dropped

    def _stored_count(self, text: str) -> dict[str, int]:
        """What an interaction stores of its text's cost: the exact count of `` <text>\\n`` by the
        pipeline's encoding (nothing for another counter, which is asked at each query)."""
        counter = self.count_tokens
        return {counter.encoding.name: counter(f" {text}\n")} if isinstance(counter, ExactCounter) else {}

    def _text_cost(self, candidate: ContextCandidate) -> int:
        """The tokens of `` <text>\\n``: as stored with the interaction when counted by the same
        encoding, else counted (and remembered by an exact counter)."""
        counter = self.count_tokens
        stored = candidate.metadata.get("tokens") or {}
        if isinstance(counter, ExactCounter) and counter.encoding.name in stored:
            return int(stored[counter.encoding.name])
        return counter(f" {candidate.content}\n")

    def _candidates(self, query: str, fused: list[Candidate], records: dict[str, Shown],
                    focus: list[FocusEntry], for_prompt: bool) -> list[ContextCandidate]:
        """The fused interactions (utility: fused score / the best) and the buffer's entries, the
        utilities sharpened, an interaction in the buffer left to it, each costed as labelled."""
        in_focus = {e.interaction_id for e in focus}
        top = max((c.pull or 0.0 for c in fused), default=0.0) or 1.0
        raw = [self._interaction(c, top, records) for c in fused if c.key.record_id not in in_focus]
        if not for_prompt:
            raw += _buffer_candidates(query, focus)
        scales = dict.fromkeys(SOURCES, 1.0)
        count = self.count_tokens
        labelled = [(c, block_label(c)) for c in normalised([c for c in raw if c is not None], scales,
                                                             self.utility_sharpness)]
        return [ContextCandidate(f"{label} {c.content}", c.source, c.utility, count(label) + self._text_cost(c),
                                 {k: v for k, v in c.metadata.items() if k != "tokens"})
                for c, label in labelled]

    @staticmethod
    def _interaction(candidate: Candidate, top: float, records: dict[str, Shown]) -> ContextCandidate | None:
        rid = candidate.key.record_id
        if rid not in records:
            return None
        shown = records[rid]
        sources = [name for name in LISTS if SIGNAL_OF_LIST.get(name, name) in candidate.signals]
        return ContextCandidate(shown.text, sources[0], (candidate.pull or 0.0) / top, 0,
                                {"interaction_id": rid, "timestamp": shown.timestamp, "tokens": shown.tokens,
                                 "sources": sources, "signals": dict(candidate.signals)})

    def retrieve_context(self, query: str, *, as_of: Any = None) -> str:
        """The context block for ``query``: the selected candidates' texts, at most
        ``context_budget`` tokens ("" when nothing fits); ``as_of`` as in :meth:`retrieve_candidates`."""
        return self.retrieve_candidates(query, as_of=as_of).block

    def build_prompt(self, user_query: str) -> str:
        """``[Context Block]`` + ``[Focus Buffer]`` + ``[User Query]``; the block never repeats a
        text the focus buffer shows."""
        found = self.retrieve_candidates(user_query, for_prompt=True)
        return (f"[Context Block]\n{found.block or '(none)'}\n\n"
                f"[Focus Buffer]\n{self.focus.to_text(found.focus) or '(empty)'}\n\n"
                f"[User Query]\n{user_query}")

    # -- writing -------------------------------------------------------------------------------
    def update(self, user_query: str, ai_response: str) -> str:
        """Store one turn pair in the buffer, the tree and the graph; returns its interaction id."""
        return self.update_many([(user_query, ai_response)])[0]

    def update_many(self, turns: Iterable[tuple[str, str]]) -> list[str]:
        """Store turn pairs in order, embedded in one batch, in one transaction (an import)."""
        pairs = [(_query_text("user_query", q), _reply_text(a)) for q, a in turns]
        if not pairs:
            return []
        now = time.time()
        ids = [interaction_id(now + i * 1e-6) for i in range(len(pairs))]
        vectors = embed_in_batches(self.provider, [interaction_text(q, a) for q, a in pairs], "document")
        entities = [self.extractor.extract(f"{q}\n{a}") for q, a in pairs]
        mentions = [[k for k in self.extractor.mentions(f"{q}\n{a}") if k not in {e.key for e in found}]
                    for (q, a), found in zip(pairs, entities)]
        flat = list(dict.fromkeys(k for keys in mentions for k in keys))
        placing = self.tree.write_searches(vectors[0])
        exists, *placed = run_searches(self.client, [
            HCEInteraction.entities_seen.term_searcher(self.graph.space, [entity_term(k) for k in flat]), *placing])
        known = {k for k, maybe in zip(flat, exists) if maybe}
        labels = [(rid, " ".join(q.split()[:LABEL_WORDS])) for rid, (q, _) in zip(ids, pairs)]
        placement = self.tree.assign(placing, placed, vectors, labels)
        topic_ids = placement.topic_ids
        records, links = [], []
        for i, ((q, a), rid) in enumerate(zip(pairs, ids)):
            found = entities[i] + [ExtractedEntity(k, k, NodeType.NAME) for k in mentions[i] if k in known]
            text = interaction_text(q, a)
            records.append(HCEInteraction(session_id=self.session_id, interaction_id=rid, user=q, assistant=a,
                                          text=text, tokens=self._stored_count(text), valid_from=now, recorded_at=now,
                                          topic_id=topic_ids[i], timestamp=now, entities=[e.key for e in found],
                                          embedding=vectors[i]))
            links.append((rid, found))
        focus = [FocusEntry(role, text, now, rid) for (q, a), rid in zip(pairs, ids)
                 for role, text in (("user", q), ("assistant", a))]
        self._write(placement, records, links, focus)
        return ids

    def _write(self, placement: Placement, records: list[HCEInteraction],
               links: list[tuple[str, list[ExtractedEntity]]], focus: list[FocusEntry]) -> None:
        client = self.client
        with server_errors(client), client.pipeline(transaction=True) as pipe:
            queue_new_records(pipe, client, records, fresh=True)
            for rid, found in links:
                self.graph.queue_interaction(pipe, rid, found)
            self.tree.queue_placement(pipe, client, placement, [(r.interaction_id, r.topic_id) for r in records])
            self.focus.push_call(focus[-self.focus.max_size:]).queue(pipe)
            pipe.execute()

    # -- topic summaries -------------------------------------------------------------------------
    def summarise_topics(self, max_tokens: int = SUMMARY_TOKENS, summariser: Summariser | None = None,
                         ) -> dict[str, TopicSummary]:
        """Summarise every topic of the tree that gained members since its summary, in at most
        ``max_tokens`` tokens of the pipeline's counter: extractive by default, or by
        ``summariser(texts, max_tokens)`` (see :mod:`redmem.recipes.hce._summaries`); returns those written."""
        return summarise_topics(self.tree, self.count_tokens, max_tokens, summariser)

    def topic_summaries(self, topic_ids: Iterable[str] | None = None) -> dict[str, TopicSummary]:
        """The stored summaries of ``topic_ids`` (a tree hit's ``topic_id``; None: every one)."""
        return read_summaries(self.tree, None if topic_ids is None else list(topic_ids))

    # -- middleware and persistence ------------------------------------------------------------
    def wrap_chat(self, chat_func: Callable[..., Any]) -> Callable[..., Any]:
        """Decorate a chat function (sync or async; ``prompt: str`` or OpenAI-style ``messages``)
        so each call is enriched with memory and its reply stored (see :func:`wrap_chat`)."""
        return wrap_chat(self, chat_func)

    def save(self, directory: Any) -> Any:
        """Write the session's Redis state to ``directory`` as a versioned JSON export; returns its path."""
        return save_session(self.session_id, directory)

    def load(self, directory: Any) -> None:
        """Replace this session's state with an export's (checked whole first; one MULTI/EXEC)."""
        load_session(self.session_id, directory)

    def clear(self) -> int:
        """Forget the session: delete its buffer, graph, tree and filter (one MULTI/EXEC); returns
        how many keys there were."""
        return clear_session(self.session_id)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aretrieve_candidates = async_variant(retrieve_candidates)
    aretrieve_context = async_variant(retrieve_context)
    abuild_prompt = async_variant(build_prompt)
    aupdate = async_variant(update)
    aupdate_many = async_variant(update_many)
    asummarise_topics = async_variant(summarise_topics)
    atopic_summaries = async_variant(topic_summaries)
    asave = async_variant(save)
    aload = async_variant(load)
    aclear = async_variant(clear)


def _reply_text(value: Any) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(f"ai_response must be a str, not {type(value).__name__}")
    return utf8_text("ai_response", value)


def _buffer_candidates(query: str, focus: list[FocusEntry]) -> list[ContextCandidate]:
    """Buffer entries sharing words with the query, as candidates: utility
    ``overlap * (0.5 + 0.5 / (1 + age))``, overlap the share of the query's content words the
    entry holds, age 0 for the newest entry (recency breaks ties between equally relevant entries)."""
    words = significant_words(query)
    out = []
    for age, (position, entry) in enumerate(reversed(list(enumerate(focus)))):
        overlap = len(words & significant_word_set(entry.content)) / len(words) if words else 0.0
        if overlap > 0:
            out.append(ContextCandidate(entry.line, "buffer", overlap * (0.5 + 0.5 / (1 + age)), 0,
                                        {"interaction_id": None, "position": position, "role": entry.role,
                                         "timestamp": entry.timestamp}))
    return out


@lru_cache(maxsize=4096)
def _stored_tokens(raw: bytes) -> dict[str, int]:
    """An interaction's stored token counts decoded, remembered by their bytes (a few hundred
    distinct values; the JSON decoding cost as much as the rest of a loaded row). The dict is
    shared: read it, never change it."""
    tokens: dict[str, int] = HCEInteraction.tokens.decode(raw)
    return tokens


def _interaction_hits(reached: list[tuple[Any, float]]) -> Hits:
    """The interactions a propagation reached, as a ranked list."""
    return [(node.record_id, weight) for node, weight in reached if isinstance(node, DbKey)]


def block_label(candidate: ContextCandidate) -> str:
    """The label the block shows before a candidate's text: ``[<UTC date>, <sources>]``, the date
    that of its interaction or buffer entry (left out when there is none), the sources every
    retrieval path that found it (``graph+tree``); about 10-12 cl100k tokens.

    The block shows ``<label> <text>``; its token cost is counted in two parts, the label and
    `` <text>\n``, so a text's count is remembered across queries whatever label it gets. A text
    starts with its role (``user:`` or ``assistant:``), so the exact counters split it from the
    label's closing ``]`` and the two counts add up to the whole one (tested on any text).
    """
    sources = "+".join(dict.fromkeys(candidate.metadata.get("sources") or [candidate.source]))
    stamp = candidate.metadata.get("timestamp")
    when = f"{_utc_date(stamp)}, " if isinstance(stamp, (int, float)) else ""
    return f"[{when}{sources}]"


@lru_cache(maxsize=8192)
def _utc_date(stamp: float) -> str:
    """The UTC date of an epoch time, ``YYYY-MM-DD`` (remembered: the same interactions are
    labelled query after query)."""
    return f"{datetime.fromtimestamp(stamp, UTC):%Y-%m-%d}"

