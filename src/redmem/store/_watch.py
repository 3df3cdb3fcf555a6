"""Optimistic transactions: WATCH what is read, then MULTI/EXEC; start over when a watched key changed.

redis-py's ``Redis.transaction`` starts over without end; here a write gives up after
``MAX_ATTEMPTS`` lost races and raises WriteConflict, so a hot key cannot stall its writer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from redis.cluster import ClusterPipeline
from redis.exceptions import ResponseError, WatchError

from ._aio import in_worker
from ._connection import server_errors
from ._errors import WriteConflict

__all__ = ["watched_transaction", "watch_and_read", "MAX_ATTEMPTS"]

#: How often a write is rebuilt after losing a WATCH race before giving up.
MAX_ATTEMPTS = 20

T = TypeVar("T")


def watched_transaction(client: Any, attempt: Callable[[Any], T], conflict: str) -> T:
    """``attempt(pipe)`` on one transaction pipeline, run again each time it loses a WATCH race.

    ``attempt`` WATCHes the keys it reads, then queues its writes after ``pipe.multi()`` and
    executes them; a WatchError (a watched key changed) starts it over. After ``MAX_ATTEMPTS``
    lost races raises WriteConflict(``conflict``). Connection failures raise the typed errors
    of :func:`~redmem.store._connection.server_errors`.
    """
    with server_errors(client), client.pipeline(transaction=True) as pipe:
        for _ in range(MAX_ATTEMPTS):
            try:
                return attempt(pipe)
            except WatchError:
                continue
    raise WriteConflict(conflict)


def watch_and_read(client: Any, pipe: Any, keys: list[str], reads: Callable[[Any], None]) -> list[Any]:
    """WATCH ``keys`` on transaction pipeline ``pipe`` and run the reads ``reads(pipeline)``
    queues, in one round trip; returns their replies (a reply that is an error is raised once
    every reply is read). A broken connection is retried as the client's WATCH would be (the
    WATCH is sent again with the reads). On a cluster pipeline, and under the asyncio API (the
    pipeline's connection is then a coroutine's), the WATCH goes first, then the reads (two
    round trips: redis-py sends a cluster WATCH alone).
    """
    reader = client.pipeline(transaction=False)
    reads(reader)
    if isinstance(pipe, ClusterPipeline) or in_worker():
        pipe.watch(*keys)
        replies: list[Any] = reader.execute()
        return replies
    commands = list(reader.command_stack)
    reader.reset()
    conn = pipe.connection or pipe.connection_pool.get_connection()
    pipe.connection = conn

    def send() -> list[Any]:
        conn.send_packed_command(conn.pack_commands([("WATCH", *keys), *(args for args, _ in commands)]))
        pipe.parse_response(conn, "WATCH")
        answers: list[Any] = []
        for args, options in commands:
            try:
                answers.append(pipe.parse_response(conn, args[0], **options))
            except ResponseError as error:
                answers.append(error)
        return answers

    answers: list[Any] = conn.retry.call_with_retry(send, lambda error: conn.disconnect())
    for answer in answers:
        if isinstance(answer, ResponseError):
            raise answer
    return answers
