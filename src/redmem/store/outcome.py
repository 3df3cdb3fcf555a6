"""Exactly-once writes under timeouts and reconnects: operation keys and the unknown outcome.

redis-py resends a command whose reply did not come (timeout, dropped connection), yet the
server may already have executed the first copy. Reads may run twice; writes must not. So every
write carries an operation key, ``<first key up to its hash tag>:op:<uuid>``, made once per call
and resent unchanged with every retry:

- a write script (:mod:`redmem.store.scripts`) runs wrapped in a guard: if its operation key
  exists it returns the reply stored there and writes nothing, else it runs and stores its reply
  under the key (``SET .. EX OP_TTL_SECONDS``) in the same atomic script;
- a save or delete (a WATCH + MULTI/EXEC transaction) sets its operation key inside the EXEC; a
  transaction rebuilt after a lost connection first checks whether that key exists.

The key is declared in the script's KEYS and shares the hash tag (so the slot, the tenant's key
prefix and its ACL patterns) of the write's first key. The server keeps it ``OP_TTL_SECONDS``:
the guarantee holds while one call's retries span less than that, i.e.
``(retries + 1) * socket_timeout + pauses < OP_TTL_SECONDS`` (defaults: 2 * 1.2 + 0.25 s).
When the retries run out the outcome cannot be known and :class:`WriteOutcomeUnknown` is raised:
each of its ``operations`` is a key that exists (for ``OP_TTL_SECONDS``) iff the write was applied.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

import redis
from redis.exceptions import ClusterError

from .connection import server_address
from .errors import WriteOutcomeUnknown
from .keys import KeyKind

__all__ = ["OP_TTL_SECONDS", "LOST_REPLY", "operation_key", "guarded_source", "unknown_outcome"]

#: How long the server remembers a write's operation key and reply, in seconds.
OP_TTL_SECONDS = 300
#: Errors after which a sent command may or may not have run (redis-py's retries exhausted).
LOST_REPLY = (redis.ConnectionError, redis.TimeoutError, ClusterError)

_GUARD_HEAD = (
    "local op_key = table.remove(KEYS) "
    "local done = redis.call('GET', op_key) "
    "if done then return cmsgpack.unpack(done) end "
    "local reply = (function()\n"
)
_GUARD_TAIL = (
    "\nend)() "
    "redis.call('SET', op_key, cmsgpack.pack(reply), 'EX', {ttl}) "
    "return reply\n"
)


def operation_key(first_key: str) -> str:
    """A new operation key in the slot and under the prefix of ``first_key``.

    ``rm:Note:{alice}:hash:7`` gives ``rm:Note:{alice}:op:<uuid4 hex>``; a key without a hash
    tag is made the tag (``{<key>}:op:<uuid>``) so the slot is still its slot.
    """
    start = first_key.find("{")
    end = first_key.find("}", start + 1) if start >= 0 else -1
    head = first_key[: end + 1] if end > start + 1 else "{" + first_key + "}"
    return f"{head}:{KeyKind.OPERATION}:{uuid.uuid4().hex}"


def guarded_source(source: bytes) -> bytes:
    """``source`` run at most once per operation key, passed as the last KEY (hidden from the script).

    The reply is stored with cmsgpack, not cjson: doubles, binary strings and nil come back exactly.
    """
    tail = _GUARD_TAIL.replace("{ttl}", str(OP_TTL_SECONDS))
    return _GUARD_HEAD.encode() + source + tail.encode()


@contextlib.contextmanager
def unknown_outcome(client: Any, operations: list[str]) -> Iterator[None]:
    """Turn a lost reply into :class:`WriteOutcomeUnknown` when ``operations`` (op keys) were sent.

    ``operations`` is read when the error happens, so a caller may fill it inside the block.
    """
    try:
        yield
    except LOST_REPLY as exc:
        if not operations:
            raise
        raise WriteOutcomeUnknown(server_address(client), exc, operations) from exc
