"""Cross-session macro aggregation (spec section 8.3): one agent's macro view over its sessions.

The spec leaves it open and warns that it "risks polluting session context with stale
relational weights from old conversations". redmem's choices:

- **Read-only, beside the session.** A session's macro context (:class:`~.engine.HSCAEngine`)
  stays its own session's; nothing of another session enters it. Cross-session answers come
  only from :class:`AgentMacro`, which writes nothing, so an old conversation is consulted,
  never merged in.
- **Namespacing.** A snapshot is named across sessions by ``(session_id, position)``, its global
  coordinates; its ``snapshot_id`` (a uuid4) and its chunks' ids are unique anyway. Sessions
  are ordered by the time of their first snapshot, from the agent's session list
  (``HSCAKeyKind.HSCA_SESSIONS``, written when a session stores its first snapshot).
- **Merge policy for domain summaries.** A session's *domain profile* is the mean of its
  snapshots' domain summaries, ``profile[d] = sums[d] / (10^4 * beats)`` from the session's
  domain sums (:mod:`.series`, kept in each snapshot's transaction: no snapshot is read). The
  agent's *domain mix* is the mean of the profiles weighted by each session's beats and, with a
  ``half_life``, by ``0.5 ** (age / half_life)`` of its last snapshot's age, so old sessions fade
  instead of weighing as much as today's::

      mix[d] = sum_s w_s * profile_s[d] / sum_s w_s,   w_s = beats_s * 0.5 ** (age_s / half_life)

- **Concepts and relevance across sessions.** "When did the agent first meet X" is the earliest
  (by the snapshot's time) of each session's first snapshot mentioning X (one indexed query per
  session); relevance across sessions ranks each session's beats as the session does
  (:func:`~.macro.relevance`), damped by the same age factor when a ``half_life`` is given.

Tenant isolation: every key read is under the agent's own partition (its session list) or one of
its sessions' (``(agent, session)``): another agent's sessions, even of the same names, are
never listed nor read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...store._aio import async_variant
from ...store._connection import server_errors
from ...store._errors import ValidationError
from ...store._validation import finite_number, positive_int
from ._interface import ContextSnapshot
from ._keys import HSCAKeyKind
from ._macro import dominant_domain, relevance
from ._series import BEATS_FIELD, SUM_SCALE, parse_entry
from ._store import SessionStore, SnapshotRecord, agent_sessions_key
from ._text import query_terms

__all__ = ["AgentMacro", "SessionProfile", "ConceptAppearance", "AgentBeat"]


@dataclass(frozen=True)
class SessionProfile:
    """One session of an agent: when it ran, how many beats, its mean domain summary.

    ``shifted``: its dominant domain differs from the previous session's (in :meth:`AgentMacro.sessions` order).
    """

    session_id: str
    started_at: float
    last_at: float
    beats: int
    profile: dict[str, float]
    dominant: str
    shifted: bool


@dataclass(frozen=True)
class ConceptAppearance:
    """Where a concept first appeared across an agent's sessions."""

    session_id: str
    position: int
    created_at: float


@dataclass(frozen=True)
class AgentBeat:
    """A snapshot of one of the agent's sessions found relevant to a query."""

    session_id: str
    snapshot: ContextSnapshot
    relevance: float


class AgentMacro:
    """The macro view of ``agent_id`` across its sessions (read-only; see the module docstring)."""

    def __init__(self, agent_id: str) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError("AgentMacro needs an agent_id, as a non-empty str")
        self.agent_id = agent_id

    def session_ids(self) -> list[str]:
        """The agent's sessions, oldest first (by their first snapshot's time, ties by id)."""
        client = SnapshotRecord._meta.client
        with server_errors(client):
            listed = client.zrange(agent_sessions_key(self.agent_id), 0, -1)
        return [m.decode() if isinstance(m, bytes) else str(m) for m in listed]

    def sessions(self) -> list[SessionProfile]:
        """Each session holding snapshots, oldest first, with its domain profile: the session
        list, then per session its domain sums and first and last series entries (one pipelined
        round trip for all sessions; no snapshot read)."""
        ids = self.session_ids()
        client = SnapshotRecord._meta.client
        spaces = [SessionStore(self.agent_id, s).space for s in ids]
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for space in spaces:
                pipe.hgetall(space.key(HSCAKeyKind.HSCA_DOMAIN_SUMS))
                pipe.zrange(space.key(HSCAKeyKind.HSCA_SERIES), 0, 0)
                pipe.zrange(space.key(HSCAKeyKind.HSCA_SERIES), -1, -1)
            replies = pipe.execute()
        profiles: list[SessionProfile] = []
        for i, session_id in enumerate(ids):
            sums, first, last = replies[3 * i : 3 * i + 3]
            profile = session_profile(sums)
            if profile is None or not first:
                continue
            beats, mean = profile
            dominant = dominant_domain(mean)
            shifted = bool(profiles) and profiles[-1].dominant != dominant
            profiles.append(SessionProfile(session_id, parse_entry(first[0]).created_at, parse_entry(last[0]).created_at,
                                           beats, mean, dominant, shifted))
        return profiles

    def domain_evolution(self) -> list[SessionProfile]:
        """The sessions in order with their dominant domains (``shifted`` where the agent moved)."""
        return self.sessions()

    def domain_mix(self, half_life: float | None = None, now: float | None = None) -> dict[str, float]:
        """The agent's domain mix over its sessions (module docstring); empty without snapshots.

        ``half_life`` in seconds (None: no fading); ``now`` the time ages are counted to.
        """
        fade = _fade(half_life, now)
        mix: dict[str, float] = {}
        total = 0.0
        for session in self.sessions():
            weight = session.beats * fade(session.last_at)
            total += weight
            for domain, value in session.profile.items():
                mix[domain] = mix.get(domain, 0.0) + weight * value
        return {d: v / total for d, v in mix.items()} if total > 0 else {}

    def first_appearance(self, concept: str) -> ConceptAppearance | None:
        """The earliest snapshot, across the agent's sessions, mentioning every term of
        ``concept`` (ties by session order); None if none does."""
        terms = query_terms("concept", concept)
        if not terms:
            return None
        found: ConceptAppearance | None = None
        for session_id in self.session_ids():
            store = SessionStore(self.agent_id, session_id)
            position = store.first_mention(terms)
            if position is None:
                continue
            entry = store.series(position, position)
            created = entry[0].created_at if entry else 0.0
            if found is None or created < found.created_at:
                found = ConceptAppearance(session_id, position, created)
        return found

    def relevant(self, query: str, limit: int = 5, *, half_life: float | None = None,
                 now: float | None = None) -> list[AgentBeat]:
        """The ``limit`` snapshots across the agent's sessions most relevant to ``query`` (each
        session's beats mentioning a query term, scored as in a session, times the age fade
        with a ``half_life``), best first; ties: older session first, then earlier position."""
        terms = query_terms("query", query)
        limit = positive_int("limit", limit)
        if not terms:
            return []
        fade = _fade(half_life, now)
        scored: list[tuple[float, int, int, AgentBeat]] = []
        for order, session_id in enumerate(self.session_ids()):
            for beat in SessionStore(self.agent_id, session_id).mentioning(terms):
                score = relevance(beat, terms) * fade(beat.snapshot.created_at)
                if score > 0:
                    position = beat.snapshot.conversation_position
                    scored.append((-score, order, position, AgentBeat(session_id, beat.snapshot, score)))
        scored.sort(key=lambda s: s[:3])
        return [s[3] for s in scored[:limit]]

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    asession_ids = async_variant(session_ids)
    asessions = async_variant(sessions)
    adomain_evolution = async_variant(domain_evolution)
    adomain_mix = async_variant(domain_mix)
    afirst_appearance = async_variant(first_appearance)
    arelevant = async_variant(relevant)


def session_profile(sums: dict[Any, Any]) -> tuple[int, dict[str, float]] | None:
    """A session's beat count and mean domain summary from its domain sums hash; None when empty."""
    decoded = {(k.decode() if isinstance(k, bytes) else str(k)): int(v) for k, v in sums.items()}
    beats = decoded.pop(BEATS_FIELD, 0)
    if beats <= 0:
        return None
    return beats, {d: units / (SUM_SCALE * beats) for d, units in decoded.items() if units}


def _fade(half_life: float | None, now: float | None) -> Any:
    if half_life is None:
        return lambda at: 1.0
    half = finite_number("half_life", half_life, low=0.0)
    if half <= 0:
        raise ValidationError("half_life must be positive")
    clock = time.time() if now is None else now
    return lambda at: 0.5 ** (max(clock - at, 0.0) / half)

