"""Run local work while the server executes a pipeline: send, work, then read the replies.

A first retrieval round sends its searches and, meanwhile, scores the in-process vector matrix:
the server and the client each use a core, so the round trip and the scan cost the longer of
the two instead of their sum. On a cluster (replies come from several nodes) the work runs
first and the pipeline as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from redis.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["execute_while"]

T = TypeVar("T")


def execute_while(client: Any, pipe: Any, work: Callable[[], T]) -> tuple[list[Any], T]:
    """``(pipe's replies, work())``, ``work`` running while the server executes the pipeline.

    Replies are parsed as ``pipe.execute()`` would; the first error reply is raised after all
    replies are read. A connection that fails before the work ran is retried the normal way.
    """
    if isinstance(client, RedisCluster) or not pipe.command_stack:
        result = work()
        return pipe.execute(), result
    commands = list(pipe.command_stack)
    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        try:
            connection.send_packed_command(connection.pack_commands([args for args, _ in commands]))
        except (RedisConnectionError, RedisTimeoutError):
            connection.disconnect()
            result = work()
            return pipe.execute(), result
        result = work()
        replies = []
        for args, options in commands:
            try:
                replies.append(client.parse_response(connection, args[0], **options))
            except ResponseError as error:
                replies.append(error)
    except BaseException:
        connection.disconnect()  # replies may be left unread on the socket
        raise
    finally:
        pool.release(connection)
    pipe.reset()
    for error in replies:
        if isinstance(error, ResponseError):
            raise error
    return replies, result
