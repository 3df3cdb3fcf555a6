"""Optimistic transactions: WATCH what is read, then MULTI/EXEC; start over when a watched key changed.

redis-py's ``Redis.transaction`` starts over without end; here a write gives up after
``MAX_ATTEMPTS`` lost races and raises WriteConflict, so a hot key cannot stall its writer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from redis.exceptions import WatchError

from .connection import server_errors
from .errors import WriteConflict

__all__ = ["watched_transaction", "MAX_ATTEMPTS"]

#: How often a write is rebuilt after losing a WATCH race before giving up.
MAX_ATTEMPTS = 20

T = TypeVar("T")


def watched_transaction(client: Any, attempt: Callable[[Any], T], conflict: str) -> T:
    """``attempt(pipe)`` on one transaction pipeline, run again each time it loses a WATCH race.

    ``attempt`` WATCHes the keys it reads, then queues its writes after ``pipe.multi()`` and
    executes them; a WatchError (a watched key changed) starts it over. After ``MAX_ATTEMPTS``
    lost races raises WriteConflict(``conflict``). Connection failures raise the typed errors
    of :func:`~redmem.store.connection.server_errors`.
    """
    with server_errors(client), client.pipeline(transaction=True) as pipe:
        for _ in range(MAX_ATTEMPTS):
            try:
                return attempt(pipe)
            except WatchError:
                continue
    raise WriteConflict(conflict)
