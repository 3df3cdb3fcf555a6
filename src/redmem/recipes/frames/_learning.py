"""learn()'s write: a block appended to its session in two round trips, the earlier blocks
updated field by field.

1. WATCH the agent's clock hash and read, with ``frames_tail.lua``, its entries (the active
   hours, the open session) and the session's last ``2 * window`` blocks (id, position,
   content, context): one round trip.
2. One MULTI/EXEC (exactly once, as every save: :func:`~redmem.model._persistence.transact`):
   the new block with every index, for each earlier block whose ``context`` now holds the new
   one (:func:`~redmem.context._neighbours.build_contexts`) its ``context`` entry alone
   (``frames_context.lua``) and its keyword postings, the new block's position in the session,
   one more ``appends`` in the clock hash, and what the caller adds (``also``: the self
   version, edges, duplicates).

The earlier blocks are never re-saved whole: what ``frame()``, ``touch()``, ``archive()`` or
``update_confidence()`` wrote to them meanwhile (reinforcement count and time, window, status,
confidence, validity) stays as it is, whenever it lands. Two learns of one agent both bump
``appends`` of the WATCHed clock, so the later one starts over from a fresh read (as does a
learn racing ``begin_session``/``end_session``): no two blocks take the same place, and each
context is built from the blocks stored around it. A block deleted between the read and the
write keeps no hash (the script skips it); its keyword postings are written and, the block
being in no frame's window any more, never ranked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ...context._neighbours import build_contexts
from ...fields._cooccurrence import Graph
from ...model._batch import SaveBatch
from ...model._dbkey import DbKey
from ...model._persistence import checked_values, queue_new_records, transact
from ...store._keys import KeySpace
from ...store._scripts import queue_script
from ..assembler._conversation import session_turns_key
from ._models import Block
from ._neighbours import session_turn, turn_of_block
from ._retrieval import block_keys
from ._storage import FrameStore

__all__ = ["append_block", "active_hours_of", "WiringPlan", "APPENDS", "prepare_block", "queue_block", "tail_rows",
           "tail_arguments", "plan_from_hits"]

#: The clock hash's entry counting the blocks appended to its sessions (WATCHed by every learn).
APPENDS = "appends"


def active_hours_of(hours: Any, started: Any, now: float) -> float:
    """Active hours at wall time ``now`` from the clock's stored entries: ``hours`` (ended
    sessions, None: 0) plus ``max(now - started, 0) / 3600`` while a session is open."""
    total = float(hours or 0.0)
    return total if started is None else total + max(now - float(started), 0.0) / 3600


@dataclass(frozen=True)
class WiringPlan:
    """What learn writes into the graph for a new block (``node``, its key; rules in
    :mod:`.wiring`): the ``links`` (other block id, cosine), each an edge at its cosine; the
    ``duplicates`` and the blocks it ``superseded`` (ids), as the judge said."""

    node: DbKey
    links: list[tuple[str, float]]
    duplicates: list[str]
    superseded: list[str]

    def queue(self, pipe: Any, graph: Graph, store: FrameStore) -> None:
        """Queue the edges and the duplicate pairs in the new block's MULTI/EXEC (a supersede,
        which needs both blocks stored, goes after it)."""
        for other, cosine in self.links:
            graph.link(self.node, DbKey(self.node.keyspace, other), min(max(cosine, 1e-6), 1.0), pipe)
        store.queue_duplicates(pipe, self.node.record_id, self.duplicates)


#: A session block as learn reads it back (``frames_tail.lua``): id, position, content, context.
TailRow = list[str]
#: What :func:`prepare_block` hands :func:`queue_block`: the new block's validated values and, for
#: each earlier block whose context changes, (its id, its old context, its new context).
Prepared = tuple[dict[str, Any], list[tuple[str, str, str]]]


def plan_from_hits(node: DbKey, text: str, hits: list[tuple[str, float]], wiring: Any,
                   current: Callable[[list[str]], list[tuple[str, str]]]) -> WiringPlan:
    """The new block's :class:`WiringPlan` from its vector search's ``hits`` ((id, cosine), best
    first) under ``wiring`` (a :class:`~.wiring.LearnWiring`): links to the first ``max_links``
    at ``link_similarity`` or more; the judge's verdict on each hit at ``flag_similarity`` or
    more that ``current`` (ids -> (id, content) of those not superseded, in order) returns."""
    links = [(other, cosine) for other, cosine in hits[: wiring.max_links] if cosine >= wiring.link_similarity]
    near = [other for other, cosine in hits if cosine >= wiring.flag_similarity]
    verdicts: dict[str, list[str]] = {"supersedes": [], "duplicate": []}
    for older, content in current(near) if near else []:
        verdicts.get(wiring.judge(text, content), []).append(older)
    return WiringPlan(node, links, verdicts["duplicate"], verdicts["supersedes"])


def append_block(block: Block, *, window: int, now: float, also: Callable[[Any], None]) -> None:
    """Store ``block`` (unsaved, embedded) after the open session's blocks (none open, or
    ``window`` 0: alone); its ``last_reinforced``, ``window``, ``session`` and ``position`` are
    set from the clock read at wall time ``now``. ``also(pipe)`` queues more writes in the same
    MULTI/EXEC. See the module docstring."""
    if block.block_id is None:
        block.block_id = uuid.uuid4().hex
    space: KeySpace = block.db_key.keyspace
    client = Block._meta.client
    clock = block_keys(space)["clock"]

    def read(pipe: Any) -> None:
        queue_script(pipe, "frames_tail", [clock], tail_arguments(space, window))

    def prepare(_reader: Any, replies: list[Any]) -> Prepared:
        hours, started, session, tail = replies[0]
        return prepare_block(block, window, now, (hours, started, session), tail_rows(tail))

    def write(pipe: Any, prepared: Prepared) -> None:
        queue_block(pipe, block, prepared, also)

    transact(client, [], prepare, write, also_watch=[clock], reads=read)
    block._was_stored = True


def tail_arguments(space: KeySpace, window: int) -> list[Any]:
    """ARGV of ``frames_tail.lua`` for a block of ``space`` learned with ``window`` neighbours."""
    sessions = session_turns_key(space, "0").removesuffix("0")  # + the session id (digits: not escaped)
    return [sessions, 2 * window, space.record("") + ":"]


def tail_rows(tail: list[Any]) -> list[TailRow]:
    """``frames_tail.lua``'s flat tail as rows (id, position, content, context), decoded."""
    return [[_text(value) for value in tail[i : i + 4]] for i in range(0, len(tail), 4)]


def prepare_block(block: Block, window: int, now: float, clock: tuple[Any, Any, Any], rows: list[TailRow]) -> Prepared:
    """Set the new block's ``last_reinforced``, ``window``, ``session``, ``position`` and
    ``context`` from the clock's (hours, started, session) and the session's last blocks
    (``rows``, oldest first); returns its values and the earlier blocks whose context now holds it."""
    hours, started, session = clock
    block.last_reinforced = block.window = active_hours_of(hours, started, now)
    block.session = _text(session or b"0") if started is not None and window else ""
    block.position = int(float(rows[-1][1])) + 1 if rows else 0
    turns = [*(session_turn(row[2], block.session) for row in rows), turn_of_block(block)]
    contexts = build_contexts(turns, window)
    block.context = contexts[-1]
    changed = [
        (rows[i][0], rows[i][3], contexts[i])
        for i in range(max(len(rows) - window, 0), len(rows))
        if contexts[i] != rows[i][3]
    ]  # the last `window` earlier blocks now hold the new one
    return checked_values(block, True), changed


def queue_block(pipe: Any, block: Block, prepared: Prepared, also: Callable[[Any], None]) -> None:
    """Queue the writes of a block :func:`prepare_block` prepared: its record with every index,
    the changed contexts of the earlier blocks (entry and keyword postings), its place in the
    session and the clock's ``appends``, then ``also(pipe)``."""
    client, space = Block._meta.client, block.db_key.keyspace
    values, changed = prepared
    queue_new_records(pipe, client, [block], values=[values], fresh=True)
    if changed:
        queue_script(
            pipe,
            "frames_context",
            [space.record(block_id) for block_id, _, _ in changed],
            [context for _, _, context in changed],
        )
        Block.keywords.on_save_many(
            [
                SaveBatch(pipe, client, space, block_id, SimpleNamespace(context=context), {"context": old})
                for block_id, old, context in changed
            ]
        )
    if block.session:
        pipe.zadd(session_turns_key(space, block.session), {str(block.block_id): block.position})
        pipe.hincrby(block_keys(space)["clock"], APPENDS, 1)
    also(pipe)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
