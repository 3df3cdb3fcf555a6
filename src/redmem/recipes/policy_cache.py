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
Constants and rules as in popoto's PolicyCache recipe; the
chi-square survival function is computed here from the regularized gamma function.

Everything lives in the agent's partition (one hash tag, one cluster slot): PolicyEvent and
PolicyEntry records, the event stream, and the per-state Q indexes of kind ``pq`` (every
action's Q) and ``pc`` (crystallised actions' Q), so ``best_action`` is one ZREVRANGE.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from ..fields.cyclic import Cycle, CyclicDecayField, TemporalPeriod
from ..model.base import Model
from ..model.batch import SaveBatch
from ..model.dbkey import DbKey
from ..model.fields import BooleanField, FloatField, IntField, ListField, StringField
from ..model.indexed import AutoKeyField, KeyField, SortedField
from ..model.loading import decode_stored
from ..model.persistence import queue_new_record, queue_record_write
from ..observation.consumer import StreamConsumer
from ..observation.events import CREATE, EventStreamMixin, StreamEvent
from ..store.connection import server_errors
from ..store.errors import ValidationError, WriteConflict
from ..store.validation import timestamp
from ..store.watch import MAX_ATTEMPTS

__all__ = [
    "PolicyCache", "PolicyRules", "PolicyEvent", "PolicyEntry", "state_fingerprint",
    "wilson_lower_bound", "td_update", "chi_square_statistic", "chi_square_sf",
    "regularized_gamma_q", "timing_peak", "fold_event", "CONSUMER_GROUP",
]

CONSUMER_GROUP = "policy-cache"
#: Hash entry set on a PolicyEvent once it is folded into its entry (dotted: no field collides).
APPLIED_ENTRY = "policy.applied"
SECONDS_PER_HOUR, SECONDS_PER_DAY = 3600.0, 86400.0
#: 1970-01-01 (day 0) was a Thursday: weekday 3 counting Monday as 0.
EPOCH_WEEKDAY = 3
#: Candidate cycles: a daily one centred in each UTC hour, a weekly one at noon of each weekday.
DAILY_PHASES = tuple(h * SECONDS_PER_HOUR + SECONDS_PER_HOUR / 2 for h in range(24))
WEEKLY_PHASES = tuple(((d - EPOCH_WEEKDAY) % 7 + 0.5) * SECONDS_PER_DAY for d in range(7))
CYCLE_AMPLITUDE = 0.5


# -- formulas --------------------------------------------------------------------------------------
def state_fingerprint(state: Mapping[str, Any] | Iterable[Any] | str) -> str:
    """SHA-256 (hex) of the state's features, sorted: the same state gives the same fingerprint.

    A mapping's features are ``"name=<JSON value>"``; any other iterable's items are features
    (as str); a str is one feature.
    """
    return hashlib.sha256(json.dumps(state_features(state), ensure_ascii=False).encode()).hexdigest()


def state_features(state: Mapping[str, Any] | Iterable[Any] | str) -> list[str]:
    """The sorted, distinct feature strings :func:`state_fingerprint` hashes."""
    if isinstance(state, Mapping):
        items = [f"{k}={json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)}" for k, v in state.items()]
    elif isinstance(state, str):
        items = [state]
    elif isinstance(state, Iterable):
        items = [str(feature) for feature in state]
    else:
        raise ValidationError(f"a state is a mapping, an iterable of features or a str, not {state!r}")
    return sorted(set(items))


def wilson_lower_bound(successes: int, n: int, z: float = 1.96) -> float:
    """Lower bound of the Wilson score interval of a success rate (Wilson 1927), 0 when n = 0:

    ``(p + z^2/2n - z * sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``p = successes / n``.
    """
    if n <= 0:
        return 0.0
    p = successes / n
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (p + z * z / (2 * n) - spread) / (1 + z * z / n)


def td_update(q: float, reward: float, next_max: float, alpha: float = 0.1, gamma: float = 0.95) -> float:
    """One temporal-difference (Q-learning) step: ``q + alpha * (reward + gamma * next_max - q)``."""
    return q + alpha * (reward + gamma * next_max - q)


def chi_square_statistic(counts: Sequence[float]) -> float:
    """Pearson's goodness-of-fit statistic against uniform: ``sum((O - E)^2 / E)``, E = total / bins."""
    total = sum(counts)
    if total <= 0:
        return 0.0
    expected = total / len(counts)
    return sum((observed - expected) ** 2 for observed in counts) / expected


def regularized_gamma_q(a: float, x: float) -> float:
    """``Q(a, x) = Gamma(a, x) / Gamma(a)``, the regularized upper incomplete gamma function.

    Series ``P(a, x) = x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))`` for x < a + 1, else
    the continued fraction of ``Gamma(a, x)`` evaluated by the modified Lentz method (DLMF 8.7.1,
    8.9.2; Numerical Recipes 6.2).
    """
    if x <= 0:
        return 1.0
    scale = math.exp(a * math.log(x) - x - math.lgamma(a))
    if x < a + 1:
        term = total = 1.0 / a
        denominator = a
        while abs(term) > abs(total) * 1e-16:
            denominator += 1
            term *= x / denominator
            total += term
        return max(0.0, 1.0 - scale * total)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    fraction = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = 1 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        fraction *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return scale * fraction


def chi_square_sf(statistic: float, df: int) -> float:
    """P(X >= statistic) for a chi-square variable with ``df`` degrees of freedom: ``Q(df/2, x/2)``."""
    return regularized_gamma_q(df / 2, statistic / 2)


def timing_peak(counts: Sequence[int], p_value: float = 0.05, min_events: int = 10) -> int | None:
    """The busiest bin when the counts reject uniform at ``p_value`` (chi-square), else None.

    Needs at least ``min_events`` events; ties go to the lowest bin.
    """
    if sum(counts) < min_events:
        return None
    if chi_square_sf(chi_square_statistic(counts), len(counts) - 1) >= p_value:
        return None
    return max(range(len(counts)), key=lambda i: (counts[i], -i))


# -- models ----------------------------------------------------------------------------------------
TIMING_CYCLES = [Cycle(float(TemporalPeriod.DAILY), CYCLE_AMPLITUDE, p) for p in DAILY_PHASES] + [
    Cycle(float(TemporalPeriod.WEEKLY), CYCLE_AMPLITUDE, p) for p in WEEKLY_PHASES
]


class PolicyEvent(EventStreamMixin, Model):
    """One recorded (state, action, reward) of an agent; its save appends a ``create`` stream entry."""

    event_id = AutoKeyField()
    agent_id = KeyField(partition_by="agent_id")
    fingerprint = StringField(null=False)
    features = ListField()
    action = StringField(null=False)
    reward = FloatField(null=False)
    next_fingerprint = StringField()
    at = SortedField(float, null=False)


class PolicyEntry(Model):
    """What an agent learnt about one action in one state (see the module docs).

    ``timing`` scores ``wilson + sum(learned amplitude * cos(...))`` over 31 candidate cycles
    (no decay): a cycle's learned amplitude is 0 until timing discovery switches it on at 0.5.
    """

    agent_id = KeyField(partition_by="agent_id")
    fingerprint = KeyField()
    action = KeyField()
    features = ListField()
    events = IntField(default=0)
    successes = IntField(default=0)
    q = FloatField(default=0.0)
    wilson = FloatField(default=0.0)
    crystallised = BooleanField(default=False)
    hours = ListField(default=[0] * 24)
    weekdays = ListField(default=[0] * 7)
    cycles = ListField(default=[])
    last_event_at = FloatField()
    timing = CyclicDecayField(decay_rate=0.0, base_score_field="wilson", cycles=TIMING_CYCLES)


@dataclass(frozen=True)
class PolicyRules:
    """The learning constants: TD step and discount, crystallisation rule, timing test."""

    alpha: float = 0.1
    gamma: float = 0.95
    min_events: int = 3  # crystallised only with more events than this
    wilson_threshold: float = 0.6
    z: float = 1.96
    timing_p_value: float = 0.05
    timing_min_events: int = 10


def fold_event(old: Mapping[str, Any] | None, event: Mapping[str, Any], next_max: float,
               rules: PolicyRules = PolicyRules()) -> dict[str, Any]:
    """The entry's new field values after one event (``old`` None: a new entry). Pure."""
    base = dict(old) if old else {"events": 0, "successes": 0, "q": 0.0, "hours": [0] * 24,
                                  "weekdays": [0] * 7, "features": event["features"]}
    at = event["at"]
    hours, weekdays = list(base["hours"]), list(base["weekdays"])
    hours[int(at // SECONDS_PER_HOUR) % 24] += 1
    weekdays[(int(at // SECONDS_PER_DAY) + EPOCH_WEEKDAY) % 7] += 1
    events, successes = base["events"] + 1, base["successes"] + (event["reward"] > 0)
    wilson = wilson_lower_bound(successes, events, rules.z)
    peaks = (timing_peak(hours, rules.timing_p_value, rules.timing_min_events),
             timing_peak(weekdays, rules.timing_p_value, rules.timing_min_events))
    cycles = [TIMING_CYCLES[i].key for i in (peaks[0], None if peaks[1] is None else 24 + peaks[1]) if i is not None]
    return {
        "agent_id": event["agent_id"], "fingerprint": event["fingerprint"], "action": event["action"],
        "features": base["features"], "events": events, "successes": successes,
        "q": td_update(base["q"], event["reward"], next_max, rules.alpha, rules.gamma),
        "wilson": wilson, "crystallised": events > rules.min_events and wilson > rules.wilson_threshold,
        "hours": hours, "weekdays": weekdays, "cycles": cycles, "last_event_at": at,
    }


# -- the recipe ------------------------------------------------------------------------------------
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
        with server_errors(client), client.pipeline(transaction=True) as pipe:
            for _ in range(MAX_ATTEMPTS):
                try:
                    return self._apply(pipe, client, event_key)
                except WatchError:
                    continue
        raise WriteConflict(f"gave up folding {event_key} after {MAX_ATTEMPTS} conflicting writes")

    def _apply(self, pipe: Any, client: Any, event_key: str) -> bool:
        pipe.watch(event_key)
        raw = pipe.hgetall(event_key)
        if not raw or APPLIED_ENTRY.encode() in raw:
            pipe.unwatch()
            return False
        event = decode_stored(PolicyEvent, raw)
        entry_key = DbKey(self.entry_space, PolicyEntry._meta.record_id(event))
        next_index = self._q_key("pq", event["next_fingerprint"]) if event["next_fingerprint"] else None
        pipe.watch(entry_key.redis_key, *([next_index] if next_index else []))
        stored = pipe.hgetall(entry_key.redis_key)
        best_next = pipe.zrevrange(next_index, 0, 0, withscores=True) if next_index else []
        old = decode_stored(PolicyEntry, stored) if stored else None
        entry = PolicyEntry(**fold_event(old, event, best_next[0][1] if best_next else 0.0, self.rules))
        pipe.multi()
        self._queue_entry(pipe, client, entry, old)
        pipe.hset(event_key, APPLIED_ENTRY, repr(time.time()))
        pipe.execute()
        return True

    def _queue_entry(self, pipe: Any, client: Any, entry: PolicyEntry, old: dict[str, Any] | None) -> None:
        """Queue the entry's record write, its Q indexes and the cycles switched on or off."""
        if old is None:
            batch = queue_new_record(pipe, client, entry)
        else:
            for field in entry._meta.fields.values():
                field.before_save(entry, False)
            key = entry.db_key
            batch = SaveBatch(pipe, client, key.keyspace, key.record_id, entry, old)
            queue_record_write(batch, entry.validated_values())
            entry._saved_key = key
        pipe.zadd(self._q_key("pq", entry.fingerprint), {entry.action: entry.q})
        crystallised = self._q_key("pc", entry.fingerprint)
        if entry.crystallised:
            pipe.zadd(crystallised, {entry.action: entry.q})
        else:
            pipe.zrem(crystallised, entry.action)
        self._queue_cycles(batch, set(entry.cycles), set(old["cycles"]) if old else None)

    @staticmethod
    def _queue_cycles(batch: SaveBatch, now_on: set[str], was_on: set[str] | None) -> None:
        """Learned amplitude 0.5 for newly discovered cycles, 0 for the others that changed.

        A new entry's save set every amplitude to 0.5, so all but ``now_on`` go to 0; a cycle
        that stays on keeps what feedback has learnt.
        """
        keys = PolicyEntry.timing.keys_in(batch.keyspace)
        for cycle in PolicyEntry.timing.cycles:
            on = cycle.key in now_on
            changed = not on if was_on is None else on != (cycle.key in was_on)
            if changed:
                batch.pipe.zadd(keys.amplitude(cycle.key), {batch.record_id: cycle.amplitude if on else 0.0})

    # -- reading ----------------------------------------------------------------------------------
    def _q_key(self, kind: str, fingerprint: str) -> str:
        return self.entry_space.value_key(kind, "q", fingerprint)

    def best_action(self, state: Any, *, crystallised_only: bool = True) -> str | None:
        """The crystallised action with the highest Q in ``state`` (any action when not
        ``crystallised_only``), None when there is none: one ZREVRANGE."""
        key = self._q_key("pc" if crystallised_only else "pq", state_fingerprint(state))
        client = PolicyEntry._meta.client
        with server_errors(client):
            top = client.zrevrange(key, 0, 0)
        return top[0].decode() if top else None

    def entries(self, state: Any) -> list[PolicyEntry]:
        """Every action learnt in ``state``, highest Q first (ties by action)."""
        found = PolicyEntry.query.filter(agent_id=self.agent_id, fingerprint=state_fingerprint(state)).all()
        return sorted(found, key=lambda e: (-e.q, e.action))

    def entry(self, state: Any, action: str) -> PolicyEntry | None:
        """The entry of (state, action), or None before its first folded event."""
        entry: PolicyEntry | None = PolicyEntry.query.get(agent_id=self.agent_id, fingerprint=state_fingerprint(state), action=action)
        return entry

    def due_actions(self, as_of: float | None = None, threshold: float = 1.0, limit: int | None = None) -> list[PolicyEntry]:
        """Entries whose timing score at ``as_of`` is >= ``threshold``, best first (``_cyclic_score``).

        The score is ``wilson`` plus the discovered cycles: with the default 1.0 a crystallised
        pair is due around its peak hour (and weekday), an unproven one only at a double peak.
        """
        query = PolicyEntry.query.filter(agent_id=self.agent_id).no_track()
        due: list[PolicyEntry] = query.above_cyclic_threshold(threshold, as_of=as_of, limit=limit)
        return due
