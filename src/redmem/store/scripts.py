"""Lua scripts: ``.lua`` files under ``redmem/lua/`` loaded once per process as ``Script`` objects.

Run alone, a script goes by EVALSHA (loaded on NOSCRIPT). Queued in a pipeline or a MULTI/EXEC
batch it goes by EVAL with its source: a NOSCRIPT error inside EXEC would not stop the other
queued writes, so a batch never depends on the server's script cache.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

from redis.cluster import ClusterPipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError

__all__ = ["script", "run_script", "queue_script"]


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
