"""Exactly-once writes under timeouts and reconnects: operation keys and the unknown outcome.

redis-py resends a command whose reply did not come (timeout, dropped connection), yet the
server may already have executed the first copy. Reads may run twice; writes must not. So every
write carries an operation key, ``<first key up to its hash tag>:op:<uuid>``, made once per call
and resent unchanged with every retry:

- a write script (:mod:`redmem.store._scripts`) runs wrapped in a guard: if its operation key
  exists it returns the reply stored there and writes nothing, else it runs and stores its reply
  under the key (``SET .. EX op_ttl``) in the same atomic script;
- a save or delete (a WATCH + MULTI/EXEC transaction) sets its operation key inside the EXEC; a
  transaction rebuilt after a lost connection first checks whether that key exists.

The key is declared in the script's KEYS and shares the hash tag (so the slot, the tenant's key
prefix and its ACL patterns) of the write's first key. The server keeps it :func:`op_ttl`
seconds: the call's retry window, ``(retries + 1) * socket_timeout + pauses`` (2 * 1.2 + 0.25 s
by default), plus :data:`LATE_COPY_MARGIN` for a copy held up in the server and for deciding.
When the retries run out the outcome is decided (:func:`settle`) before the caller hears of it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import uuid
import weakref
from collections.abc import Iterator
from typing import Any

import redis
from redis.exceptions import ClusterError

from ._connection import RETRIES, never_sent, reply_timeout, retry_pauses, server_address, server_errors
from ._errors import RedmemError, ServerUnavailable, WriteOutcomeUnknown
from ._keys import KeyKind

__all__ = [
    "LATE_COPY_MARGIN", "NO_TIMEOUT_OP_TTL", "op_ttl", "LOST_REPLY", "FENCED", "operation_key", "guarded_source", "settle", "unknown_outcome",
    "queued_operations", "write_pipeline",
]

#: Seconds an operation key outlives its write's retries: room for a copy held up in the server
#: (a stall, a busy script) to arrive while its key still guards it, and for ``settle()``.
LATE_COPY_MARGIN = 60
#: An operation key's lifetime when the client waits for replies without limit.
NO_TIMEOUT_OP_TTL = 300
#: Errors after which a sent command may or may not have run (redis-py's retries exhausted).
LOST_REPLY = (redis.ConnectionError, redis.TimeoutError, ClusterError)

#: What a decided-not-applied operation key holds (:func:`settle`): a msgpack string, so a guard
#: that finds it unpacks it like any stored reply (and writes nothing).
FENCED = b"\xadredmem:fenced"
#: 1 when KEYS[1] holds a reply (applied), else 0 after setting it to ARGV[1] for ARGV[2] s.
_FENCE = (
    "local held = redis.call('GET', KEYS[1]) "
    "if not held then redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) return 0 end "
    "if held == ARGV[1] then return 0 end return 1"
)
#: The operation keys queued on each open pipeline (see :func:`write_pipeline`).
_QUEUED: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()

_GUARD_HEAD = (
    "local op_key = table.remove(KEYS) "
    "local op_ttl = table.remove(ARGV) "
    "local done = redis.call('GET', op_key) "
    "if done then return cmsgpack.unpack(done) end "
    "local reply = (function()\n"
)
_GUARD_TAIL = (
    "\nend)() "
    "redis.call('SET', op_key, cmsgpack.pack(reply), 'EX', op_ttl) "
    "return reply\n"
)


def operation_key(first_key: str) -> str:
    """A new operation key in the slot and under the prefix of ``first_key``.

    ``rm:Note:{alice}:hash:7`` gives ``rm:Note:{alice}:op:<uuid4 hex>``; a key without a hash
    tag is made the tag (``{<key>}:op:<uuid>``) so the slot is still its slot. (A 22-character
    base64 id saves 10 bytes of name but no memory: ``MEMORY USAGE`` stays 152 B, allocator classes.)
    """
    start = first_key.find("{")
    end = first_key.find("}", start + 1) if start >= 0 else -1
    head = first_key[: end + 1] if end > start + 1 else "{" + first_key + "}"
    return f"{head}:{KeyKind.OPERATION}:{uuid.uuid4().hex}"


def guarded_source(source: bytes) -> bytes:
    """``source`` run at most once per operation key, passed as the last KEY, its lifetime in
    seconds (:func:`op_ttl`) as the last ARGV (both hidden from the script).

    The reply is stored with cmsgpack, not cjson: doubles, binary strings and nil come back exactly.
    """
    return _GUARD_HEAD.encode() + source + _GUARD_TAIL.encode()


def op_ttl(client: Any) -> int:
    """Seconds the server keeps an operation key written through ``client`` (or its pipeline):
    its retry window, ``(RETRIES + 1) * socket_timeout + pauses``, plus :data:`LATE_COPY_MARGIN`
    (63 s with the defaults); :data:`NO_TIMEOUT_OP_TTL` when replies are awaited without limit."""
    try:
        timeout = reply_timeout(client)
    except AttributeError:  # a pipeline of an asyncio cluster keeps its options elsewhere
        timeout = None
    if timeout is None:
        return NO_TIMEOUT_OP_TTL
    return math.ceil((RETRIES + 1) * timeout + retry_pauses() + LATE_COPY_MARGIN)


def settle(client: Any, operations: list[str]) -> dict[str, bool]:
    """Decide each unknown write for good: True, it was applied; False, it was not and never will be.

    An absent operation key is set to :data:`FENCED` (atomically, in one script), which every
    copy of the write still on its way then finds: a guarded script returns without writing, a
    save's EXEC aborts (it WATCHes its operation key). Deciding twice gives the same answer.
    """
    ttl = op_ttl(client)
    return {op: bool(client.eval(_FENCE, 1, op, FENCED, ttl)) for op in operations}


def _settled(client: Any, operations: list[str]) -> dict[str, bool]:
    """:func:`settle` with redis-py's errors typed."""
    with server_errors(client):
        return settle(client, operations)


@contextlib.contextmanager
def unknown_outcome(client: Any, operations: list[str], *, one_command: bool = True) -> Iterator[None]:
    """Turn a lost reply of a write carrying ``operations`` (op keys) into a decided outcome.

    The write never left (every attempt failed to connect; only trusted when ``one_command``: the
    operations rode on no earlier command): :class:`ServerUnavailable`. Otherwise the outcome is
    decided at once (:func:`settle`): none applied, ServerUnavailable (nothing ran, nothing will:
    retry freely); else, or when the server cannot be asked, :class:`WriteOutcomeUnknown`, whose
    ``applied`` holds the decision when one was made and whose ``settle()`` makes it later.
    ``operations`` is read when the error happens, so a caller may fill it inside the block.
    """
    try:
        yield
    except LOST_REPLY as exc:
        if not operations:
            raise
        address = server_address(client)
        if one_command and never_sent(exc):
            raise ServerUnavailable(address, f"{exc}; the write was not sent") from exc
        decide = functools.partial(_settled, client, list(operations))
        try:
            applied = decide()
        except RedmemError:
            raise WriteOutcomeUnknown(address, exc, operations, decide) from exc
        if not any(applied.values()):
            raise ServerUnavailable(address, f"{exc}; the write was not applied and never will be") from exc
        raise WriteOutcomeUnknown(address, exc, operations, decide, applied) from exc


def queued_operations(pipe: Any) -> list[str]:
    """The operation keys of the writes queued on ``pipe`` so far (filled by ``queue_script``)."""
    return _QUEUED.setdefault(pipe, [])


@contextlib.contextmanager
def write_pipeline(client: Any, transaction: bool = False) -> Iterator[Any]:
    """A pipeline whose guarded writes (:func:`queued_operations`) get a decided outcome when
    its reply is lost (:func:`unknown_outcome`), instead of a bare ServerUnavailable."""
    with client.pipeline(transaction=transaction) as pipe, unknown_outcome(client, queued_operations(pipe)):
        yield pipe
