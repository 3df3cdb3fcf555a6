"""HSCAEngine: ingest turns, score them through four layers, freeze coherent beats into snapshots.

Without a session the snapshots live in the engine (as in the module interface); with
``agent_id`` and ``session_id`` they are stored in Redis as they are taken (:mod:`.store`), so
any process opening the same session reads the same macro context. The buffer of chunks not yet
snapshotted is always the engine's own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from ...store._aio import async_variant
from ...store._errors import ValidationError
from ...store._validation import finite_number, positive_int
from ..assembler._context_assembler import AssemblyResult, ContextAssembler
from ._beats import Beat, MemoryBeats, snapshot_term_weights
from ._bridging import bridge_chunks, bridge_links, with_evidence
from ._domain_model import DomainModelChoice, resolve_domain_model
from ._domains import KeywordWeights
from ._history import record_served
from ._interface import ContextSnapshot, WeightedChunk
from ._macro import DEFAULT_LOCALITY, DomainStep, RelevantBeat, rank_relevant
from ._nuance_model import NuanceModel
from ._relational import TIE_SATURATION, TIE_SATURATION_BOUNDS
from ._scoring import ScoredTurn, score_turn
from ._source import PASSAGE_FIELDS, Explaining, SnapshotPassage, assemble_region
from ._store import SessionStore
from ._support import support_strength
from ._text import MAX_TURN_CHARS, ParsedTurn, query_terms
from ._tuning import load_parameters
from ._window import DEFAULT_MIN_BEAT, build_snapshot, domain_break, snapshot_due

__all__ = ["HSCAEngine"]


class HSCAEngine:
    """Hierarchical Semantic Compression with Adaptive Context Windowing.

    Args:
        snapshot_coherence_threshold: aggregate coherence that triggers a snapshot (0.72).
        max_buffer_chunks: buffer size that forces a snapshot (20).
        cooccurrence_window: layer 1's co-occurrence window in tokens (5).
        agent_id: the tenant whose session stores the snapshots in Redis (with ``session_id``).
        session_id: the session of ``agent_id`` (both or neither; neither: kept in the process).
        min_beat_chunks: chunks a threshold-triggered snapshot needs at least (2).
        keep_text: keep the chunks' text in snapshots (False: only the weight maps survive).
        nuance_model: the chat model of the metaphor / sarcasm / analogy / narrative flags
            (None: those flags are omitted).
        domain_model: tags domains by meaning (an :class:`EmbeddingDomains`), None: by the keyword
            lists; ``"auto"`` (default): by meaning over the offline MiniLM model when it is
            installed, else the keyword lists (:func:`~.domain_model.default_domain_model`).
        flag_weights: per nuance flag, the factor on a flagged chunk's layer 1 (self-tuning; none: 1).
        keyword_weights: per domain, per keyword stem, the factor on that keyword's hits for that
            domain in layer 2's keyword lists (self-tuning; none: 1).
        max_turn_chars: the longest turn ingested, in characters (2 MiB); a longer one raises
            ValidationError before it is scored (layer 1 is linear in sentences: ~1 s of CPU per MB).
        tie_saturation: share of a long turn's terms the conversation must say for the turn to
            keep its whole layer-1 weight (0.25; self-tuning; :mod:`.relational`).
        short_prior: share of the flat short-chunk score a short turn keeps whatever its
            conversation says (0; self-tuning; :mod:`.relational`).

    :meth:`for_agent` builds an engine with the agent's tuned parameters; :meth:`record_served`
    records which chunks served a query, the history :func:`~redmem.recipes.hsca.tune` learns from.
    """

    def __init__(
        self,
        snapshot_coherence_threshold: float = 0.72,
        max_buffer_chunks: int = 20,
        cooccurrence_window: int = 5,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        min_beat_chunks: int = DEFAULT_MIN_BEAT,
        keep_text: bool = True,
        nuance_model: NuanceModel | None = None,
        domain_model: DomainModelChoice = "auto",
        flag_weights: Mapping[str, float] | None = None,
        keyword_weights: KeywordWeights | None = None,
        max_turn_chars: int = MAX_TURN_CHARS,
        tie_saturation: float = TIE_SATURATION,
        short_prior: float = 0.0,
    ) -> None:
        self.snapshot_coherence_threshold = finite_number(
            "snapshot_coherence_threshold", snapshot_coherence_threshold, low=0.0, high=1.0
        )
        self.max_buffer_chunks = positive_int("max_buffer_chunks", max_buffer_chunks)
        self.cooccurrence_window = positive_int("cooccurrence_window", cooccurrence_window)
        self.min_beat_chunks = positive_int("min_beat_chunks", min_beat_chunks)
        self.max_turn_chars = positive_int("max_turn_chars", max_turn_chars)
        self.tie_saturation = finite_number("tie_saturation", tie_saturation,
                                           low=TIE_SATURATION_BOUNDS[0], high=TIE_SATURATION_BOUNDS[1])
        self.short_prior = finite_number("short_prior", short_prior, low=0.0, high=1.0)
        self.keep_text = keep_text
        self.nuance_model = nuance_model
        self.domain_model = resolve_domain_model(domain_model)
        self.flag_weights = {
            str(f): finite_number(f"flag_weights[{f!r}]", w, low=0.0) for f, w in (flag_weights or {}).items()
        }
        self.keyword_weights = {
            str(d): {str(s): finite_number(f"keyword_weights[{d!r}][{s!r}]", w, low=0.0) for s, w in stems.items()}
            for d, stems in (keyword_weights or {}).items()
        }
        self.agent_id, self.session_id = agent_id, session_id
        self._buffer: list[ScoredTurn] = []
        self._recent: deque[ParsedTurn] = deque(maxlen=self.max_buffer_chunks)
        self._frozen: deque[ScoredTurn] = deque(maxlen=self.max_buffer_chunks)
        self._beat_of: dict[str, tuple[ScoredTurn, ...]] = {}
        self._beats: MemoryBeats | SessionStore = _beats_of(agent_id, session_id)

    @classmethod
    def for_agent(cls, agent_id: str, session_id: str | None = None, **options: Any) -> HSCAEngine:
        """An engine with ``agent_id``'s tuned window, threshold, flag weights, keyword weights, tie
        saturation and short-turn prior (the defaults if never tuned); with ``session_id`` its
        snapshots go to that session in Redis."""
        tuned = load_parameters(agent_id)
        return cls(
            tuned.snapshot_coherence_threshold,
            cooccurrence_window=tuned.cooccurrence_window,
            flag_weights=tuned.flag_weights,
            keyword_weights=tuned.keyword_weights,
            tie_saturation=tuned.tie_saturation,
            short_prior=tuned.short_prior,
            agent_id=agent_id if session_id is not None else None,
            session_id=session_id,
            **options,
        )

    def record_served(self, query: str, served_chunk_ids: Sequence[str], shown_chunk_ids: Sequence[str] = ()) -> None:
        """Record that these chunks of the session's snapshots served ``query``, of the chunks
        shown for it (the tuning signal: the shown chunks that did not serve are its negatives;
        none given: every other chunk of the session is).

        ValidationError for an engine without a Redis session, or a served chunk not shown.
        """
        if self.agent_id is None or self.session_id is None:
            raise ValidationError("record_served() needs an engine with agent_id and session_id")
        record_served(self.agent_id, self.session_id, query, served_chunk_ids, shown_chunk_ids=shown_chunk_ids)

    def ingest_turn(self, text: str) -> WeightedChunk:
        """Score ``text`` through the layers and buffer it; take a snapshot when one is due: of the
        buffer before the turn joins it when the turn changes the domain, of the buffer with it
        when the window says so (:mod:`.window`)."""
        scored = self._score(text)
        if self._buffer and domain_break(self.buffer, scored.chunk):
            self.take_snapshot()
        self._buffer.append(scored)
        self._recent.append(scored.parsed)
        if self.should_snapshot():
            self.take_snapshot()
        return scored.chunk

    def score_layers(self, text: str) -> WeightedChunk:
        """Layers 1-3 of ``text`` as a WeightedChunk, without buffering it."""
        return self._score(text).chunk

    def should_snapshot(self) -> bool:
        """Whether the buffer is full, or holds a minimum beat whose aggregate coherence reaches the threshold."""
        return snapshot_due(
            [s.chunk for s in self._buffer],
            self.snapshot_coherence_threshold,
            self.max_buffer_chunks,
            self.min_beat_chunks,
        )

    def take_snapshot(self) -> ContextSnapshot:
        """Freeze the buffer into the session's next snapshot, store it and clear the buffer.
        With a domain model, turns of the buffer that mean what turns of earlier snapshots meant
        in another domain are linked to them through a bridge snapshot at the next position
        (:mod:`.bridging`; the earlier snapshots are not edited). Returns the buffer's snapshot.

        ValidationError when the buffer is empty.
        """
        if not self._buffer:
            raise ValidationError("take_snapshot() needs at least one chunk in the buffer")
        snapshot = self._freeze([s.chunk for s in self._buffer], self._buffer)
        if self.domain_model is not None:
            beat = tuple(self._buffer)
            links = with_evidence(
                bridge_links(self._buffer, self._frozen, self.domain_model),
                {**self._beat_of, **{s.chunk.chunk_id: beat for s in beat}},
            )
            if links:
                linked = list({s.chunk.chunk_id: s for pair in links for s in pair}.values())
                self._freeze(bridge_chunks(links), linked)
        self._frozen.extend(self._buffer)
        self._beat_of = {
            s.chunk.chunk_id: self._beat_of.get(s.chunk.chunk_id, tuple(self._buffer)) for s in self._frozen
        }
        self._buffer.clear()
        return snapshot

    def _freeze(self, chunks: list[WeightedChunk], scored: Sequence[ScoredTurn]) -> ContextSnapshot:
        """Store ``chunks`` (of the turns ``scored``) as the session's next snapshot."""
        snapshot = build_snapshot(chunks, self._beats.next_position(), self.max_buffer_chunks, keep_text=self.keep_text)
        self._beats.append(Beat(snapshot, snapshot_term_weights([s.term_weights for s in scored])))
        return snapshot

    def get_macro_context(self) -> list[ContextSnapshot]:
        """Every snapshot of the session, in position order (the buffer excluded): the session's
        series read, and only the snapshots this process has not read before (:mod:`.series`)."""
        return [b.snapshot for b in self._beats.between()]

    @property
    def buffer(self) -> list[WeightedChunk]:
        """The chunks not yet snapshotted, oldest first."""
        return [s.chunk for s in self._buffer]

    def region(self, start: int, stop: int | None = None) -> list[ContextSnapshot]:
        """The snapshots at positions ``start`` to ``stop`` inclusive (no ``stop``: to the last)."""
        return [b.snapshot for b in self._beats.between(start, stop)]

    def last_beats(self, n: int = 3) -> list[ContextSnapshot]:
        """The last ``n`` snapshots, in order ("the last three beats")."""
        return [b.snapshot for b in self._beats.last(positive_int("n", n))]

    def first_mention(self, concept: str) -> int | None:
        """The position of the first snapshot mentioning every term of ``concept``; None if none does."""
        terms = query_terms("concept", concept)
        return self._beats.first_mention(terms) if terms else None

    def state_before(self, concept: str) -> list[ContextSnapshot]:
        """The snapshots taken before ``concept`` first appeared (all of them if it never did)."""
        first = self.first_mention(concept)
        if first == 0:
            return []
        return self.region(0, None if first is None else first - 1)

    def domain_evolution(self, start: int = 0, stop: int | None = None) -> list[DomainStep]:
        """Each snapshot's dominant domain, in order, marking where the conversation moved; the
        positions ``start`` to ``stop`` inclusive (no ``stop``: to the last). Read from the
        session's domain series, not from the snapshots (:mod:`.series`)."""
        return self._beats.domain_evolution(start, stop)

    def relevant(
        self,
        query: str,
        context_position: int | None = None,
        limit: int = 5,
        *,
        region: tuple[int, int | None] = (0, None),
        locality: float = DEFAULT_LOCALITY,
    ) -> list[RelevantBeat]:
        """The snapshots of ``region`` most relevant to ``query``, damped by distance from ``context_position``."""
        return self._ranked(query, context_position, region, locality)[: positive_int("limit", limit)]

    def _ranked(
        self, query: str, context_position: int | None, region: tuple[int, int | None], locality: float
    ) -> list[RelevantBeat]:
        """Every snapshot of ``region`` relevant to ``query``, best first (one read of the session)."""
        terms = query_terms("query", query)
        if not terms:
            return []
        beats = self._beats.mentioning(terms, *region)
        return rank_relevant(beats, terms, context_position, max(len(beats), 1), locality)

    def support_strength(self, claim: str, region: tuple[int, int | None] = (0, None)) -> float:
        """How firmly the snapshots of ``region`` back ``claim``, in [0, 1]: the best beat's mean
        relational weight of the claim's terms (:mod:`.support`; a ConfidenceField signal through
        :func:`~redmem.recipes.hsca._support.confidence_signal`)."""
        terms = query_terms("claim", claim)
        return support_strength(self._beats.mentioning(terms, *region), terms) if terms else 0.0

    def assemble(
        self,
        query: str,
        *,
        region: tuple[int, int | None] = (0, None),
        context_position: int | None = None,
        assembler: ContextAssembler | None = None,
    ) -> AssemblyResult:
        """The snapshots of ``region`` most relevant to ``query`` (as :meth:`relevant` ranks them),
        packed and rendered as injectable context by ``assembler``, a ContextAssembler of
        :class:`SnapshotPassage` (default: position, domain and content shown, 5 items).

        ValidationError for an engine without a Redis session or an assembler of another model.
        """
        if self.agent_id is None or self.session_id is None:
            raise ValidationError("assemble() needs an engine with agent_id and session_id")
        assembler = assembler or ContextAssembler(SnapshotPassage, render_fields=list(PASSAGE_FIELDS))
        if assembler.model_class is not SnapshotPassage:
            raise ValidationError(
                f"assemble() needs a ContextAssembler of SnapshotPassage, not of {assembler.model_class.__name__}"
            )
        ranked = self._ranked(query, context_position, region, DEFAULT_LOCALITY)
        return assemble_region(
            assembler, ranked, self.agent_id, self.session_id, Explaining(context_position, DEFAULT_LOCALITY, region)
        )

    def _score(self, text: Any) -> ScoredTurn:
        return score_turn(
            text,
            self.cooccurrence_window,
            list(self._recent),
            self.nuance_model,
            domain_model=self.domain_model,
            flag_weights=self.flag_weights,
            keyword_weights=self.keyword_weights,
            max_chars=self.max_turn_chars,
            tie_saturation=self.tie_saturation,
            short_prior=self.short_prior,
        )

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    afor_agent = async_variant(for_agent)
    arecord_served = async_variant(record_served)
    aingest_turn = async_variant(ingest_turn)
    atake_snapshot = async_variant(take_snapshot)
    aget_macro_context = async_variant(get_macro_context)
    aregion = async_variant(region)
    alast_beats = async_variant(last_beats)
    afirst_mention = async_variant(first_mention)
    astate_before = async_variant(state_before)
    adomain_evolution = async_variant(domain_evolution)
    arelevant = async_variant(relevant)
    aassemble = async_variant(assemble)


def _beats_of(agent_id: str | None, session_id: str | None) -> MemoryBeats | SessionStore:
    if agent_id is None and session_id is None:
        return MemoryBeats()
    if not isinstance(agent_id, str) or not isinstance(session_id, str) or not agent_id or not session_id:
        raise ValidationError("an HSCA session needs both agent_id and session_id, as non-empty str")
    return SessionStore(agent_id, session_id)
