"""Lua scripts: ``.lua`` files under ``redmem/lua/`` loaded once per process as ``Script`` objects.

Run alone, a script goes by EVALSHA (loaded on NOSCRIPT). Queued in a pipeline or a MULTI/EXEC
batch it goes by EVAL with its source: a NOSCRIPT error inside EXEC would not stop the other
queued writes, so a batch never depends on the server's script cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from redis.cluster import ClusterPipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError

__all__ = ["script", "run_script", "queue_script", "ScriptCall", "run_calls"]


@cache
def script(name: str) -> Script:
    """The ``Script`` built from ``redmem/lua/<name>.lua``."""
    source = resources.files("redmem.lua").joinpath(f"{name}.lua").read_bytes()
    return Script(None, source)


def run_script(name: str, keys: list, args: list, client: Any) -> Any:
    """Run a script now by EVALSHA, loading it on NOSCRIPT; ``keys`` lists every key it touches."""
    lua = script(name)
    try:
        return client.evalsha(lua.sha, len(keys), *keys, *args)
    except NoScriptError:
        client.script_load(lua.script)
        return client.evalsha(lua.sha, len(keys), *keys, *args)


def queue_script(pipe: Any, name: str, keys: list, args: list) -> None:
    """Queue a script on a pipeline or transaction (EVAL with source: no cache dependence).

    On a cluster pipeline the target node is named from the first key: left to itself,
    redis-py would ask the server (COMMAND GETKEYS) where each queued EVAL belongs.
    """
    options = {}
    if isinstance(pipe, ClusterPipeline) and keys:
        options["target_nodes"] = pipe.get_node_from_key(keys[0])
    pipe.execute_command("EVAL", script(name).script, len(keys), *keys, *args, **options)


@dataclass(frozen=True)
class ScriptCall:
    """One script invocation, built before it runs so independent calls can share a round trip."""

    name: str
    keys: list
    args: list

    def run(self, client: Any) -> Any:
        return run_script(self.name, self.keys, self.args, client)

    def queue(self, pipe: Any) -> None:
        queue_script(pipe, self.name, self.keys, self.args)


def run_calls(client: Any, calls: list[ScriptCall]) -> list[Any]:
    """Run independent script calls in one pipelined round trip (one alone goes by EVALSHA)."""
    if len(calls) == 1:
        return [calls[0].run(client)]
    if not calls:
        return []
    with client.pipeline(transaction=False) as pipe:
        for call in calls:
            call.queue(pipe)
        return pipe.execute()
