"""ContextAssembler: per LLM turn, the memories that matter, within a token budget, ready to inject.

``assemble()`` runs the pull path (query-driven: BM25 + vector + graph fused by RRF or by convex
score fusion, or the composite score), the push path (cyclic surfacing), merges and re-ranks
both (proactive records never above what a question found), keeps one copy of each memory text
(exact or near duplicates), packs them into ``max_items`` / ``max_tokens`` (rank order,
skip-not-break; a memory bigger than the whole budget truncated, skipped or admitted as
``oversize`` says), renders exactly the slices it counted, counts the text it sends, and
sends the post-effects in one round trip. Its options are an :class:`AssemblerConfig`; each
stage is a module of :mod:`redmem.context`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from ...context._candidates import Candidate, merge_paths
from ...context._duplicates import collapse_duplicates
from ...context._effects import apply_post_effects
from ...context._explain import AssemblyTrail, Explanation
from ...context._floor import above_floor
from ...context._neighbours import Turn, record_turn
from ...context._packing import Budget, Fitted
from ...context._question_cues import rescore_by_cues
from ...context._recency import asks_current, newer_first, stated_time_fields
from ...context._rendering import Renderer, pack_slices
from ...context._result import ContextResult, Trail
from ...context._retrieval import (
    MATCH_SIGNAL,
    Capabilities,
    PullPlan,
    plan_pull,
    push_candidates,
    resolve_mode,
    retrieve,
)
from ...context._superseded import SupersededHit, superseded_hits, superseded_searches
from ...context._tokens import TokenCounter, resolve_counter
from ...embeddings._matrix import VectorMatrix
from ...fields._composite import signal_weights
from ...fields.search_protocol import Search
from ...model._base import Model
from ...model._field import Field
from ...model._fields import DatetimeField
from ...model._filters import compile_superseded, compile_where
from ...model._hits import Hit
from ...model._loading import load_records
from ...observation._protocol import ObservationProtocol
from ...store._aio import async_variant
from ...store._errors import ArgumentTypeError, QueryException
from ...store._keys import KeySpace
from ...store._validation import epoch_of, subclass_of, timestamp
from .._tenant import require_tenant
from ._config import (
    DEFAULT_MAX_ITEMS,
    DEFAULT_PROPAGATION_DEPTH,
    DEFAULT_SURFACING_THRESHOLD,
    AssemblerConfig,
)
from ._quality import RetrievalQuality, assess_retrieval, named_cues

__all__ = ["ContextAssembler", "AssemblyResult"]


@dataclass
class AssemblyResult(ContextResult):
    """What one ``assemble()`` returns: selected records (ranked), the push subset, text, metadata.

    ``hits`` holds one :class:`~redmem.model._hits.Hit` per selected record, in the order of
    ``records``: its combined score (the merged rank score) and its per-signal scores (each
    list's score, ``bm25``, ``vector``, ``graph``, ``composite``, ``cyclic``, and the fused score
    as ``rrf`` or ``convex``), the values ``metadata["trace"]`` reports.
    """

    records: list[Any] = field(default_factory=list)
    proactive: list[Any] = field(default_factory=list)
    formatted: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    hits: tuple[Hit[Any], ...] = ()
    trail: Trail | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The rendered context (``formatted``; :class:`~redmem.context._result.ContextResult`'s name)."""
        return self.formatted

    @property
    def token_count(self) -> int:
        """The tokens of ``formatted`` (``metadata["token_count"]``; 0 when not counted)."""
        return int(self.metadata.get("token_count", 0))

    def explain(self) -> Explanation:
        """Why each record is here and why the other candidates are not
        (:mod:`redmem.context._explain`), from what ``assemble()`` (or HSCA's region assembly)
        computed: no round trip."""
        if self.trail is None:
            raise QueryException("this result carries no trail to explain (it was not made by assemble())")
        return self.trail.explain()

    def report(
        self, outcome: str | Mapping[Any, str], partition: str | None = None, now: float | None = None,
    ) -> dict[str, str]:
        """Report what the agent did with this context: ``"acted"`` for every record, or
        ``{record: outcome}`` per record (records not named are ``deferred``).

        :meth:`ObservationProtocol.on_context_used` over ``records`` and ``proactive``; returns
        ``{redis key: outcome}``. OutcomeError (a ValueError), before any write, for an unknown
        outcome or a key naming no record of this context.
        """
        return ObservationProtocol.on_context_used([*self.records, *self.proactive], outcome, partition, now)

    # The asyncio API (docs/asyncio.md).
    areport = async_variant(report)


class ContextAssembler:
    """Assemble LLM-ready context from a model's memories (see the module docstring).

    ``ContextAssembler(model, config=AssemblerConfig(...))``, or the config's options as keyword
    arguments, ``ContextAssembler(model, max_items=5, ...)`` (``score_weights`` may come second,
    positionally); not both. Every option is checked here, not at the first query that needs
    it (see :class:`AssemblerConfig`); the options are read-only attributes of the assembler,
    except ``score_weights``, which may be replaced by checked weights (the adaptive loop does).

    ``fusion`` says how the pull path fuses its lists: ``"rrf"`` (reciprocal rank fusion, the
    default) or ``"convex"`` (a convex combination of each list's scores divided by its best,
    :func:`~redmem.context._fusion.convex_fusion`). ``fusion_weights`` fixes the weight of each
    list (``keyword``, ``vector``, ``graph``, ``composite``; a list not named weighs 1) for every
    query; None (the default) takes :func:`~redmem.context._query_weights.query_adaptive_weights` of
    the query text in hybrid mode and weighs every list 1 in the other modes.
    """

    COMPETITIVE_SUPPRESSION_SIGNAL = 0.3
    DEFAULT_SURFACING_THRESHOLD = DEFAULT_SURFACING_THRESHOLD
    DEFAULT_MAX_ITEMS = DEFAULT_MAX_ITEMS
    DEFAULT_PROPAGATION_DEPTH = DEFAULT_PROPAGATION_DEPTH
    CANDIDATE_MULTIPLIER = 5
    GRAPH_SEEDS = 5

    def __init__(
        self, model_class: type[Model], score_weights: dict[Any, float] | None = None, *,
        config: AssemblerConfig | None = None, **options: Any,
    ) -> None:
        self.model_class = subclass_of("model_class", model_class, Model, "a redmem Model class")
        if config is None:  # the counter is resolved here so that a DeprecationWarning points at the caller
            counter = options.pop("token_counter", None)
            counter = resolve_counter(counter if counter is not None else model_class._meta.token_counter, stacklevel=3)
            config = AssemblerConfig(score_weights, token_counter=counter, **options)
        elif score_weights is not None or options:
            raise TypeError(
                "ContextAssembler takes a config or its options as keyword arguments, not both; "
                "vary a config with dataclasses.replace(config, ...)"
            )
        elif not isinstance(config, AssemblerConfig):
            raise ArgumentTypeError(f"config must be an AssemblerConfig or None, got {type(config).__name__}")
        self.config = config
        self.capabilities = Capabilities.of(model_class)
        self.mode = resolve_mode(self.capabilities, config.retrieval_mode, config.score_weights or {})
        self.score_weights = self._check_score_weights(config.score_weights)
        self.renderer = Renderer(model_class, config.output_format, config.render_fields)
        self.time_fields = self._time_fields(config.time_field)

    # -- the options, read from the config ---------------------------------------------------------
    @property
    def max_items(self) -> int:
        return self.config.max_items

    @property
    def max_tokens(self) -> int | None:
        return self.config.max_tokens

    @property
    def budget(self) -> Budget:
        return self.config.budget

    @property
    def oversize(self) -> str:
        return self.config.oversize

    @property
    def surfacing_threshold(self) -> float:
        return self.config.surfacing_threshold

    @property
    def propagation_depth(self) -> int:
        return self.config.propagation_depth

    @property
    def output_format(self) -> str:
        return self.config.output_format

    @property
    def token_counter(self) -> TokenCounter:
        return self.config.counter

    @property
    def retrieval_mode(self) -> str:
        return self.config.retrieval_mode

    @property
    def render_fields(self) -> list[str] | None:
        return self.config.render_fields

    @property
    def max_proactive(self) -> int:
        return self.config.proactive_limit

    @property
    def fusion(self) -> str:
        return self.config.fusion

    @property
    def fusion_weights(self) -> dict[str, float] | None:
        return self.config.fusion_weights

    @property
    def duplicate_cosine(self) -> float | None:
        return self.config.duplicate_cosine

    # -- the one call --------------------------------------------------------------------------
    def assemble(
        self, query_cues: dict[str, Any] | str | None = None, *, assess_quality: bool = False,
        emit_trace: bool = False, now: float | None = None, where: Mapping[str, Any] | None = None,
        riders: Sequence[Search[Any]] = (), **partition: Any,
    ) -> AssemblyResult:
        """Retrieve, merge, budget, render and record post-effects for one turn.

        ``partition`` names the tenant (e.g. ``agent_id="agent-1"``); every path searches only
        inside it. ``now`` (epoch seconds) fixes the clock for decay and cyclic scores.
        ``where`` keeps only the records that match these conditions on indexed fields, in every
        path (``{"kind": "fact", "tags__any": ["ops"], "importance__gte": 0.5}``, the language of
        :meth:`Query.filter <redmem.model._query.Query.filter>`; see :mod:`redmem.model._filters`),
        checked before any Redis call and applied inside each search, with no extra round trip.
        ``riders``: searches sent in the first round trip; one whose ``finish`` raises stops the
        read there, before anything is loaded or written.
        """
        started = time.perf_counter()
        at = timestamp("now", now)
        query = self._query(partition)
        filtered = compile_where(self.model_class, where)
        superseded_where = compile_superseded(self.model_class, where)
        space = query.partition()
        text = cue_text(query_cues)
        push_limit = self.max_items * 2
        scan = [f.searcher(space, at, self.surfacing_threshold, push_limit, filtered) for f in self.capabilities.cyclic]
        pull = plan_pull(self.capabilities, query, text, self._plan(), at, scan, filtered)
        depth = pull.fusion.list_limit
        shadows = superseded_searches(pull, self.capabilities, text, superseded_where, depth)
        pulled = retrieve(self.model_class._meta.client,
                          replace(pull, riders=[*pull.riders, *shadows.values(), *riders]))
        for message in pulled.warnings:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        push = push_candidates(space, pulled.riders[: len(scan)], push_limit)
        superseded = superseded_hits(pull, pulled, shadows, pulled.riders[len(scan):len(scan) + len(shadows)], depth)
        found = self._load(merge_paths(pulled.candidates, push, self.max_proactive, asked=bool(text)), superseded)
        vectors = self._vectors(found, pulled.matrix)
        distinct, duplicates = self._distinct(found, vectors)
        distinct = self._rescored(distinct, text)
        ordered = self._newer_first(distinct, vectors, text)
        merged, below_floor = above_floor(ordered, self.config.min_relevance)
        fitted = self.fit([c.record for c in merged])
        chosen = [merged[i] for i in fitted.selected]
        selected = [c.record for c in chosen]
        proactive = [c.record for c in chosen if c.push is not None]
        chosen_keys = {c.key for c in chosen}
        suppressed = [c.record for c in merged if c.pull is not None and c.key not in chosen_keys]
        quality = self._assess(space, named_cues(query_cues), merged, at) if assess_quality else None
        apply_post_effects(selected, proactive, suppressed, self.COMPETITIVE_SUPPRESSION_SIGNAL, at)
        metadata = {
            "pull_count": sum(1 for c in chosen if c.pull is not None),
            "push_count": len(proactive),
            "token_count": fitted.token_count,
            "oversize": fitted.oversize.report([c.key.record_id for c in merged]),
            "timing_ms": (time.perf_counter() - started) * 1000,
            "total_candidates": len(found),
            "retrieval_mode": pulled.mode,
            "suppressed_count": len(suppressed),
            "duplicates_collapsed": len(duplicates),
            "below_floor": len(below_floor),
        }
        if emit_trace:
            metadata["trace"] = [
                {"key": c.key.redis_key, "rank": i, "score": c.combined, "source": c.source, "signals": dict(c.signals)}
                for i, c in enumerate(chosen, 1)
            ]
        if quality is not None:
            metadata["quality"] = quality
        hits = tuple(Hit(c.record, c.combined, c.signals) for c in chosen)
        trail = AssemblyTrail(pulled.mode, pull.fusion, pulled.lists, dict(partition), where, distinct, merged,
                              duplicates, below_floor, fitted, self.budget, self.config.min_relevance,
                              dict(self.score_weights), bool(text), superseded)
        return AssemblyResult(selected, proactive, fitted.text, metadata, hits, trail)

    # -- stages ------------------------------------------------------------------------------------
    def _query(self, partition: dict[str, Any], call: str = "assemble") -> Any:
        require_tenant(self.model_class, partition, call)
        return self.model_class.query.filter(**partition).no_track()

    def _plan(self) -> PullPlan:
        return PullPlan(
            self.mode, self.max_items * self.CANDIDATE_MULTIPLIER, self.max_items * 2,
            self.propagation_depth, self.score_weights, self.GRAPH_SEEDS, self.fusion, self.fusion_weights,
        )

    def _load(self, candidates: list[Candidate], superseded: list[SupersededHit]) -> list[Candidate]:
        """Hydrate the candidates not loaded yet in one round trip; drop records deleted meanwhile.
        The ``superseded`` hits' records ride in that round trip (none when there is nothing else
        to load, so none is added) to name the record that superseded each."""
        missing = [c for c in candidates if c.record is None]
        riding = [hit.key for hit in superseded] if missing else []
        keys = [c.key for c in missing] + riding
        loaded = {r._saved_key: r for r in load_records(self.model_class, keys, track=False)}
        for candidate in missing:
            candidate.record = loaded.get(candidate.key)
        for hit in superseded:
            hit.superseded_by = getattr(loaded.get(hit.key), "superseded_by", None) or None
        return [c for c in candidates if c.record is not None]

    def _vectors(self, candidates: list[Candidate], matrix: VectorMatrix | None) -> dict[str, np.ndarray]:
        """The unit vector of each candidate the vector search holds one for: none without it, and
        none when the vectors are not of the memory text (an embedding of a passage around the
        turn, as ConversationMemory's: two neighbouring turns then have near-equal vectors while
        saying different things, so their cosine says nothing of the texts compared)."""
        embedding = self.capabilities.embedding
        texts = self.renderer.text_fields
        if matrix is None or embedding is None or not texts or embedding.source != texts[0]:
            return {}
        return matrix.unit_vectors(c.key.record_id for c in candidates)

    def _distinct(self, candidates: list[Candidate], vectors: dict[str, np.ndarray]) -> tuple[list[Candidate], list[Candidate]]:
        """(kept, collapsed): one copy of each memory text, the best-ranked (see
        :mod:`redmem.context._duplicates`); near duplicates by the vectors the vector search holds."""
        near = self.duplicate_cosine is not None
        return collapse_duplicates(candidates, lambda c: self.renderer.text_of(c.record), vectors if near else None,
                                   lambda c: c.key.record_id,
                                   self.duplicate_cosine if self.duplicate_cosine is not None else 1.0)

    def _rescored(self, candidates: list[Candidate], text: str) -> list[Candidate]:
        """The candidates reordered by the question's cues (:mod:`redmem.context._question_cues`:
        who it names, whether it asks when), when ``question_cues`` is on and a question was asked."""
        if not self.config.question_cues or not text:
            return candidates
        return rescore_by_cues(candidates, text, self._turn_of)

    def _turn_of(self, candidate: Candidate) -> Turn:
        """The turn of a candidate's memory: its text, and its speaker (field, or ``Name: `` prefix)."""
        return record_turn(candidate.record, self.renderer.text_of(candidate.record))

    def _newer_first(self, candidates: list[Candidate], vectors: dict[str, np.ndarray], text: str) -> list[Candidate]:
        """The candidates with each memory that updates an older, better-ranked one moved above it
        (:mod:`redmem.context._recency`; a question ``text`` asking how things stand now,
        :func:`~redmem.context._recency.asks_current`, takes a memory saying a change at a lower
        cosine), when ``newer_first`` is on and the model has a time field.
        A memory's time is its first of :attr:`time_fields` that holds one.

        A memory that moved takes the older one's match when that is higher: an update shares
        fewer words with the question than the fact it replaces, and must not fall below the
        relevance floor that the fact clears."""
        clocks = self.time_fields
        if not self.config.newer_first or not clocks:
            return candidates

        def time_of(candidate: Candidate) -> float | None:
            return next((t for f in clocks if (t := moment(getattr(candidate.record, f.name, None))) is not None), None)

        rows = {c.key.record_id: i for i, c in enumerate(c for c in candidates if c.key.record_id in vectors)}
        stacked = np.stack([vectors[r] for r in rows]) if rows else None
        gram: list[list[float]] = (stacked @ stacked.T).tolist() if stacked is not None else []

        def cosine_of(a: Candidate, b: Candidate) -> float | None:  # every pair's from one product
            i, j = rows.get(a.key.record_id), rows.get(b.key.record_id)
            return None if i is None or j is None else gram[i][j]

        order, moves = newer_first(candidates, time_of, lambda c: self.renderer.text_of(c.record), cosine_of,
                                   asks_current(text))
        for newer, older in moves:
            if MATCH_SIGNAL in newer.signals and MATCH_SIGNAL in older.signals:
                newer.signals[MATCH_SIGNAL] = max(newer.signals[MATCH_SIGNAL], older.signals[MATCH_SIGNAL])
        return order

    def fit(self, records: list[Any]) -> Fitted:
        """Render each record's slice (rank order) and pack them into the budget with this
        assembler's format and ``oversize`` (:func:`~redmem.context._rendering.pack_slices`): the
        admitted indices, the text and its token count, what became of oversized records."""
        slices = [self.renderer.cuttable(record) for record in records]
        return pack_slices(slices, self.output_format, self.token_counter, self.budget, self.config.oversize)

    def render(self, record: Any) -> str:
        """The slice of ``record`` in the output format: exactly the text counted and emitted.

        Shown fields: ``render_fields`` if given, else every stored field that is not a key and
        not a primitive's bookkeeping (``Field.shown`` False, e.g. cyclic amplitudes); see
        :class:`~redmem.context._rendering.Renderer`.
        """
        return self.renderer.render(record)

    def _time_fields(self, name: str | None) -> tuple[Field[Any], ...]:
        """The fields saying when a memory was stated, which ``newer_first`` compares, best first:
        ``name`` alone (QueryException when the model has no such field), else a ``said_at`` or
        ``valid_from`` field, then the model's first DatetimeField
        (:func:`~redmem.context._recency.stated_time_fields`)."""
        fields = self.model_class._meta.fields
        if name is None:
            written = [f.name for f in self.model_class._meta.fields_of(DatetimeField)]
            return tuple(fields[n] for n in stated_time_fields(list(fields), written))
        found = fields.get(name)
        if found is None:
            raise QueryException(f"time_field {name!r} is not a field of {self.model_class.__name__}")
        return (found,)

    def _check_score_weights(self, weights: dict[Any, float] | None) -> dict[str, float]:
        """``score_weights`` checked now, not at the first query that needs them: every name a
        signal of the model that can score (see ``signal_names``), every weight a finite number >= 0."""
        if weights is None or (isinstance(weights, dict) and not weights):
            return {}
        return signal_weights(self.model_class, weights, "score_weights")

    def assess(
        self, query_cues: Any, *, candidates: list[Candidate] | None = None, now: float | None = None,
        **partition: Any,
    ) -> RetrievalQuality:
        """Score how well memory can answer ``query_cues`` (see ``redmem.recipes.assembler._quality``).

        Without ``candidates`` it is the cheap pre-retrieval probe (no propagation, no push path).
        """
        space = self._query(partition, "assess").partition()
        return self._assess(space, named_cues(query_cues), candidates, now)

    def _assess(
        self, space: KeySpace, cues: dict[str, str], candidates: list[Candidate] | None, now: float | None,
    ) -> RetrievalQuality:
        return assess_retrieval(self.model_class, self.capabilities, self.config, space, cues,
                                candidates=candidates, now=now)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aassemble = async_variant(assemble)
    aassess = async_variant(assess)


def moment(value: Any) -> float | None:
    """Epoch seconds of a datetime (naive: UTC) or an ISO 8601 text; None for anything else."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    return epoch_of(value) if isinstance(value, datetime) else None


def cue_text(query_cues: dict[str, Any] | str | None) -> str:
    """The query text of the cues: a str stripped, else the values of :func:`named_cues` joined by spaces."""
    if isinstance(query_cues, str):
        return query_cues.strip()
    return " ".join(named_cues(query_cues).values())
