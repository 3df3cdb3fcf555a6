"""One script that branches on what it reads, then applies queued writes: a write in one round trip.

A MULTI/EXEC cannot branch, and a script cannot call another script, so a write that must read
before it decides (the fact lifecycle's merge or supersede) took a WATCH round trip before its
EXEC. Here the writes a save would queue are recorded instead (:func:`recorded`: the commands of
a pipeline that is never sent) and handed, as arguments, to one script composed once per process
(:func:`composed_source`): a *head* script (``.lua`` beside its owner) that reads, decides, and
calls ``run_queued(first)`` to apply the recorded commands from ``ARGV[first]`` on, or not.

The composition pastes, as local functions of the one script, each queued script's source (a
recorded ``EVAL``, guarded as it would run in the EXEC) and each helper script the head names
(``helpers.NAME(keys, args)``, unguarded: the composed script is guarded once as a whole). A
recorded command is sent as its length and its arguments; a recorded script call as ``@``, the
index of its function, its key count, keys and arguments. Every key shares the write's hash tag
(one slot), so the call is one EVALSHA on one server or on the node of that slot.

The composed script writes, so it runs guarded by an operation key (:mod:`.outcome`): applied
once under retries, its reply stored for a resent copy, like every write script.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from typing import Any

import redis
from redis.client import Pipeline
from redis.exceptions import NoScriptError

from ._connection import reply_timeout
from ._errors import WriteOutcomeUnknown
from ._outcome import guarded_source, op_ttl, operation_key, unknown_outcome
from ._scripts import script_source

__all__ = ["recorded", "queued_args", "composed_source", "run_composed", "QUEUED_SCRIPT"]

#: The first argument of a recorded script call in the queued arguments.
QUEUED_SCRIPT = b"@"

_RUNNER = b"""
local function run_queued(first)
  local i = first
  while i <= #ARGV do
    local n = tonumber(ARGV[i])
    if ARGV[i + 1] == '@' then
      local nkeys = tonumber(ARGV[i + 3])
      local keys, args = {}, {}
      for j = i + 4, i + 3 + nkeys do keys[#keys + 1] = ARGV[j] end
      for j = i + 4 + nkeys, i + n do args[#args + 1] = ARGV[j] end
      queued[tonumber(ARGV[i + 2])](keys, args)
    else
      redis.call(unpack(ARGV, i + 1, i + n))
    end
    i = i + n + 1
  end
end
"""


def recorded(client: Any, queue: Callable[[Any], object]) -> list[tuple[Any, ...]]:
    """The commands ``queue(pipe)`` queues on a pipeline that is never sent (its options, the
    reply timeout that sizes operation keys, are ``client``'s)."""
    pipe = Pipeline(_recording_pool(reply_timeout(client)), {}, transaction=False, shard_hint=None)
    queue(pipe)
    return [args for args, _ in pipe.command_stack]


@cache
def _recording_pool(timeout: float | None) -> redis.ConnectionPool:
    """A pool that never connects, shared by the recording pipelines of one reply timeout (what
    sizes the operation keys of the scripts they queue)."""
    return redis.ConnectionPool(socket_timeout=timeout)


def queued_args(client: Any, commands: list[tuple[Any, ...]]) -> tuple[list[bytes], list[Any]]:
    """(the sources of the recorded script calls, in order of first use; the commands as the
    composed script's arguments). A command's arguments go as recorded, unencoded: the client
    packs them as it packs a pipeline's, once, when it sends the call."""
    encode = client.get_encoder().encode
    sources: list[bytes] = []
    out: list[Any] = []
    for command in commands:
        if encode(command[0]).upper() != b"EVAL":
            out += [len(command), *command]
            continue
        source = encode(command[1])
        if source not in sources:
            sources.append(source)
        out += [len(command), QUEUED_SCRIPT, sources.index(source) + 1, *command[2:]]
    return sources, out


@cache
def composed_source(head: str, helpers: tuple[str, ...], sources: tuple[bytes, ...]) -> bytes:
    """The guarded source of ``head`` with its ``helpers`` and the queued ``sources`` pasted in."""
    parts = [b"local helpers, queued = {}, {}\n"]
    for name in helpers:
        parts.append(b"helpers." + name.encode() + b" = function(KEYS, ARGV)\n" + script_source(name) + b"\nend\n")
    for i, source in enumerate(sources, 1):
        parts.append(b"queued[%d] = function(KEYS, ARGV)\n" % i + source + b"\nend\n")
    parts += [_RUNNER, script_source(head)]
    return guarded_source(b"".join(parts))


@cache
def _sha1(source: bytes) -> str:
    """The SHA1 an EVALSHA names ``source`` by, worked out once per composed source (the lifecycle
    write's is 23 kB: 13 µs a write when hashed at each call)."""
    return hashlib.sha1(source).hexdigest()


def run_composed(client: Any, source: bytes, keys: list[str], args: list[Any]) -> Any:
    """Run a composed script by EVALSHA (loaded on NOSCRIPT), guarded by a new operation key in
    the slot of ``keys[0]``; a lost reply is decided as :func:`~redmem.store._scripts.run_script` does."""
    operations = [operation_key(keys[0])]
    keys, args = [*keys, *operations], [*args, op_ttl(client)]
    sha = _sha1(source)
    try:
        with unknown_outcome(client, operations):
            try:
                return client.evalsha(sha, len(keys), *keys, *args)
            except NoScriptError:
                client.script_load(source)
                return client.evalsha(sha, len(keys), *keys, *args)
    except WriteOutcomeUnknown as unknown:
        if not (unknown.applied and all(unknown.applied.values())):
            raise
        with unknown_outcome(client, []):  # decided applied: the guard answers with the stored reply
            return client.eval(source, len(keys), *keys, *args)
