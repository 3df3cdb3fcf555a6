"""Lua scripts: ``.lua`` files beside their owners, loaded once per process as ``Script`` objects.

Each package keeps its scripts in its own ``lua/`` folder (``redmem/fields/lua/bm25_search.lua``,
``redmem/recipes/frames/lua/frames_touch.lua``, ...) and snippets shared by several scripts in a
``lua/include/`` folder; a script is named by its file name alone, unique across the package
(:func:`lua_files`).

Run alone, a script goes by EVALSHA (loaded on NOSCRIPT). Queued in a pipeline or a MULTI/EXEC
batch it goes by EVAL with its source: a NOSCRIPT error inside EXEC would not stop the other
queued writes, so a batch never depends on the server's script cache.

A script that writes says so in its contract header, a comment line ``-- writes`` among the
comment lines it opens with (:func:`writes`). It is loaded guarded by an operation key
(:mod:`redmem.store._outcome`): each call adds a fresh one as its last KEY, and redis-py resends
the same key when it retries after a timeout, so the write is applied once; the guard adds no
round trip. Read-only scripts run as written and may be retried freely.

Scripts share code by inclusion: a line ``--#include NAME`` is replaced, when the script is
loaded, by the text of the snippet ``lua/include/NAME.lua`` (e.g. ``filter_check``, the
record-filter check of :mod:`redmem.model._filters`). Redis runs each script in its own sandbox
with no way to load a module, so the shared snippet is pasted in; the SHA is that of the
expanded source.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from redis.cluster import ClusterPipeline
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from ._errors import WriteOutcomeUnknown
from ._outcome import guarded_source, op_ttl, operation_key, queued_operations, unknown_outcome, write_pipeline

__all__ = ["script", "script_source", "run_script", "queue_script", "ScriptCall", "run_calls", "lua_files", "lua_tables", "writes", "header_writes"]

#: A line naming a snippet of a ``lua/include/`` folder to paste in its place.
_INCLUDE = re.compile(rb"^--#include ([a-z_]+)[ \t]*$", re.MULTILINE)
#: A snippet's comment-only lines, left out when it is pasted (the file documents it; a pipelined
#: EVAL sends the source each time, so what is pasted stays short).
_COMMENT_LINE = re.compile(rb"^[ \t]*--.*\n", re.MULTILINE)
#: The contract header: the comment lines a script opens with.
_HEADER = re.compile(rb"\A(?:[ \t]*--.*\n)*")
#: The header line that marks a script that writes.
_WRITES = re.compile(rb"^[ \t]*-- writes\b", re.MULTILINE)


def _lua_folders(folder: Traversable) -> Iterator[Traversable]:
    for entry in folder.iterdir():
        if entry.is_dir() and entry.name != "__pycache__":
            if entry.name == "lua":
                yield entry
            else:
                yield from _lua_folders(entry)


def lua_tables(root: Traversable) -> tuple[dict[str, Traversable], dict[str, Traversable]]:
    """(scripts, snippets) by name under ``root``: every ``lua/*.lua`` and ``lua/include/*.lua``
    of its folders. ValueError when two files take one name."""
    scripts: dict[str, Traversable] = {}
    snippets: dict[str, Traversable] = {}
    for folder in _lua_folders(root):
        found = [(scripts, f) for f in folder.iterdir() if f.name.endswith(".lua")]
        include = folder.joinpath("include")
        if include.is_dir():
            found += [(snippets, f) for f in include.iterdir() if f.name.endswith(".lua")]
        for table, file in found:
            name = file.name.removesuffix(".lua")
            if name in table:
                raise ValueError(f"two Lua files are named {name!r}: each script or snippet needs its own name")
            table[name] = file
    return scripts, snippets


@cache
def lua_files() -> tuple[dict[str, Traversable], dict[str, Traversable]]:
    """:func:`lua_tables` of the redmem package, found once per process."""
    return lua_tables(resources.files("redmem"))


def header_writes(source: bytes) -> bool:
    """Whether a script's contract header (the comment lines it opens with) has a ``-- writes`` line."""
    header = _HEADER.match(source)
    return bool(header and _WRITES.search(header[0]))


def script_source(name: str) -> bytes:
    """The source of script ``name`` with each ``--#include NAME`` line replaced by that snippet
    without its comment-only lines (a snippet includes nothing itself)."""
    scripts, snippets = lua_files()

    def snippet(line: re.Match[bytes]) -> bytes:
        text = snippets[line[1].decode()].read_bytes()
        return _COMMENT_LINE.sub(b"", text).rstrip(b"\n")

    return _INCLUDE.sub(snippet, scripts[name].read_bytes())


@cache
def writes(name: str) -> bool:
    """Whether script ``name`` writes: its contract header has a ``-- writes`` line."""
    return header_writes(lua_files()[0][name].read_bytes())


@cache
def script(name: str) -> Script:
    """The ``Script`` built from script ``name`` with its includes expanded
    (:func:`script_source`), guarded when it writes."""
    source = script_source(name)
    # redis-py runs a Script with no client of its own when each call passes one; its annotation omits None.
    return Script(None, guarded_source(source) if writes(name) else source)  # type: ignore[arg-type]


def _operations(name: str, keys: list[Any]) -> list[str]:
    """The operation key a call of ``name`` adds to its KEYS: one for a write script, else none."""
    return [operation_key(keys[0])] if writes(name) else []


def _guard_args(name: str, client: Any) -> list[int]:
    """What a call of ``name`` adds to its ARGV: a write script's operation key lifetime, else nothing."""
    return [op_ttl(client)] if writes(name) else []


def run_script(name: str, keys: list[Any], args: list[Any], client: Any) -> Any:
    """Run a script now by EVALSHA, loading it on NOSCRIPT; ``keys`` lists every key it touches.

    A write whose reply is lost after every retry gets its outcome decided
    (:func:`~redmem.store._outcome.unknown_outcome`): applied, it returns the stored reply; not
    applied, ServerUnavailable; undecidable, :class:`WriteOutcomeUnknown`.
    """
    lua = script(name)
    operations = _operations(name, keys)
    keys, args = [*keys, *operations], [*args, *_guard_args(name, client)]
    try:
        with unknown_outcome(client, operations):
            try:
                return client.evalsha(lua.sha, len(keys), *keys, *args)
            except NoScriptError:
                client.script_load(lua.script)
                return client.evalsha(lua.sha, len(keys), *keys, *args)
    except WriteOutcomeUnknown as unknown:
        if not (unknown.applied and all(unknown.applied.values())):
            raise
        with unknown_outcome(client, []):  # decided applied: the guard answers with the stored reply
            return client.eval(lua.script, len(keys), *keys, *args)


def queue_script(pipe: Any, name: str, keys: list[Any], args: list[Any]) -> list[str]:
    """Queue a script on a pipeline or transaction (EVAL with source: no cache dependence).

    Returns the operation keys the call carries (one for a write script). On a cluster pipeline
    the target node is named from the first key: left to itself, redis-py would ask the server
    (COMMAND GETKEYS) where each queued EVAL belongs.
    """
    options = {}
    if isinstance(pipe, ClusterPipeline) and keys:
        options["target_nodes"] = pipe.get_node_from_key(keys[0])  # type: ignore[no-untyped-call]  # redis-py: unannotated
    operations = _operations(name, keys)
    queued_operations(pipe).extend(operations)
    keys, args = [*keys, *operations], [*args, *_guard_args(name, pipe)]
    pipe.execute_command("EVAL", script(name).script, len(keys), *keys, *args, **options)
    return operations


@dataclass(frozen=True)
class ScriptCall:
    """One script invocation, built before it runs so independent calls can share a round trip."""

    name: str
    keys: list[Any]
    args: list[Any]

    def run(self, client: Any) -> Any:
        return run_script(self.name, self.keys, self.args, client)

    def queue(self, pipe: Any) -> list[str]:
        return queue_script(pipe, self.name, self.keys, self.args)


def run_calls(client: Any, calls: list[ScriptCall]) -> list[Any]:
    """Run independent script calls in one pipelined round trip (one alone goes by EVALSHA)."""
    if len(calls) == 1:
        return [calls[0].run(client)]
    if not calls:
        return []
    with write_pipeline(client) as pipe:
        for call in calls:
            call.queue(pipe)
        replies: list[Any] = pipe.execute()
        return replies
