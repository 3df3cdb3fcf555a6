"""The policy cache's records and how one event changes them.

A state is fingerprinted with SHA-256 over its sorted features. :class:`PolicyEvent` is one
recorded (state, action, reward); :class:`PolicyEntry` is what the agent learnt about one
action in one state; :func:`fold_event` computes an entry's new values after one event (pure).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...fields._cyclic import Cycle, CyclicDecayField, TemporalPeriod
from ...model._base import Model
from ...model._fields import BooleanField, FloatField, IntField, ListField, StringField
from ...model._indexed import AutoKeyField, KeyField, SortedField
from ...observation._events import EventStreamMixin
from ...store._errors import ValidationError
from ._stats import td_update, timing_peak, wilson_lower_bound

__all__ = ["PolicyEvent", "PolicyEntry", "PolicyRules", "fold_event", "state_fingerprint", "state_features"]

SECONDS_PER_HOUR, SECONDS_PER_DAY = 3600.0, 86400.0
#: 1970-01-01 (day 0) was a Thursday: weekday 3 counting Monday as 0.
EPOCH_WEEKDAY = 3
#: Candidate cycles: a daily one centred in each UTC hour, a weekly one at noon of each weekday.
DAILY_PHASES = tuple(h * SECONDS_PER_HOUR + SECONDS_PER_HOUR / 2 for h in range(24))
WEEKLY_PHASES = tuple(((d - EPOCH_WEEKDAY) % 7 + 0.5) * SECONDS_PER_DAY for d in range(7))
CYCLE_AMPLITUDE = 0.5


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
    """What an agent learnt about one action in one state (see :mod:`~redmem.recipes.policy._cache`).

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
