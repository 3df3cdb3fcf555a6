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
from dataclasses import dataclass, field
from typing import Any

from ..context.candidates import Candidate, merge_paths
from ..context.duplicates import DUPLICATE_COSINE, collapse_duplicates
from ..context.effects import apply_post_effects
from ..context.packing import Budget, pack
from ..context.rendering import LINE_FORMATS, check_format, compose, frame_line, record_view, render_slice
from ..context.retrieval import Capabilities, PullPlan, check_fusion, first_round, pull_candidates, resolve_mode
from ..context.tokens import resolve_counter
from ..model.persistence import load_records
from ..store.connection import settings
from ..store.errors import QueryException, ValidationError
from .quality import RetrievalQuality, assess_retrieval

__all__ = ["ContextAssembler", "AssemblyResult"]


@dataclass
class AssemblyResult:
    """What one ``assemble()`` returns: selected records (ranked), the push subset, text, metadata."""

    records: list[Any] = field(default_factory=list)
    proactive: list[Any] = field(default_factory=list)
    formatted: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class ContextAssembler:
    """Assemble LLM-ready context from a model's memories (see the module docstring).

    ``fusion`` says how the pull path fuses its lists: ``"rrf"`` (reciprocal rank fusion, the
    default) or ``"convex"`` (a convex combination of each list's scores divided by its best,
    :func:`~redmem.context.fusion.convex_fusion`). ``fusion_weights`` fixes the weight of each
    list (``keyword``, ``vector``, ``graph``, ``composite``; a list not named weighs 1) for every
    query; None (the default) takes :func:`~redmem.context.fusion.query_adaptive_weights` of
    the query text in hybrid mode and weighs every list 1 in the other modes.
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
        model_class: type,
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
        self.model_class = model_class
        self.score_weights = dict(score_weights or {})
        self.budget = Budget(max_items=max_items, max_tokens=max_tokens)
        self.max_items, self.max_tokens = max_items, max_tokens
        self.surfacing_threshold = float(surfacing_threshold)
        self.propagation_depth = propagation_depth
        self.output_format = check_format(output_format)
        counter = token_counter if token_counter is not None else settings().token_counter
        self.token_counter = resolve_counter(counter, stacklevel=3)
        self.render_fields = self._check_render_fields(render_fields)
        if max_proactive is not None and (isinstance(max_proactive, bool) or not isinstance(max_proactive, int)
                                          or max_proactive < 0):
            raise ValueError(f"max_proactive must be a non-negative int or None, got {max_proactive!r}")
        self.max_proactive = max(1, max_items // 5) if max_proactive is None else max_proactive
        self.duplicate_cosine = _check_cosine(duplicate_cosine)
        self.fusion_weights = check_fusion(fusion, fusion_weights)
        self.fusion = fusion
        self.capabilities = Capabilities.of(model_class)
        self.retrieval_mode = retrieval_mode
        self.mode = resolve_mode(self.capabilities, retrieval_mode, self.score_weights)

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
        at = time.time() if now is None else now
        query = self._query(partition)
        space = query.partition()
        text = cue_text(query_cues)
        plan = self._plan()
        first = first_round(self.model_class._meta.client, self.capabilities, space, text, plan,
                            self.surfacing_threshold, self.max_items * 2, at, query)
        if first.may_exist:
            pull, mode = pull_candidates(self.model_class, self.capabilities, space, text, plan, query,
                                         first.keyword, first.vector, first.composite, at, first.graph_empty)
        else:  # nothing in this partition shares a term with the query
            pull, mode = [], self.mode
        found = self._load(merge_paths(pull, first.push, self.max_proactive, asked=bool(text)))
        merged, duplicates = self._distinct(found, first.matrix)
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
            "retrieval_mode": mode,
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
        meta = self.model_class._meta
        if set(partition) != set(meta.partition_fields):
            raise QueryException(
                f"assemble() needs exactly the partition fields {list(meta.partition_fields)} "
                f"of {self.model_class.__name__} as keyword arguments, got {sorted(partition)}"
            )
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
        return collapse_duplicates(candidates, lambda c: self._text_of(c.record), vectors,
                                   lambda c: c.key.record_id, self.duplicate_cosine if near else 1.0)

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
        meta = record._meta
        if self.render_fields is not None:
            names = self.render_fields
        else:
            names = [f.name for f in meta.stored_fields() if f.shown and f.name not in meta.key_fields]
        values = {name: getattr(record, name, None) for name in names}
        return render_slice(self.output_format, record_view(values), self._text_of(record))

    def _check_render_fields(self, names: list[str] | None) -> list[str] | None:
        if names is None:
            return None
        fields = self.model_class._meta.fields
        unknown = [n for n in names if n not in fields or not fields[n].stored]
        if unknown:
            raise QueryException(
                f"render_fields names field(s) {unknown} that {self.model_class.__name__} does not store "
                "in its records (only stored fields can be shown)"
            )
        return list(names)

    def _text_of(self, record: Any) -> str:
        """The memory text of the content format: the first shown text among the search sources."""
        caps, fields = self.capabilities, record._meta.fields
        for source in (getattr(caps.bm25, "source", None), getattr(caps.embedding, "source", None), "content"):
            shown = source in fields and fields[source].shown
            if shown and isinstance(getattr(record, source, None), str):
                return getattr(record, source)
        return str(record)

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
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValidationError(f"duplicate_cosine must be a number in (0, 1] or None, got {value!r}")
    return float(value)


def cue_text(query_cues: dict[str, Any] | str | None) -> str:
    """The query text of the cues: a str as given, else the cue values joined by spaces."""
    if query_cues is None:
        return ""
    if isinstance(query_cues, str):
        return query_cues.strip()
    if not isinstance(query_cues, dict):
        raise QueryException(f"query_cues must be a dict or a str, got {type(query_cues).__name__}")
    return " ".join(str(v) for v in query_cues.values() if v is not None and str(v).strip())
