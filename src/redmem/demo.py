"""``redmem demo``: the main job end to end on a bundled conversation.

1. Ingest the sample conversation (``redmem/samples``), replayed so that its last session was
   yesterday, into the memory of agent ``demo`` (an earlier run's memories are removed first).
2. For each sample question: assemble the context (pull: BM25 + vectors + graph fused by RRF;
   push: routines above the surfacing threshold), print it with its token count against the
   budget and the trace of every record (rank, path, score components, relevance, confidence).
3. With a chat model configured (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``), ask it.
4. Report outcomes (``ObservationProtocol.on_context_used``) and print each memory's scores
   before and after: acted-on memories gain confidence and are refreshed, contradicted ones
   lose confidence, dismissed routines weaken their cycle.
"""

from __future__ import annotations

import argparse
import time
from datetime import datetime, timedelta, timezone

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from .cli_commands.ask import assembler_from
from .cli_commands.conversation import Conversation, Question, parse_conversation
from .cli_commands.display import WIDE, context_panel, outcome_table, summary, trace_table
from .cli_commands.ingest import clear_agent, ingest_with_progress
from .cli_commands.llm import ChatModel, from_environment, messages_for
from .cli_commands.memory import ChatMemory
from .cli_commands.runtime import start
from .recipes.context_assembler import ContextAssembler
from .cli_commands.scores import Scores, decide_outcomes, snapshot
from .context.rendering import FORMATS
from .observation import ObservationProtocol
from .samples import load_sample

__all__ = ["run", "add_arguments", "sample_conversation"]

DEFAULT_MAX_ITEMS = 8
DEFAULT_MAX_TOKENS = 600
#: Scores before and after a turn are read at one instant this many seconds ahead, past the turn's
#: effects (decaying and cyclic scores move with the clock; one instant shows only what the outcomes did).
SCORES_AHEAD = 2.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--agent", default="demo", help="agent whose memory the demo fills (default: demo)")
    parser.add_argument("--max-items", type=int, default=DEFAULT_MAX_ITEMS, help="records per context")
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS, help="token budget per context")
    parser.add_argument("--format", default="structured", choices=FORMATS, help="output format (default: structured)")


def sample_conversation(now: datetime) -> Conversation:
    """The bundled conversation, moved in time so that its last turn was said a day before ``now``."""
    return parse_conversation(load_sample()).shifted_to(now - timedelta(days=1))


def run(console: Console, args: argparse.Namespace) -> None:
    """Run the demo (see the module docstring)."""
    started = time.perf_counter()
    runtime = start(args)
    console.print(f"[bold]redmem demo[/bold] on {runtime.describe()}; key prefix {args.prefix!r}, "
                  f"agent {escape(repr(args.agent))}")
    if runtime.note:
        console.print(f"[yellow]note:[/yellow] {runtime.note}")
    chat_model = from_environment()
    console.print(f"chat model: {chat_model.describe()}" if chat_model else
                  "chat model: none (set OPENAI_BASE_URL / OPENAI_API_KEY to also ask one)")
    removed = clear_agent(args.agent)
    if removed:
        console.print(f"removed the {removed} memories of an earlier run for agent {escape(repr(args.agent))}")
    conversation = sample_conversation(datetime.now(timezone.utc))
    memories = _ingest(console, conversation, args.agent)
    assembler = assembler_from(args)
    moved: list[tuple[str, Scores, Scores]] = []
    for number, question in enumerate(conversation.questions, 1):
        moved += _turn(console, assembler, question, number, args, chat_model)
    console.print(Rule("what the outcomes did"))
    console.print(_movement(moved))
    console.print(Text(_epilogue(runtime.embedded, args, memories)))
    console.print(f"demo done in {time.perf_counter() - started:.1f} s")


def _ingest(console: Console, conversation: Conversation, agent: str) -> list[ChatMemory]:
    turns = conversation.turns
    sessions = list(dict.fromkeys(turn.session for turn in turns))
    console.print(f"sample conversation: {len(turns)} turns in {len(sessions)} sessions, "
                  f"{turns[0].at.date()} to {turns[-1].at.date()} (replayed so the last session was yesterday)")
    began = time.perf_counter()
    memories = ingest_with_progress(console, conversation, agent, "ingesting the sample conversation")
    console.print(
        f"stored {len(memories)} memories in {time.perf_counter() - began:.1f} s: each with BM25 terms, a vector, "
        "existence-filter bits, decay clocks set to when it was said; consecutive turns linked in the graph"
    )
    return memories


def _turn(
    console: Console, assembler: ContextAssembler, question: Question, number: int,
    args: argparse.Namespace, chat_model: ChatModel | None,
) -> list[tuple[str, Scores, Scores]]:
    """One user turn: assemble, show, ask the model, report outcomes, show the scores moving."""
    console.print(Rule(f"user turn {number}: {question.text}"))
    result = assembler.assemble(question.text, emit_trace=True, agent_id=args.agent)
    moment = time.time() + SCORES_AHEAD  # both snapshots at one instant, after this turn's effects
    before = snapshot(result.records, moment)
    console.print(summary(result, args.max_tokens))
    console.print(context_panel(result, args.format, args.max_tokens))
    console.print(trace_table(result, before if console.width >= WIDE else None))
    if chat_model is not None:
        answer = chat_model.answer(messages_for(result.formatted, question.text))
        console.print(Text.assemble((f"{chat_model.model}: ", "bold"), answer))
    outcomes = decide_outcomes(result.records, result.proactive, question.uses, question.contradicts)
    ObservationProtocol.on_context_used(result.records, outcomes)
    after = snapshot(result.records, moment)
    console.print(outcome_table(result.records, outcomes, before, after))
    return [(outcome, before[key], after[key]) for key, outcome in outcomes.items()]


def _movement(moved: list[tuple[str, Scores, Scores]]) -> str:
    """How many memories' confidence rose or fell, relevance was refreshed, rhythm changed."""
    rose = sum(1 for _, old, new in moved if new.confidence > old.confidence)
    fell = sum(1 for _, old, new in moved if new.confidence < old.confidence)
    refreshed = sum(1 for _, old, new in moved if _up(old.relevance, new.relevance))
    stronger = sum(1 for o, old, new in moved if o == "acted" and _up(old.rhythm, new.rhythm))
    weaker = sum(1 for o, old, new in moved if o == "dismissed" and _up(new.rhythm, old.rhythm))
    return (
        f"scores moved: confidence rose for {rose} memories acted on and fell for {fell} contradicted; "
        f"relevance refreshed for {refreshed}; routines strengthened {stronger} times, weakened {weaker} times "
        "(dismissed); memories read but left out of the context were suppressed a little (confidence signal 0.3)"
    )


def _up(before: float | None, after: float | None) -> bool:
    return before is not None and after is not None and after > before


def _epilogue(embedded: bool, args: argparse.Namespace, memories: list[ChatMemory]) -> str:
    if embedded:
        return "the private embedded server stops now; run with --url (or REDIS_URL) to keep the memories"
    url = (f"--url {args.url} " if args.url else "") + (f"--prefix {args.prefix} " if args.prefix != "rm" else "")
    return (f"the memories stay in Redis for agent {args.agent!r}: try\n"
            f"  redmem {url}ask --agent {args.agent} \"What does Biscuit eat?\"\n"
            f"  redmem {url}inspect {memories[0].db_key.redis_key}")
