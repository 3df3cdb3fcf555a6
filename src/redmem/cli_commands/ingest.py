"""Storing conversation turns as memories, and ``redmem ingest FILE``.

Turns are embedded in batches and saved with ``Model.save_many`` (one MULTI/EXEC per chunk),
then one pipeline stamps each memory's decay clocks with the time the turn was said (so older
sessions have decayed) and links consecutive turns of a session in the co-occurrence graph.
"""

from __future__ import annotations

import argparse
import itertools
import uuid
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..fields.embedding import embed_many
from ..store.connection import server_errors
from ..store.errors import ValidationError
from .conversation import Conversation, Turn, read_conversation
from .memory import ChatMemory
from .runtime import print_notes, start

__all__ = [
    "store_turns", "ingest_with_progress", "progress_bar", "LINK_WEIGHT", "CHUNK",
    "add_arguments", "run",
]

#: Initial weight of the edge between two consecutive turns of a session.
LINK_WEIGHT = 0.5
#: Turns embedded and saved per batch (one progress step).
CHUNK = 32


def memory_of(turn: Turn, agent: str, memory_id: str | None = None) -> ChatMemory:
    """The (unsaved) memory of one turn, its id given or drawn at random (so it can be recorded before the save)."""
    return ChatMemory(
        memory_id=memory_id or uuid.uuid4().hex, agent_id=agent, session=turn.session, date=turn.at.date().isoformat(),
        speaker=turn.speaker, content=turn.text, importance=turn.importance, routine=1.0 if turn.recurring else 0.0,
    )


def store_turns(
    turns: list[Turn], agent: str, *, after: ChatMemory | None = None,
    advance: Callable[[int], None] | None = None, before_save: Callable[[list[ChatMemory]], None] | None = None,
    ids: Sequence[str] | None = None,
) -> list[ChatMemory]:
    """Save ``turns`` as memories of ``agent``; returns them (saved) in the order given.

    Consecutive turns of one session are linked, the first one to ``after`` (the memory said
    just before, if any) too. ``before_save(chunk)`` is called before each chunk is saved,
    ``advance(n)`` after each chunk of ``n`` turns. ``ids``: the memory id of each turn (default
    random). Searches break ties by record id, so fixed ids make what ties select repeatable.
    """
    if ids is not None and len(ids) != len(turns):
        raise ValidationError(f"store_turns got {len(ids)} ids for {len(turns)} turns")
    chosen: Sequence[str | None] = [None] * len(turns) if ids is None else ids
    memories = [memory_of(turn, agent, memory_id) for turn, memory_id in zip(turns, chosen)]
    for first in range(0, len(memories), CHUNK):
        chunk = memories[first : first + CHUNK]
        if before_save is not None:
            before_save(chunk)
        embed_many(chunk)
        ChatMemory.save_many(chunk)
        if advance is not None:
            advance(len(chunk))
    chain = ([after] if after is not None else []) + memories
    backdate_and_link(memories, turns, list(itertools.pairwise(chain)))
    return memories


Pair = tuple[ChatMemory, ChatMemory]


def backdate_and_link(memories: list[ChatMemory], turns: list[Turn], pairs: list[Pair]) -> None:
    """One pipeline: decay clocks set to when each turn was said; each pair of one session linked."""
    client = ChatMemory._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for memory, turn in zip(memories, turns):
            said = turn.at.timestamp()
            ChatMemory.relevance.touch(memory, pipeline=pipe, now=said)
            ChatMemory.rhythm.touch(memory, pipeline=pipe, now=said)
        for a, b in pairs:
            if a.session is not None and a.session == b.session:
                ChatMemory.associations.link(a, b, LINK_WEIGHT, pipeline=pipe)
        pipe.execute()


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
    parser.add_argument("--agent", default="demo", help="whose memory receives it (default: demo)")


def run(console: Console, args: argparse.Namespace) -> None:
    """``redmem ingest FILE``: store a conversation (JSON) or one memory per line (text)."""
    runtime = start(args)
    print_notes(console, runtime)
    conversation = read_conversation(args.file)
    memories = ingest_with_progress(console, conversation, args.agent, f"ingesting {args.file}")
    sessions = {m.session for m in memories if m.session}
    console.print(
        f"ingested {len(memories)} memories for agent {escape(args.agent)}"
        + (f" from {len(sessions)} sessions" if sessions else "") + f", {escape(runtime.location)}",
        highlight=False,
    )
    if memories:
        console.print(f"first memory: {escape(memories[0].db_key.redis_key)}", highlight=False)
