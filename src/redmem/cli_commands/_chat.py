"""``redmem chat``: an interactive, memory-backed conversation.

Each user turn assembles the context from the agent's memory, asks the chat model when one is
configured (else prints what it would send), and stores the turn (and the reply) as memories of
this chat session, linked to the turn before. ``/quit`` (or end of input) leaves.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from ..recipes.assembler._context_assembler import ContextAssembler
from ._ask import add_budget_arguments, assembler_from
from ._conversation import ChatTurn
from ._display import summary, trace_table
from ._ingest import store_turns
from ._llm import ChatModel, from_environment, messages_for
from ._memory import ChatMemory
from ._runtime import print_notes, start
from ._windows import read_memories

__all__ = ["add_arguments", "run", "QUIT", "HISTORY"]

QUIT = ("/quit", "/exit")
#: Earlier messages of the chat sent along with each turn.
HISTORY = 6
USER, ASSISTANT = "user", "assistant"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_budget_arguments(parser)


@dataclass
class ChatSession:
    """One chat: its label, its messages so far, and the last memory stored."""

    label: str
    messages: list[dict[str, str]] = field(default_factory=list)
    last: ChatMemory | None = None
    stored: int = 0


def run(console: Console, args: argparse.Namespace) -> None:
    runtime = start(args)
    print_notes(console, runtime)
    chat_model = from_environment()
    assembler = assembler_from(args)
    chat = ChatSession(f"chat-{datetime.now(UTC):%Y%m%d-%H%M%S}")
    console.print(f"[bold]redmem chat[/bold] with the memory of agent {escape(repr(args.agent))}, "
                  f"{escape(runtime.location)}; "
                  + (f"model {chat_model.describe()}" if chat_model else "no chat model (set OPENAI_BASE_URL / "
                     "OPENAI_API_KEY), so each turn shows what would be sent")
                  + f". Type {QUIT[0]} to leave.")
    while True:
        try:
            line = console.input("[bold]you>[/bold] ").strip()
        except EOFError:
            break
        if line in QUIT:
            break
        if line:
            _exchange(console, assembler, chat_model, chat, line, args)
    console.print(Text(f"bye: {chat.stored} memories stored in session {chat.label!r} for agent {args.agent!r}"))


def _exchange(
    console: Console, assembler: ContextAssembler, chat_model: ChatModel | None, chat: ChatSession,
    text: str, args: argparse.Namespace,
) -> None:
    """One turn: context, reply (or what would be sent), then the turn remembered."""
    said = datetime.now(UTC)
    result = read_memories(assembler, text, args.agent, None, emit_trace=True)
    console.print(summary(result, args.max_tokens))
    if result.records:
        console.print(trace_table(result))
    messages = messages_for(result.formatted, text, chat.messages[-HISTORY:])
    reply = None
    if chat_model is not None:
        reply = chat_model.answer(messages)
        console.print(Text.assemble(("assistant> ", "bold"), reply))
    else:
        console.print("would send:")
        for message in messages:
            console.print(Panel(Text(message["content"]), title=message["role"], title_align="left"))
    turns = [ChatTurn(text, said, chat.label, USER)]
    if reply:
        turns.append(ChatTurn(reply, said + timedelta(seconds=1), chat.label, ASSISTANT))
    memories = store_turns(turns, args.agent)
    chat.last, chat.stored = memories[-1], chat.stored + len(memories)
    chat.messages += [{"role": USER, "content": text}] + ([{"role": ASSISTANT, "content": reply}] if reply else [])
