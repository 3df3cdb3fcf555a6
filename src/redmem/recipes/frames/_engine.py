"""FrameMemory: an agent's memory blocks and the frames (SELF / ATTENTION / TASK) built from them.

``frame()`` retrieves, renders into the frame's token budget and then, in one round trip,
reinforces what it returned (and caches it when the frame has a cache policy); ``recall()`` runs
the same retrieval and returns the scored blocks without rendering and without writing anything.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ...context._oversize import check_oversize
from ...context._tokens import QUARTER_LENGTH, TokenCounter, quarter_length, resolve_counter
from ...fields._confidence import ConfidenceField
from ...fields._cooccurrence import Graph
from ...fields.search_protocol import run_search
from ...lifecycle import supersede as lifecycle_supersede
from ...model._dbkey import DbKey
from ...model._loading import load_records
from ...store._aio import async_variant
from ...store._connection import server_errors
from ...store._errors import RecordNotFound, ValidationError
from ...store._keys import KeySpace
from ...store._scripts import run_script
from ...store._validation import finite_number, non_negative_int, positive_int
from ._bound import score_bound
from ._cache import CachedFrame, CacheRead, cache_key, encode_result
from ._definitions import (
    BUILTIN_FRAMES,
    FrameDefinition,
    check_tag,
    definition_from_json,
    definition_to_json,
)
from ._effects import CacheWrite, apply_effects
from ._explain import FrameTrail
from ._guarantees import oversampled, select, suppress_contradictions
from ._learning import WiringPlan, active_hours_of, append_block, plan_from_hits
from ._models import DECAY_TIERS, Block, decay_tier
from ._neighbours import NEIGHBOURS
from ._rendering import fit_blocks
from ._retrieval import Gathered, block_keys, gather, validity_argument
from ._scoring import FEEDBACK_CAP, FrameResult, ScoredBlock, score_candidates, scored_block
from ._storage import FrameStore
from ._wiring import DEFAULT_WIRING, LearnWiring

__all__ = ["FrameMemory", "SEED_TOKEN_ESTIMATE", "quarter_length"]

#: ``token_counter`` value selecting the seed's estimate, :func:`quarter_length` (resolved by
#: :func:`~redmem.context._tokens.resolve_counter`, as every recipe's counter is).
SEED_TOKEN_ESTIMATE = QUARTER_LENGTH
SELF_PREFIX = "self/"


class FrameMemory:
    """The memory of one agent (``agent_id``: its partition, so no other agent's block ever appears).

    Args:
        agent_id: the agent; every block, edge, clock and cache entry lives in its partition.
        token_counter: None (exact cl100k_base counts), ``"len/4"`` (the seed's estimate), an
            encoding name, or a callable ``text -> int``.
        clock: wall time in seconds (active hours accrue between ``begin_session`` and ``end_session``).
        oversize: a block bigger than a frame's whole budget is ``"truncate"``-d to the room the
            others leave (the default), ``"skip"``-ped, or, if guaranteed, ``"admit"``-ted over the
            budget (the seed's rule); see :mod:`redmem.context._oversize`.
        feedback_cap: the most recency, reinforcement and centrality (the signals ``frame()``
            feeds back) add to a score together (default :data:`~.scoring.FEEDBACK_CAP`, so frames asked in
            sequence keep ranking by the query); None scores with the frames' raw weights (the seed's).
        wiring: how :meth:`learn` links a new block to its near neighbours and flags likely
            contradictions and duplicates (:class:`~.wiring.LearnWiring`); None: learn writes no edge.
        neighbours: how many blocks learned before and after a block in the same session are
            searched with it (:mod:`.neighbours`, default :data:`~.neighbours.NEIGHBOURS`); 0: none.

    The embedding provider and key prefix are those of :func:`redmem.configure`.
    """

    def __init__(
        self, agent_id: str, *, token_counter: TokenCounter | str | None = None,
        clock: Callable[[], float] = time.time, oversize: str = "truncate",
        feedback_cap: float | None = FEEDBACK_CAP, wiring: LearnWiring | None = DEFAULT_WIRING,
        neighbours: int = NEIGHBOURS,
    ) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError(f"agent_id must be a non-empty str, got {agent_id!r}")
        self.agent_id = agent_id
        self.count_tokens: TokenCounter = (
            resolve_counter(token_counter))
        self.clock = clock
        self.oversize = check_oversize(oversize)
        self.feedback_cap = None if feedback_cap is None else finite_number("feedback_cap", feedback_cap, low=0.0,
                                                                            high=1.0)
        if wiring is not None and not isinstance(wiring, LearnWiring):
            raise ValidationError(f"wiring is a LearnWiring or None, got {wiring!r}")
        self.wiring = wiring
        self.neighbours = non_negative_int("neighbours", neighbours)

    # -- where -------------------------------------------------------------------------------
    @property
    def space(self) -> KeySpace:
        """The agent's partition (key prefix as configured now)."""
        return Block._meta.keyspace((self.agent_id,))

    @property
    def client(self) -> Any:
        return Block._meta.client

    @property
    def store(self) -> FrameStore:
        """The agent's frames keys beside its blocks (:mod:`.storage`)."""
        return FrameStore(self.client, self.space)

    # -- writing blocks ------------------------------------------------------------------------
    def learn(self, text: str, tags: Sequence[str] = (), category: str = "knowledge") -> str:
        """Store a block (embedded now, reinforced at the current active hour) after the session's
        earlier blocks, searchable through them and they through it (``neighbours``,
        :mod:`.neighbours`), wired to its near neighbours and superseding what it updates as
        ``wiring`` says (:mod:`.wiring`); returns its id.

        Round trips: 2 without wiring (read, MULTI/EXEC: :mod:`.learning`), 3 with it (its vector
        search first), one more when a neighbour is near enough to be judged, and a supersede's
        own when the judge says so. The earlier blocks' new contexts are written field by field:
        a reinforcement landing meanwhile is never overwritten."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError(f"a block's text is a non-empty str, got {text!r}")
        if isinstance(tags, str) or not isinstance(tags, (list, tuple, set, frozenset)):
            raise ValidationError(f"tags must be a list of str, got {tags!r}")
        clean = sorted({check_tag(tag) for tag in tags})
        check_tag(category)
        now = self.clock()
        block = Block(
            agent_id=self.agent_id, content=text, category=category, tags=clean,
            decay_lambda=DECAY_TIERS[decay_tier(clean, category)], valid_from=now, block_id=uuid.uuid4().hex,
        )
        Block.embedding.embed_many([block])
        block_id = str(block.block_id)
        plan = self._wiring_plan(block_id, text, block.embedding, self.wiring)

        def also(pipe: Any) -> None:
            if _is_self(clean):
                self.store.queue_self_changed(pipe)
            if plan is not None:
                plan.queue(pipe, self._graph(), self.store)

        append_block(block, window=self.neighbours, now=now, also=also)
        for older in [] if plan is None else plan.superseded:
            self.supersede(older, block_id)
        return block_id

    def _wiring_plan(self, block_id: str, text: str, vector: Any, wiring: LearnWiring | None) -> WiringPlan | None:
        """What learn writes into the graph for the new block (module :mod:`.wiring`): its links
        to its near neighbours (one vector search) and the judge's verdicts on the nearest (their
        records loaded, one round trip, only when there are any)."""
        if wiring is None or vector is None:
            return None
        space = self.space
        hits = run_search(self.client, Block.embedding.searcher(space, vector, wiring.neighbours_wanted))

        def current(ids: list[str]) -> list[tuple[str, str]]:
            return [(older.db_key.record_id, older.content or "")
                    for older in load_records(Block, [DbKey(space, other) for other in ids], track=False)
                    if older.valid_to is None]  # a block superseded already is not judged again

        return plan_from_hits(DbKey(space, block_id), text, hits, wiring, current)

    def supersede(self, older: str, newer: str) -> None:
        """Record that block ``newer`` replaces block ``older`` (what :meth:`learn` does when its
        judge says so): ``older`` is closed through :func:`redmem.lifecycle.supersede` (its
        ``valid_to`` set to ``newer``'s ``valid_from``, linked both ways) and the pair recorded
        as a contradiction. Frames leave ``older`` out unless read ``as_of`` a time it was valid.
        RecordNotFound for an unknown block, ValidationError when older == newer.
        """
        self._check_pair(older, newer)
        found = {b.db_key.record_id: b for b in load_records(Block, [DbKey(self.space, older), DbKey(self.space, newer)],
                                                              track=False)}
        missing = [block for block in (older, newer) if block not in found]
        if missing:
            raise RecordNotFound(f"no block {missing[0]!r} for agent {self.agent_id!r}")
        lifecycle_supersede(found[older], found[newer])
        self.contradict(older, newer)

    def duplicates(self, block_id: str) -> list[str]:
        """The blocks :meth:`learn` flagged as saying the same as ``block_id`` (sorted ids)."""
        self._check_id(block_id)
        return self.store.duplicates_of(block_id)

    def connect(self, a: str, b: str, weight: float = 0.1) -> float:
        """Create the edge a-b at ``weight`` (an existing edge keeps its weight); returns the edge's weight.

        RecordNotFound for an unknown block and ValidationError for a bad weight or a == b; nothing is written.
        """
        weight = finite_number("weight", weight, low=0.0, high=1.0)
        if weight <= 0:
            raise ValidationError("weight must lie in (0, 1]")
        graph, tags = self._graph(), self._tags_of(a, b)
        with server_errors(self.client), self.client.pipeline(transaction=False) as pipe:
            graph.link(DbKey(self.space, a), DbKey(self.space, b), weight, pipe)
            if _is_self(tags):
                self.store.queue_self_changed(pipe)
            reply = pipe.execute()[0]
        if reply is None:
            raise RecordNotFound(f"cannot connect {a!r} and {b!r}: a block is not stored")
        return float(reply)

    def contradict(self, a: str, b: str) -> bool:
        """Record that blocks ``a`` and ``b`` contradict each other; False if already recorded.

        RecordNotFound for an unknown block, ValidationError when a == b; nothing is written then.
        """
        self._check_pair(a, b)
        keys = block_keys(self.space)
        with server_errors(self.client):
            reply = run_script("frames_contradict", [self.space.record(a), self.space.record(b),
                                                     keys["contradictions"], keys["version"]], [a, b], self.client)
        if reply is None:
            raise RecordNotFound(f"cannot record a contradiction of {a!r} and {b!r}: a block is not stored")
        return bool(reply)

    def archive(self, block_id: str) -> None:
        """Archive a block: it stays stored but no frame retrieves it any more."""
        self._check_id(block_id)
        keys = block_keys(self.space)
        with server_errors(self.client):
            reply = run_script("frames_archive", [self.space.record(block_id), keys["window"], keys["version"]],
                               [block_id], self.client)
        if reply is None:
            raise RecordNotFound(f"cannot archive {block_id!r}: no such block")

    def touch(self, block_id: str) -> float:
        """Reinforce a block now, as if a frame had returned it (back inside every frame's window);
        returns the active hours it was touched at. RecordNotFound when it is not stored."""
        self._check_id(block_id)
        return self._touch(block_id, revive=False)

    def revive(self, block_id: str) -> float:
        """Make an archived (or any) block active again and touch it; returns the active hours now.
        RecordNotFound when it is not stored."""
        self._check_id(block_id)
        return self._touch(block_id, revive=True)

    def _touch(self, block_id: str, *, revive: bool) -> float:
        keys, now = block_keys(self.space), self.active_hours()
        with server_errors(self.client):
            reply = run_script("frames_touch", [self.space.record(block_id), keys["window"], keys["count"],
                                                keys["version"]], [block_id, repr(now), int(revive)], self.client)
        if reply is None:
            raise RecordNotFound(f"cannot touch {block_id!r}: no such block")
        return now

    def update_confidence(self, block_id: str, signal: float) -> float:
        """Apply one evidence signal in [0, 1] to the block's confidence (see ConfidenceField); returns it."""
        block = self.get(block_id)
        confidence = ConfidenceField.update_confidence(block, "confidence", signal)
        if _is_self(block.tags):
            self._self_changed()
        return float(confidence or 0.0)

    def get(self, block_id: str) -> Block:
        """The stored block; RecordNotFound if there is none."""
        self._check_id(block_id)
        block: Block | None = Block.query.get(agent_id=self.agent_id, block_id=block_id)
        if block is None:
            raise RecordNotFound(f"no block {block_id!r} for agent {self.agent_id!r}")
        return block

    # -- the active-hours clock ------------------------------------------------------------------
    def begin_session(self) -> float:
        """Start counting active hours (no-op when a session is open); returns the active hours now."""
        return self._clock_script("begin")

    def end_session(self) -> float:
        """Stop counting active hours and drop the cached frames (the seed's FrameCache is per
        session); returns the active hours now."""
        hours = self._clock_script("end")
        self._self_changed()
        return hours

    def active_hours(self) -> float:
        """Hours spent in sessions so far, the open one included."""
        hours, started = self.store.clock()
        return active_hours_of(hours, started, self.clock())

    def _clock_script(self, mode: str) -> float:
        with server_errors(self.client):
            return float(run_script("frames_clock", [block_keys(self.space)["clock"]], [mode, repr(self.clock())],
                                    self.client))

    # -- frames ----------------------------------------------------------------------------------
    def register_frame(self, definition: FrameDefinition) -> None:
        """Store a custom frame for this agent (every process sees it); built-in names are taken."""
        if not isinstance(definition, FrameDefinition):
            raise ValidationError(f"register_frame takes a FrameDefinition, got {definition!r}")
        if definition.name in BUILTIN_FRAMES:
            raise ValidationError(f"{definition.name!r} is a built-in frame and cannot be replaced")
        stored = replace(definition, source="user")
        self.store.store_definition(stored.name, definition_to_json(stored))

    def frame_definition(self, name: str) -> FrameDefinition:
        """The built-in or registered frame ``name``; ValidationError when there is none."""
        if not isinstance(name, str):
            raise ValidationError(f"a frame name is a str, got {name!r}")
        if name in BUILTIN_FRAMES:
            return BUILTIN_FRAMES[name]
        stored = self.store.definition(name)
        if stored is None:
            raise ValidationError(f"unknown frame {name!r}; built-in frames are {sorted(BUILTIN_FRAMES)}")
        return definition_from_json(stored)

    def recall(self, name: str, query: str | None = None, *, top_k: int = 5, as_of: Any = None) -> list[ScoredBlock]:
        """The blocks frame ``name`` would return, scored, before rendering; writes nothing.
        ``as_of``: None reads current blocks (none superseded); epoch seconds or a datetime, the
        blocks valid then; ``"all"``, every block (:mod:`redmem.lifecycle`)."""
        definition = self.frame_definition(name)
        chosen, _, _ = self._chosen(definition, _checked_query(query), positive_int("top_k", top_k),
                                       as_of=validity_argument(as_of))
        return chosen

    def frame(self, name: str, query: str | None = None, *, top_k: int = 5,
              token_budget: int | None = None, reinforce: bool = True, as_of: Any = None) -> FrameResult:
        """Frame ``name`` rendered for the prompt; the returned blocks (and edges among them) are
        reinforced (unless ``reinforce`` is False), and a cacheable frame's result cached, in one round trip.
        ``as_of`` as :meth:`recall` takes it; a frame read ``as_of`` a time neither reads nor fills the cache."""
        if not isinstance(reinforce, bool):
            raise ValidationError(f"reinforce is a bool, got {reinforce!r}")
        definition = self.frame_definition(name)
        query, top_k = _checked_query(query), positive_int("top_k", top_k)
        budget = definition.token_budget if token_budget is None else non_negative_int("token_budget", token_budget)
        validity = validity_argument(as_of)
        if validity:
            definition = replace(definition, cache=None)
        cached = self._cached(definition, query, top_k, budget)
        if cached is not None and cached.result is not None:
            return cached.result
        riders = [CacheRead(self.space, self._cache_key(definition, query, top_k, budget))] if (
            definition.cache is not None and cached is None) else []
        _, gathered, trail = self._chosen(definition, query, top_k, riders, validity)
        if gathered.riders:
            cached = gathered.riders[0]
            if cached is not None and cached.result is not None:
                hit: FrameResult = cached.result
                return hit
        result = self._render(definition, trail, budget)
        write = None
        if definition.cache is not None and cached is not None:
            write = CacheWrite(self._cache_key(definition, query, top_k, budget), encode_result(result, cached.version),
                               definition.cache.ttl_seconds)
        returned = [b.id for b in result.blocks] if reinforce else []
        edges = apply_effects(self.client, self.space, returned, gathered.now_hours, gathered.linked_among(returned),
                              write)
        return replace(result, edges_reinforced=edges)

    def _cache_key(self, definition: FrameDefinition, query: str | None, top_k: int, budget: int) -> str:
        return cache_key(self.space, definition, query, top_k, budget, self.oversize)

    def _cached(self, definition: FrameDefinition, query: str | None, top_k: int, budget: int) -> CachedFrame | None:
        """A cacheable frame with a query reads its cache first, alone (no query embedded on a hit);
        without a query the read rides with the retrieval's first round trip (None here)."""
        if definition.cache is None or query is None:
            return None
        read: CachedFrame = run_search(self.client, CacheRead(self.space, self._cache_key(definition, query, top_k, budget)))
        return read

    # -- the pipeline ----------------------------------------------------------------------------
    def _chosen(
        self, definition: FrameDefinition, query: str | None, top_k: int, riders: Sequence[Any] = (), as_of: str = "",
    ) -> tuple[list[ScoredBlock], Gathered, FrameTrail]:
        """Stages 1-4, guarantees and suppression: (the chosen blocks, what stages 1-3 gathered:
        the active hours, the riders' answers, the edges among the candidates; what each stage
        kept for the explanation)."""
        asked = None if query is None else (query, Block.embedding.embed_texts([query], "query")[0])
        bound = score_bound(definition.weights, self.feedback_cap, top_k)
        gathered = gather(self.client, self.space, definition, self.clock(), top_k, asked, riders, as_of, bound)
        with_query = asked is not None and not gathered.no_seed
        weights = definition.weights if with_query else definition.weights.without_similarity()
        guaranteed = set(gathered.guaranteed)
        ranked = score_candidates(gathered.candidates, weights, gathered.now_hours, self.feedback_cap)
        kept = oversampled(ranked, guaranteed, top_k)
        survivors = suppress_contradictions(kept, gathered.pairs, guaranteed)
        chosen = select(survivors, guaranteed, top_k)
        blocks = [scored_block(s, gathered.fields_of(s.candidate.id)) for s in chosen
                  if gathered.has_content(s.candidate.id)]  # a block's hash gone: left out
        trail = FrameTrail(definition, weights, self.feedback_cap, ranked, kept, survivors, gathered.pairs,
                           guaranteed, blocks, top_k, self.space, superseded=gathered.superseded)
        return blocks, gathered, trail

    def _render(self, definition: FrameDefinition, trail: FrameTrail, budget: int) -> FrameResult:
        """Pack the blocks' lines stop-at-first-miss (guaranteed first; an oversized block as
        ``oversize`` says) into ``budget`` tokens of text, headings included, and compose."""
        blocks = trail.blocks
        fitted = fit_blocks(blocks, definition.template, budget, self.count_tokens, self.oversize)
        chosen = set(fitted.selected)
        return FrameResult(
            text=fitted.text, blocks=[blocks[i] for i in fitted.selected], frame_name=definition.name,
            token_count=fitted.token_count, dropped=[blocks[i] for i in range(len(blocks)) if i not in chosen],
            oversize=fitted.oversize.report([block.id for block in blocks]), agent_id=self.agent_id,
            trail=trail.packed(fitted, budget),
        )

    # -- helpers ---------------------------------------------------------------------------------
    def _graph(self) -> Graph:
        return Block.edges.graph(agent_id=self.agent_id)

    def _check_id(self, block_id: Any) -> None:
        if not isinstance(block_id, str) or not block_id:
            raise ValidationError(f"a block id is a non-empty str, got {block_id!r}")

    def _check_pair(self, a: Any, b: Any) -> None:
        self._check_id(a)
        self._check_id(b)
        if a == b:
            raise ValidationError(f"a block cannot be paired with itself ({a!r})")

    def _tags_of(self, a: str, b: str) -> list[str]:
        """The tags of both blocks (one round trip); RecordNotFound when either is not stored."""
        self._check_pair(a, b)
        found = self.store.entries([a, b], "tags")
        missing = [block for block, tags in zip((a, b), found) if tags is None]
        if missing:
            raise RecordNotFound(f"no block {missing[0]!r} for agent {self.agent_id!r}")
        decode = Block._meta.fields["tags"].decode
        return [tag for raw in found for tag in decode(raw)]

    def _self_changed(self) -> None:
        """Move the self version: cached frames built before are stale in every process."""
        self.store.self_changed()

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    alearn = async_variant(learn)
    aconnect = async_variant(connect)
    acontradict = async_variant(contradict)
    aarchive = async_variant(archive)
    aupdate_confidence = async_variant(update_confidence)
    atouch = async_variant(touch)
    arevive = async_variant(revive)
    aget = async_variant(get)
    aduplicates = async_variant(duplicates)
    abegin_session = async_variant(begin_session)
    aend_session = async_variant(end_session)
    aactive_hours = async_variant(active_hours)
    aregister_frame = async_variant(register_frame)
    aframe_definition = async_variant(frame_definition)
    arecall = async_variant(recall)
    aframe = async_variant(frame)


def _is_self(tags: Sequence[str]) -> bool:
    return any(tag.startswith(SELF_PREFIX) for tag in tags)


def _checked_query(query: Any) -> str | None:
    """None or a str (blank text counts as no query)."""
    if query is None:
        return None
    if not isinstance(query, str):
        raise ValidationError(f"a query is a str or None, got {query!r}")
    return query if query.strip() else None
