"""The policy cache's own keys in Redis: the Q indexes of each state, and the folded-event mark.

Two sorted sets per state (``<space>:pq:q:<fingerprint>``, ``<space>:pc:q:<fingerprint>``) hold the
Q of every learnt action and of the crystallised ones; an event hash gets ``APPLIED_ENTRY`` once
it is folded into its entry. Every Redis call of the policy cache that is not a record's own
save goes through here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum, unique
from typing import Any

from ...store._connection import server_errors
from ...store._keys import KeySpace

__all__ = ["PolicyKeyKind", "QIndexes", "APPLIED_ENTRY", "watched_hash", "queue_applied"]

#: Hash entry set on a PolicyEvent once it is folded into its entry (dotted: no field collides).
APPLIED_ENTRY = "policy.applied"


@unique
class PolicyKeyKind(StrEnum):
    """The policy cache's kinds of key (the core kinds are :class:`~redmem.store._keys.KeyKind`;
    every owner's values are distinct, ``tests/unit/store/test_keys.py``)."""

    #: sorted set: the Q of every action of a state (``pq:q:<fingerprint>``)
    POLICY_Q = "pq"
    #: sorted set: the Q of the crystallised actions of a state (``pc:q:<fingerprint>``)
    POLICY_CRYSTALLISED = "pc"


@dataclass(frozen=True)
class QIndexes:
    """The Q indexes of one agent's entries (``space``: the entries' partition)."""

    space: KeySpace

    def key(self, fingerprint: str, *, crystallised: bool = False) -> str:
        kind = PolicyKeyKind.POLICY_CRYSTALLISED if crystallised else PolicyKeyKind.POLICY_Q
        return self.space.value_key(kind, "q", fingerprint)

    def best_q(self, pipe: Any, fingerprint: str) -> float:
        """The highest Q learnt in a state (0.0 for none), read on a watching pipeline."""
        best = pipe.zrevrange(self.key(fingerprint), 0, 0, withscores=True)
        return float(best[0][1]) if best else 0.0

    def queue(self, pipe: Any, fingerprint: str, action: str, q: float, crystallised: bool) -> None:
        """Queue an action's Q in both indexes (the crystallised one only while it is crystallised)."""
        pipe.zadd(self.key(fingerprint), {action: q})
        if crystallised:
            pipe.zadd(self.key(fingerprint, crystallised=True), {action: q})
        else:
            pipe.zrem(self.key(fingerprint, crystallised=True), action)

    def best_action(self, client: Any, fingerprint: str, crystallised_only: bool) -> str | None:
        """The action with the highest Q of a state, None for none: one ZREVRANGE."""
        with server_errors(client):
            top = client.zrevrange(self.key(fingerprint, crystallised=crystallised_only), 0, 0)
        return top[0].decode() if top else None


def watched_hash(pipe: Any, key: str, *also: str) -> dict[bytes, bytes]:
    """The hash at ``key``, read after WATCHing it and ``also`` on a transaction pipeline."""
    pipe.watch(key, *also)
    raw: dict[bytes, bytes] = pipe.hgetall(key)
    return raw


def queue_applied(pipe: Any, event_key: str) -> None:
    """Queue the mark that the event at ``event_key`` is folded."""
    pipe.hset(event_key, APPLIED_ENTRY, repr(time.time()))
