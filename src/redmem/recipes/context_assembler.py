"""ContextAssembler: per LLM turn, the memories that matter, within a token budget, ready to inject.

``assemble()`` runs the pull path (query-driven: BM25 + vector + graph fused by RRF or by convex
score fusion, or the composite score), the push path (cyclic surfacing), merges and re-ranks
both (proactive records never above what a question found), keeps one copy of each memory text
(exact or near duplicates), packs them into ``max_items`` / ``max_tokens`` (rank order,
skip-not-break, first record always admitted), renders exactly the slices it counted, and
sends the post-effects in one round trip.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..context.candidates import Candidate, merge_paths
from ..context.duplicates import DUPLICATE_COSINE, collapse_duplicates
from ..context.effects import apply_post_effects
from ..context.packing import Budget, pack
from ..context.rendering import LINE_FORMATS, check_format, compose, frame_line, record_view, render_slice
from ..context.retrieval import (
    Capabilities,
    PullPlan,
    check_fusion,
    plan_pull,
    push_candidates,
    resolve_mode,
    retrieve,
)
from ..context.tokens import resolve_counter
from ..fields.composite import signal_weights
from ..model.base import Model
from ..model.persistence import load_records
from ..observation.protocol import ObservationProtocol
from ..store.connection import settings
from ..store.errors import QueryException, ValidationError
from ..store.validation import finite_number, non_negative_int, positive_int, subclass_of, timestamp
from .quality import RetrievalQuality, assess_retrieval
from .tenant import require_tenant

__all__ = ["ContextAssembler", "AssemblyResult"]


@dataclass
class AssemblyResult:
    """What one ``assemble()`` returns: selected records (ranked), the push subset, text, metadata."""

    records: list[Any] = field(default_factory=list)
    proactive: list[Any] = field(default_factory=list)
    formatted: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

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


class ContextAssembler:
    """Assemble LLM-ready context from a model's memories (see the module docstring).

    ``fusion`` says how the pull path fuses its lists: ``"rrf"`` (reciprocal rank fusion, the
    default) or ``"convex"`` (a convex combination of each list's scores divided by its best,
    :func:`~redmem.context.fusion.convex_fusion`). ``fusion_weights`` fixes the weight of each
    list (``keyword``, ``vector``, ``graph``, ``composite``; a list not named weighs 1) for every
    query; None (the default) takes :func:`~redmem.context.fusion.query_adaptive_weights` of
    the query text in hybrid mode and weighs every list 1 in the other modes.

    Every option is checked here, not at the first query that needs it; each error names the
    option and what it accepts. ``max_items`` and ``max_tokens`` must be >= 1: the first
    candidate is always admitted, so a budget of 0 could not be honoured.
    ``duplicate_cosine``: two memories whose vectors (when the vector search ran) have at least
    this cosine are near duplicates, and only the better-ranked one is kept; None keeps near
    duplicates (exact ones, the same text after normalisation, always collapse).
    """

    COMPETITIVE_SUPPRESSION_SIGNAL = 0.3
    DEFAULT_SURFACING_THRESHOLD = 0.5
    DEFAULT_MAX_ITEMS = 10
    DEFAULT_PROPAGATION_DEPTH = 2
    RRF_K = 60
    CANDIDATE_MULTIPLIER = 5
    GRAPH_SEEDS = 5

    def __init__(
        self,
        model_class: type[Model],
        score_weights: dict[str, float] | None = None,
        max_items: int = DEFAULT_MAX_ITEMS,
        max_tokens: int | None = None,
        surfacing_threshold: float = DEFAULT_SURFACING_THRESHOLD,
        propagation_depth: int = DEFAULT_PROPAGATION_DEPTH,
        output_format: str = "structured",
        token_counter: Any = None,
        retrieval_mode: str = "auto",
        render_fields: list[str] | None = None,
        max_proactive: int | None = None,
        fusion: str = "rrf",
        fusion_weights: dict[str, float] | None = None,
        duplicate_cosine: float | None = DUPLICATE_COSINE,
    ) -> None:
        self.model_class = subclass_of("model_class", model_class, Model, "a redmem Model class")
        self.max_items = positive_int("max_items", max_items)
        self.max_tokens = positive_int("max_tokens", max_tokens, none=True)
        self.budget = Budget(max_items=self.max_items, max_tokens=self.max_tokens)
        self.surfacing_threshold = finite_number("surfacing_threshold", surfacing_threshold)
        self.propagation_depth = non_negative_int("propagation_depth", propagation_depth)
        self.output_format = check_format(output_format)
        counter = token_counter if token_counter is not None else settings().token_counter
        self.token_counter = resolve_counter(counter, stacklevel=3)
        self.render_fields = self._check_render_fields(render_fields)
        max_proactive = non_negative_int("max_proactive", max_proactive, none=True)
        self.max_proactive = max(1, self.max_items // 5) if max_proactive is None else max_proactive
        self.duplicate_cosine = _check_cosine(duplicate_cosine)
        self.fusion_weights = check_fusion(fusion, fusion_weights)
        self.fusion = fusion
        self.capabilities = Capabilities.of(model_class)
        self.retrieval_mode = retrieval_mode
        self.mode = resolve_mode(self.capabilities, retrieval_mode, score_weights or {})
        self.score_weights = self._check_score_weights(score_weights)
        self._text_fields = self._check_text_source()

    # -- the one call --------------------------------------------------------------------------
    def assemble(
        self, query_cues: dict[str, Any] | str | None = None, *, assess_quality: bool = False,
        emit_trace: bool = False, now: float | None = None, **partition: Any,
    ) -> AssemblyResult:
        """Retrieve, merge, budget, render and record post-effects for one turn.

        ``partition`` names the tenant (e.g. ``agent_id="agent-1"``); every path searches only
        inside it. ``now`` (epoch seconds) fixes the clock for decay and cyclic scores.
        """
        started = time.perf_counter()
        at = timestamp("now", now)
        query = self._query(partition)
        space = query.partition()
        text = cue_text(query_cues)
        push_limit = self.max_items * 2
        scan = [f.searcher(space, at, self.surfacing_threshold, push_limit) for f in self.capabilities.cyclic]
        pulled = retrieve(self.model_class._meta.client, plan_pull(self.capabilities, query, text, self._plan(), at, scan))
        for message in pulled.warnings:
            warnings.warn(message, RuntimeWarning, stacklevel=2)
        push = push_candidates(space, pulled.riders, push_limit)
        found = self._load(merge_paths(pulled.candidates, push, self.max_proactive, asked=bool(text)))
        merged, duplicates = self._distinct(found, pulled.matrix)
        chosen, slices, token_count = self._pack(merged)
        selected = [c.record for c in chosen]
        proactive = [c.record for c in chosen if c.push is not None]
        chosen_keys = {c.key for c in chosen}
        suppressed = [c.record for c in merged if c.pull is not None and c.key not in chosen_keys]
        quality = self.assess(query_cues, candidates=merged, now=at, **partition) if assess_quality else None
        apply_post_effects(selected, proactive, suppressed, self.COMPETITIVE_SUPPRESSION_SIGNAL, at)
        metadata = {
            "pull_count": sum(1 for c in chosen if c.pull is not None),
            "push_count": len(proactive),
            "token_count": token_count,
            "timing_ms": (time.perf_counter() - started) * 1000,
            "total_candidates": len(found),
            "retrieval_mode": pulled.mode,
            "suppressed_count": len(suppressed),
            "duplicates_collapsed": len(duplicates),
        }
        if emit_trace:
            metadata["trace"] = [
                {"key": c.key.redis_key, "rank": i, "score": c.combined, "source": c.source, "signals": dict(c.signals)}
                for i, c in enumerate(chosen, 1)
            ]
        if quality is not None:
            metadata["quality"] = quality
        return AssemblyResult(selected, proactive, compose(self.output_format, slices), metadata)

    # -- stages ------------------------------------------------------------------------------------
    def _query(self, partition: dict[str, Any]) -> Any:
        require_tenant(self.model_class, partition, "assemble")
        return self.model_class.query.filter(**partition).no_track()

    def _plan(self) -> PullPlan:
        return PullPlan(
            self.mode, self.max_items * self.CANDIDATE_MULTIPLIER, self.max_items * 2,
            self.propagation_depth, self.score_weights, self.GRAPH_SEEDS, self.fusion, self.fusion_weights,
        )

    def _load(self, candidates: list[Candidate]) -> list[Candidate]:
        """Hydrate the candidates not loaded yet in one round trip; drop records deleted meanwhile."""
        missing = [c for c in candidates if c.record is None]
        loaded = {r._saved_key: r for r in load_records(self.model_class, [c.key for c in missing], track=False)}
        for candidate in missing:
            candidate.record = loaded.get(candidate.key)
        return [c for c in candidates if c.record is not None]

    def _distinct(self, candidates: list[Candidate], matrix: Any) -> tuple[list[Candidate], list[Candidate]]:
        """(kept, collapsed): one copy of each memory text, the best-ranked (see
        :mod:`redmem.context.duplicates`); near duplicates by the vectors the vector search holds."""
        near = matrix is not None and self.duplicate_cosine is not None
        vectors = matrix.unit_vectors(c.key.record_id for c in candidates) if near else None
        return collapse_duplicates(candidates, lambda c: self._text_of(c.record, self._view(c.record)), vectors,
                                   lambda c: c.key.record_id,
                                   self.duplicate_cosine if near and self.duplicate_cosine is not None else 1.0)

    def _pack(self, candidates: list[Candidate]) -> tuple[list[Candidate], list[str], int]:
        """Render each candidate's slice, count it, and pack skip-not-break into the budget.

        In the line formats a record is counted as the line it becomes at the position it would
        take, line break included (the last line's break is not emitted: at most one token over).
        """
        slices = [self.render(c.record) for c in candidates]
        fmt = self.output_format
        if fmt in LINE_FORMATS:
            def cost(index: int, position: int) -> int:
                return self.token_counter(frame_line(fmt, position, slices[index]) + "\n")

            packed = pack(cost, self.budget, "skip_not_break", count=len(slices))
        else:
            packed = pack([self.token_counter(piece) for piece in slices], self.budget, "skip_not_break")
        lines = [frame_line(fmt, position, slices[i]) for position, i in enumerate(packed.selected, 1)]
        return [candidates[i] for i in packed.selected], lines, packed.token_count

    def render(self, record: Any) -> str:
        """The slice of ``record`` in the output format: exactly the text counted and emitted.

        Shown fields: ``render_fields`` if given, else every stored field that is not a key and
        not a primitive's bookkeeping (``Field.shown`` False, e.g. cyclic amplitudes).
        """
        view = self._view(record)
        return render_slice(self.output_format, view, self._text_of(record, view))

    def _view(self, record: Any) -> dict[str, Any]:
        """The shown fields of ``record`` (see :meth:`render`), by name, as they are rendered."""
        meta = record._meta
        if self.render_fields is not None:
            names = self.render_fields
        else:
            names = [f.name for f in meta.stored_fields() if f.shown and f.name not in meta.key_fields]
        return record_view({name: getattr(record, name, None) for name in names})

    def _check_score_weights(self, weights: dict[str, float] | None) -> dict[str, float]:
        """``score_weights`` checked now, not at the first query that needs them: every name a
        signal of the model that can score (see ``signal_names``), every weight a finite number >= 0."""
        if weights is None or (isinstance(weights, dict) and not weights):
            return {}
        return signal_weights(self.model_class, weights, "score_weights")

    def _check_text_source(self) -> list[str]:
        """The fields the content format takes a record's text from, in order of preference (see
        :meth:`_text_of`); the content format on a model that has none is refused."""
        caps, fields = self.capabilities, self.model_class._meta.fields
        named = (getattr(caps.bm25, "source", None), getattr(caps.embedding, "source", None), "content")
        sources = [n for n in dict.fromkeys(named) if isinstance(n, str) and n in fields and fields[n].shown
                   and getattr(fields[n], "python_type", None) is str]
        if self.output_format == "content" and not sources:
            raise ValidationError(
                f"output_format='content' shows each record's memory text, and {self.model_class.__name__} "
                "has no shown str field to take it from (the source of its BM25Field or EmbeddingField, "
                "or a field named 'content'); use one of 'structured', 'xml', 'natural'"
            )
        return sources

    def _check_render_fields(self, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise ValidationError(f"render_fields must be a list of field names or None, got {names!r}")
        fields = self.model_class._meta.fields
        unknown = [n for n in names if n not in fields or not fields[n].stored]
        if unknown:
            raise QueryException(
                f"render_fields names field(s) {unknown} that {self.model_class.__name__} does not store "
                "in its records (only stored fields can be shown)"
            )
        return list(names)

    def _text_of(self, record: Any, view: dict[str, Any]) -> str:
        """The memory text of the content format: the first text set among the model's text fields
        (its BM25Field's source, its EmbeddingField's, ``content``), else (a record whose text is
        unset) its shown fields ``view`` as in the natural format."""
        for source in self._text_fields:
            text = getattr(record, source, None)
            if isinstance(text, str):
                return text
        return render_slice("natural", view, "")

    def assess(
        self, query_cues: Any, *, candidates: list[Candidate] | None = None, now: float | None = None,
        **partition: Any,
    ) -> RetrievalQuality:
        """Score how well memory can answer ``query_cues`` (see ``redmem.recipes.quality``).

        Without ``candidates`` it is the cheap pre-retrieval probe (no propagation, no push path).
        """
        return assess_retrieval(self, query_cues, candidates=candidates, now=now, **partition)


def _check_cosine(value: float | None) -> float | None:
    """``duplicate_cosine`` as given: None, or a number in (0, 1] (ValidationError otherwise)."""
    cosine = finite_number("duplicate_cosine", value, low=0.0, high=1.0, none=True)
    if cosine == 0.0:
        raise ValidationError(f"duplicate_cosine must be a number in (0, 1] or None, got {value!r}")
    return cosine


def cue_text(query_cues: dict[str, Any] | str | None) -> str:
    """The query text of the cues: a str as given, else the cue values joined by spaces."""
    if query_cues is None:
        return ""
    if isinstance(query_cues, str):
        return query_cues.strip()
    if not isinstance(query_cues, dict):
        raise QueryException(f"query_cues must be a dict or a str, got {type(query_cues).__name__}")
    return " ".join(str(v) for v in query_cues.values() if v is not None and str(v).strip())
