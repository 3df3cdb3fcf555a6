"""PolicyCache: an agent learns which action works in which state, and when, from recorded outcomes.

``record(state, action, reward, next_state)`` saves a :class:`PolicyEvent` (an
EventStreamMixin model: the save appends a ``create`` entry to the agent's stream in the same
MULTI/EXEC). ``crystallise()`` consumes that stream with a :class:`StreamConsumer` (consumer
group ``policy-cache``; at-least-once, so several workers can share it and a crashed worker's
entries are claimed again) and folds each event into the :class:`PolicyEntry` of its
(fingerprint, action) pair, at most once (the event hash is marked applied in the same
transaction as the fold):

- ``events += 1``; a reward > 0 is a success;
- TD update ``Q += alpha * (r + gamma * maxQ' - Q)`` (alpha 0.1, gamma 0.95; ``maxQ'`` is the
  best Q of the next state's actions, 0 for a terminal event);
- Wilson lower bound of the success rate (z 1.96); the pair is **crystallised** while
  ``events > 3`` and the bound is > 0.6 (8 successes out of 8 give 0.676); ``best_action``
  serves crystallised pairs;
- timing discovery: a chi-square goodness-of-fit test of the pair's event hours (24 UTC bins)
  and weekdays (7 bins) against uniform; when p < 0.05 a daily (weekly) cycle of amplitude 0.5
  peaking in the busiest bin is switched on in the entry's CyclicDecayField, and switched off
  when the test stops rejecting.

States are fingerprinted with SHA-256 over their sorted features (:func:`state_fingerprint`).
Constants and rules as in popoto's PolicyCache recipe; the chi-square survival function is
computed from the regularized gamma function. The formulas are in :mod:`.policy_stats`, the
records and the fold of one event in :mod:`.policy_models`; this module is the engine that
consumes the stream and writes each fold in one WATCH/MULTI/EXEC.

Everything lives in the agent's partition (one hash tag, one cluster slot): PolicyEvent and
PolicyEntry records, the event stream, and the per-state Q indexes of kind ``pq`` (every
action's Q) and ``pc`` (crystallised actions' Q), so ``best_action`` is one ZREVRANGE.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from ...model._batch import SaveBatch
from ...model._dbkey import DbKey
from ...model._hits import HitList
from ...model._loading import decode_stored
from ...model._persistence import held_entries, queue_new_record, queue_record_write
from ...observation._consumer import StreamConsumer
from ...observation._events import CREATE, StreamEvent
from ...store._aio import async_variant
from ...store._errors import ValidationError
from ...store._validation import timestamp
from ...store._watch import MAX_ATTEMPTS, watched_transaction
from ._models import PolicyEntry, PolicyEvent, PolicyRules, fold_event, state_features, state_fingerprint
from ._storage import APPLIED_ENTRY, QIndexes, queue_applied, watched_hash

__all__ = ["PolicyCache", "CONSUMER_GROUP"]


CONSUMER_GROUP = "policy-cache"


class PolicyCache:
    """Learned action selection for one agent (see the module docs).

    Args:
        agent_id: the agent (the partition of every record and key).
        rules: the learning constants.
        consumer: this process's name in the ``policy-cache`` consumer group (default host-pid).
    """

    def __init__(self, agent_id: str, *, rules: PolicyRules = PolicyRules(), consumer: str | None = None) -> None:
        if not isinstance(agent_id, str) or not agent_id:
            raise ValidationError(f"PolicyCache needs an agent_id (a non-empty str), got {agent_id!r}")
        self.agent_id, self.rules = agent_id, rules
        self.entry_space = PolicyEntry._meta.keyspace((agent_id,))
        self.q_indexes = QIndexes(self.entry_space)
        self.consumer = StreamConsumer(
            PolicyEvent.event_stream_key(agent_id=agent_id), CONSUMER_GROUP,
            consumer or f"{socket.gethostname()}-{os.getpid()}", client=PolicyEvent._meta.client, block_ms=0,
        )
        self._applied = 0

    # -- writing ----------------------------------------------------------------------------------
    def record(self, state: Any, action: str, reward: float, next_state: Any = None,
               at: float | None = None) -> PolicyEvent:
        """Save one event (one MULTI/EXEC with its stream entry); ``next_state`` None: terminal."""
        if not isinstance(action, str) or not action:
            raise ValidationError(f"an action is a non-empty str, not {action!r}")
        return PolicyEvent.create(
            agent_id=self.agent_id, fingerprint=state_fingerprint(state), features=state_features(state),
            action=action, reward=reward, at=timestamp("at", at),
            next_fingerprint=None if next_state is None else state_fingerprint(next_state),
        )

    def crystallise(self) -> int:
        """Fold every event of the stream not handled by the group yet; returns how many were folded.

        Entries left pending by a crashed consumer are claimed after ``claim_idle_ms`` (60 s).
        """
        before = self._applied
        self.consumer.handle(self.consumer.claim_stale(), self._handle)
        while events := self.consumer.read(block_ms=0):
            self.consumer.handle(events, self._handle)
        return self._applied - before

    def run(self, stop: threading.Event, block_ms: int = 1000) -> int:
        """Fold events as they arrive until ``stop`` is set (a worker loop); returns how many."""
        before = self._applied
        while not stop.is_set():
            self.consumer.process_once(self._handle, block_ms=block_ms)
        return self._applied - before

    def _handle(self, event: StreamEvent) -> None:
        if event.op == CREATE and event.model == PolicyEvent._meta.name:
            self._applied += self.apply_event(event.key)

    def apply_event(self, event_key: str) -> bool:
        """Fold the PolicyEvent stored at ``event_key`` into its entry, once: one WATCH/MULTI/EXEC.

        Returns False when it was folded already or no longer exists.
        """
        client = PolicyEvent._meta.client
        conflict = f"gave up folding {event_key} after {MAX_ATTEMPTS} conflicting writes"
        return watched_transaction(client, lambda pipe: self._apply(pipe, client, event_key), conflict)

    def _apply(self, pipe: Any, client: Any, event_key: str) -> bool:
        event_at = DbKey.parse(event_key)
        raw = watched_hash(pipe, event_key)
        if not raw or event_at is None or APPLIED_ENTRY.encode() in raw:
            pipe.unwatch()
            return False
        event = decode_stored(PolicyEvent, event_at, raw)
        entry_key = DbKey(self.entry_space, PolicyEntry._meta.record_id(event))
        following = event["next_fingerprint"]
        stored = watched_hash(pipe, entry_key.redis_key, *([self.q_indexes.key(following)] if following else []))
        best_next = self.q_indexes.best_q(pipe, following) if following else 0.0
        old = decode_stored(PolicyEntry, entry_key, stored) if stored else None
        entry = PolicyEntry(**fold_event(old, event, best_next, self.rules))
        pipe.multi()
        self._queue_entry(pipe, client, entry, old, held_entries(stored))
        queue_applied(pipe, event_key)
        pipe.execute()
        return True

    def _queue_entry(self, pipe: Any, client: Any, entry: PolicyEntry, old: dict[str, Any] | None,
                     held: frozenset[str] | None) -> None:
        """Queue the entry's record write, its Q indexes and the cycles switched on or off
        (``old``, ``held``: the stored entry's values and hash entry names)."""
        if old is None:
            batch = queue_new_record(pipe, client, entry)
        else:
            for field in entry._meta.fields.values():
                field.before_save(entry, False)
            key = entry.db_key
            batch = SaveBatch(pipe, client, key.keyspace, key.record_id, entry, old, held=held)
            queue_record_write(batch, entry.validated_values())
            entry._saved_key = key
        self.q_indexes.queue(pipe, entry.fingerprint, entry.action, entry.q, entry.crystallised)
        self._queue_cycles(batch, set(entry.cycles), set(old["cycles"]) if old else None)

    @staticmethod
    def _queue_cycles(batch: SaveBatch, now_on: set[str], was_on: set[str] | None) -> None:
        """Learned amplitude 0.5 for newly discovered cycles, 0 for the others that changed.

        A new entry's save set every amplitude to 0.5, so all but ``now_on`` go to 0; a cycle
        that stays on keeps what feedback has learnt.
        """
        PolicyEntry.timing.queue_amplitudes(batch, {
            cycle.key: cycle.amplitude if cycle.key in now_on else 0.0
            for cycle in PolicyEntry.timing.cycles
            if (cycle.key not in now_on if was_on is None else (cycle.key in now_on) != (cycle.key in was_on))
        })

    # -- reading ----------------------------------------------------------------------------------
    def best_action(self, state: Any, *, crystallised_only: bool = True) -> str | None:
        """The crystallised action with the highest Q in ``state`` (any action when not
        ``crystallised_only``), None when there is none: one ZREVRANGE."""
        return self.q_indexes.best_action(PolicyEntry._meta.client, state_fingerprint(state), crystallised_only)

    def entries(self, state: Any) -> list[PolicyEntry]:
        """Every action learnt in ``state``, highest Q first (ties by action)."""
        found = PolicyEntry.query.filter(agent_id=self.agent_id, fingerprint=state_fingerprint(state)).all()
        return sorted(found, key=lambda e: (-e.q, e.action))

    def entry(self, state: Any, action: str) -> PolicyEntry | None:
        """The entry of (state, action), or None before its first folded event."""
        entry: PolicyEntry | None = PolicyEntry.query.get(agent_id=self.agent_id, fingerprint=state_fingerprint(state), action=action)
        return entry

    def due_actions(
        self, as_of: float | None = None, threshold: float = 1.0, limit: int | None = None,
    ) -> HitList[PolicyEntry]:
        """Entries whose timing score at ``as_of`` is >= ``threshold``, best first, as hits of signal
        ``cyclic`` (each entry also carrying its score as ``_cyclic_score``).

        The score is ``wilson`` plus the discovered cycles: with the default 1.0 a crystallised
        pair is due around its peak hour (and weekday), an unproven one only at a double peak.
        """
        query = PolicyEntry.query.filter(agent_id=self.agent_id).no_track()
        due: HitList[PolicyEntry] = query.above_cyclic_threshold(threshold, as_of=as_of, limit=limit)
        return due

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    arecord = async_variant(record)
    acrystallise = async_variant(crystallise)
    aapply_event = async_variant(apply_event)
    abest_action = async_variant(best_action)
    aentries = async_variant(entries)
    aentry = async_variant(entry)
    adue_actions = async_variant(due_actions)
