"""Which :class:`RedmemError` a redis-py error stands for, read from its class and the server's words.

Redis and Valkey word some replies differently (an ACL refusal inside a script is "The user
executing the script can't ..." on Redis, "ACL failure in script: ..." on Valkey), so each
rule lists every wording seen; tests/integration/store/test_error_map.py holds both servers' exact messages.
"""

from __future__ import annotations

import re

import redis
from redis.exceptions import ClusterError, RedisClusterException

from ._errors import (
    ArgumentTypeError,
    ConfigurationError,
    PermissionDenied,
    RedmemError,
    ServerError,
    ServerUnavailable,
    WriteConflict,
    WriteRefused,
)

__all__ = ["REDIS_ERRORS", "typed_error", "server_reply"]

#: What a redis-py call can raise: its own errors, and RedisCluster's setup error (not a RedisError).
REDIS_ERRORS = (redis.exceptions.RedisError, RedisClusterException)
#: How each server words an ACL refusal of a command that a Lua script runs (not a NOPERM error).
SCRIPT_REFUSED = ("The user executing the script can't", "ACL failure in script:")
#: Replies of a server that cannot serve now and ran nothing (a script running, loading, failover).
_UNAVAILABLE_CODES = frozenset({"BUSY", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"})
#: Replies refusing a write, each applying nothing; OOM comes without its code in redis-py's message.
_REFUSED_CODES = frozenset({"NOREPLICAS", "READONLY", "OOM"})
_MAXMEMORY = "used memory > 'maxmemory'"
_READ_ONLY = "You can't write against a read only replica"
#: What the server says to a URL naming a database it does not have, and a cluster URL at a plain server.
_CONFIG_MISTAKES = ("DB index is out of range", "Cluster mode is not enabled", "cluster support disabled")
#: redis-py's prefix of an error reply inside a pipeline ("Command # 1 (SET x y) of pipeline caused error: ").
_PIPELINE_PREFIX = re.compile(r"^Command # \d+ \(.*\) of pipeline caused error: ", re.DOTALL)


def server_reply(exc: BaseException) -> str:
    """The server's own words in ``exc``, without redis-py's pipeline prefix (which quotes the
    command's arguments, so user data would otherwise be read as an error code)."""
    return _PIPELINE_PREFIX.sub("", str(exc), count=1)


def _code(reply: str, exc: BaseException) -> str:
    """The reply's error code (its first word in capitals), OOM and READONLY also by class or wording."""
    if isinstance(exc, redis.exceptions.OutOfMemoryError) or _MAXMEMORY in reply:
        return "OOM"
    if isinstance(exc, redis.exceptions.ReadOnlyError) or _READ_ONLY in reply:
        return "READONLY"
    first = reply.split(" ", 1)[0]
    return first if first.isupper() else ""


def typed_error(exc: BaseException, address: str) -> RedmemError:
    """The RedmemError to raise, ``from exc``, for a redis-py error from the server at ``address``.

    ACL refusals are PermissionDenied; a lost WATCH race WriteConflict; a value redis-py cannot
    encode ArgumentTypeError; a URL naming a missing database or a cluster at a plain server
    ConfigurationError; no answer, or BUSY/LOADING/failover replies, ServerUnavailable;
    NOREPLICAS/READONLY/OOM WriteRefused; any other error reply ServerError.
    """
    if isinstance(exc, RedmemError):
        return exc
    reply = server_reply(exc)
    if isinstance(exc, redis.exceptions.NoPermissionError) or any(w in reply for w in SCRIPT_REFUSED):
        return PermissionDenied(address, reply)
    if isinstance(exc, redis.exceptions.WatchError):
        return WriteConflict(f"a concurrent write to a watched key at {address} aborted the transaction: {reply}")
    if isinstance(exc, redis.exceptions.DataError):
        return ArgumentTypeError(f"a value cannot be sent to Redis: {reply}")
    if any(mistake in reply for mistake in _CONFIG_MISTAKES):
        return ConfigurationError(f"Redis at {address} does not fit the URL: {reply}")
    if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, ClusterError, RedisClusterException)):
        return ServerUnavailable(address, reply)
    code = _code(reply, exc)
    if code in _UNAVAILABLE_CODES:
        return ServerUnavailable(address, reply)
    if code in _REFUSED_CODES:
        return WriteRefused(address, reply, code)
    return ServerError(address, reply)
