"""Storing conversation turns as memories, and ``redmem ingest FILE``.

The turns of a session are appended to it with
:func:`~redmem.recipes.assembler._conversation_append.append_turns`: each turn's search ``context`` and
embedded ``passage`` hold its neighbours of the same session (the turns already stored in it
too), the turns before get the new ones as the turns after them, and in the same MULTI/EXEC
each new memory's decay clocks are set to when its turn was said (so older sessions have
decayed); consecutive turns are linked in the co-occurrence graph only with :data:`LINK_TURNS`
(off by default: measured worse). Chunks of :data:`CHUNK` turns are embedded in one batch and written in one MULTI/EXEC each.
"""

from __future__ import annotations

import argparse
import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..recipes.assembler._conversation import Turn as SearchTurn
from ..recipes.assembler._conversation import build_contexts, build_passages
from ..recipes.assembler._conversation_append import append_turns
from ..store._errors import ValidationError
from ._agents import add_agent_argument
from ._conversation import DEFAULT_ENCODING, ChatTurn, Conversation, parse_when, read_conversation, spoken_form
from ._memory import ChatMemory, said_epoch
from ._runtime import print_notes, start

__all__ = [
    "store_turns", "ingest_with_progress", "progress_bar", "search_turn", "upgrade_memories", "LINK_WEIGHT", "LINK_TURNS", "CHUNK",
    "add_arguments", "run",
]

#: Initial weight of the edge between two consecutive turns of a session.
LINK_WEIGHT = 0.5
#: Whether consecutive turns of a session are linked in the co-occurrence graph (``associations``).
#: Off: each turn's context already carries its neighbours' words, and the assembler's graph
#: list then pulls every hit's neighbours above the hit (LoCoMo dev through MCP remember/recall,
#: benchmarks/locomo_mcp.py: Recall@1/@5 0.452/0.766 without the links, 0.132/0.567 with them).
LINK_TURNS = False
#: Turns embedded and saved per batch (one progress step).
CHUNK = 32


def memory_of(turn: ChatTurn, agent: str, memory_id: str | None = None) -> ChatMemory:
    """The (unsaved) memory of one turn, its id given or drawn at random (so it can be recorded before the save)."""
    return ChatMemory(
        memory_id=memory_id or uuid.uuid4().hex, agent_id=agent, session=turn.session, date=turn.at.date().isoformat(),
        said_at=turn.at.isoformat(), speaker=turn.speaker, content=turn.text, importance=turn.importance,
        routine=1.0 if turn.recurring else 0.0,
    )


def search_turn(memory: ChatMemory) -> SearchTurn:
    """The turn a memory's context and passage are built from: its line is dated in words
    (``[1:56 pm on 8 May, 2023] Maya: ...``), so a question naming the month finds it."""
    said = "" if memory.said_at is None else spoken_form(parse_when(memory.said_at, "said_at"))
    return SearchTurn(memory.speaker or "", memory.content or "", memory.session or "", said)


def store_turns(
    turns: list[ChatTurn], agent: str, *, advance: Callable[[int], None] | None = None,
    before_save: Callable[[list[ChatMemory]], None] | None = None, ids: Sequence[str] | None = None,
) -> list[ChatMemory]:
    """Save ``turns`` as memories of ``agent``; returns them (saved) in the order given.

    Each run of consecutive turns of one session is appended to that session (module
    docstring), after the turns stored in it before. ``before_save(chunk)`` is called before
    each chunk is saved, ``advance(n)`` after each chunk of ``n`` turns. ``ids``: the memory id
    of each turn (default random). Searches break ties by record id, so fixed ids make what ties
    select repeatable.
    """
    if ids is not None and len(ids) != len(turns):
        raise ValidationError(f"store_turns got {len(ids)} ids for {len(turns)} turns")
    chosen: Sequence[str | None] = [None] * len(turns) if ids is None else ids
    memories = [memory_of(turn, agent, memory_id) for turn, memory_id in zip(turns, chosen)]
    for _, run in itertools.groupby(memories, key=lambda memory: memory.session or ""):
        group = list(run)
        for first in range(0, len(group), CHUNK):
            chunk = group[first : first + CHUNK]
            if before_save is not None:
                before_save(chunk)
            append_turns(chunk, turn_of=search_turn, also=date_and_link)
            if advance is not None:
                advance(len(chunk))
    return memories


def upgrade_memories(agent: str) -> int:
    """Give ``agent``'s memories written before ``context`` and ``passage`` existed a context and
    passage of their own line (not linked: their order in the session was not kept), and save
    them again, so the keyword search (over ``context``) finds them too; returns how many.

    Those memories are found without it by their stored vector of ``content``.
    """
    older = [m for m in ChatMemory.query.filter(agent_id=agent).no_track().all() if m.context is None]
    for memory in older:
        turn = search_turn(memory)
        memory.context, memory.passage = build_contexts([turn])[0], build_passages([turn])[0]
    ChatMemory.embedding.embed_many(older)
    ChatMemory.save_many(older)
    return len(older)


def date_and_link(pipe: Any, memories: list[ChatMemory], before: ChatMemory | None) -> None:
    """Queued in the append's MULTI/EXEC: decay clocks set to when each turn was said; with
    :data:`LINK_TURNS`, consecutive turns of a session linked (the first to ``before``, the
    session's turn before it)."""
    for memory in memories:
        said = said_epoch(memory.said_at) if memory.said_at else None
        ChatMemory.relevance.touch(memory, pipeline=pipe, now=said)
        ChatMemory.rhythm.touch(memory, pipeline=pipe, now=said)
    if LINK_TURNS and memories[0].session:
        chain = ([before] if before is not None else []) + memories
        for a, b in itertools.pairwise(chain):
            ChatMemory.associations.link(a, b, LINK_WEIGHT, pipeline=pipe)


def progress_bar(console: Console) -> Progress:
    """The progress bar of long CLI steps."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console,
    )


def ingest_with_progress(
    console: Console, conversation: Conversation, agent: str, label: str,
    before_save: Callable[[list[ChatMemory]], None] | None = None, ids: Sequence[str] | None = None,
) -> list[ChatMemory]:
    """Store the conversation's turns for ``agent`` behind a progress bar (``before_save``, ``ids`` as in store_turns)."""
    with progress_bar(console) as progress:
        task = progress.add_task(escape(label), total=len(conversation.turns))
        return store_turns(conversation.turns, agent, advance=lambda n: progress.advance(task, n),
                           before_save=before_save, ids=ids)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a JSON conversation, or a text file with one memory per line")
    add_agent_argument(parser, "whose memory receives it")
    parser.add_argument("--encoding", default=DEFAULT_ENCODING,
                        help=f"the file's text encoding (default: {DEFAULT_ENCODING}, UTF-8 with or without a BOM)")
    parser.add_argument("--said-at", help="when the memories without a date of their own were said: ISO 8601 "
                        "(2023-05-08, 2023-05-08T13:56:00+00:00) or '1:56 pm on 8 May, 2023' (default: now)")
    parser.add_argument("--session", help="the session of the lines of a text file (default: none, each line alone)")


def run(console: Console, args: argparse.Namespace) -> None:
    """``redmem ingest FILE``: store a conversation (JSON) or one memory per line (text)."""
    said_at = None if args.said_at is None else parse_when(args.said_at, "--said-at")
    conversation = read_conversation(args.file, said_at, args.session, args.encoding)
    if not conversation.turns:
        raise ValidationError(f"{args.file} holds no memories: nothing was stored for agent {args.agent!r}")
    runtime = start(args)
    print_notes(console, runtime)
    memories = ingest_with_progress(console, conversation, args.agent, f"ingesting {args.file}")
    sessions = {m.session for m in memories if m.session}
    console.print(
        f"ingested {len(memories)} memories for agent {escape(repr(args.agent))}"
        + (f" from {len(sessions)} sessions" if sessions else "") + f", {escape(runtime.location)}",
        highlight=False,
    )
    if memories:
        console.print(f"first memory: {escape(memories[0].db_key.redis_key)}", highlight=False)
