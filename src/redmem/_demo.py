"""``redmem demo``: the main job end to end on a bundled conversation.

1. Ingest the sample conversation (``redmem/samples``), replayed so that its last session was
   yesterday, into the memory of agent ``demo`` under the key prefix ``redmem-demo``, apart from
   the data of ``ingest``, ``ask`` and ``chat`` (prefix ``rm``). The memories of an earlier demo
   run are removed first, and only those (``DemoRun`` lists them); an agent holding memories the
   demo did not create is refused.
2. For each sample question: assemble the context (pull: BM25 + vectors fused by convex score
   fusion, graph neighbours after the hits;
   push: routines above the surfacing threshold) and print the records chosen, with their path
   and score; ``--verbose`` also prints the context itself and every score component.
3. With a chat model configured (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``), ask it.
4. Report scripted outcomes (``ObservationProtocol.on_context_used``) and print each memory's
   scores before and after: acted-on memories gain confidence and are refreshed, contradicted
   ones lose confidence, dismissed routines weaken their cycle.
5. HSCA: the same conversation through ``HSCAEngine`` into the agent's ``demo`` session; print
   its beats (snapshots) and which beats the first question is relevant to.
6. Frames: a few blocks of agent ``<agent>-frames`` and its SELF, ATTENTION and TASK frames
   (:mod:`redmem.cli_commands._frames_demo`).
7. The same conversation through the HCE pipeline (``redmem.recipes.hce``): each question's
   context block by source, its tokens and round trips.

Without ``--url`` or ``REDIS_URL`` it runs on a private throwaway server, so that ``make demo``
leaves no process and no file behind.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.text import Text

from .cli_commands._ask import assembler_from
from .cli_commands._conversation import Conversation, Question, parse_conversation
from .cli_commands._demo_run import DemoRun
from .cli_commands._display import WIDE, context_panel, outcome_table, summary, trace_table, turn_table
from .cli_commands._frames_demo import run_frames
from .cli_commands._hce_demo import run_hce
from .cli_commands._hsca_demo import show_hsca
from .cli_commands._ingest import ingest_with_progress
from .cli_commands._llm import ChatModel, from_environment, messages_for
from .cli_commands._memory import ChatMemory
from .cli_commands._runtime import DEFAULT_PREFIX, Runtime, print_notes, start
from .cli_commands._scores import Scores, decide_outcomes, snapshot
from .context._rendering import FORMATS
from .observation import ObservationProtocol
from .recipes.assembler._context_assembler import ContextAssembler
from .samples import load_sample

__all__ = ["run", "add_arguments", "sample_conversation", "DEMO_PREFIX", "SCRIPTED"]

#: Key prefix of the demo when ``--prefix`` is not given: apart from the data commands' ``rm``.
DEMO_PREFIX = "redmem-demo"
SCRIPTED = (
    "outcomes are scripted, not chosen by an LLM: a memory that mentions what the question needs is "
    "reported acted on, one the conversation later overturned contradicted, a routine that answers "
    "nothing dismissed"
)

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
    parser.add_argument("--verbose", action="store_true",
                        help="print each context, the full trace and the outcome table (default: one screen per turn)")


def sample_conversation(now: datetime) -> Conversation:
    """The bundled conversation, moved in time so that its last turn was said a day before ``now``."""
    return parse_conversation(load_sample()).shifted_to(now - timedelta(days=1))


def run(console: Console, args: argparse.Namespace) -> None:
    """Run the demo (see the module docstring)."""
    started = time.perf_counter()
    runtime = start(args, keep=False, default_prefix=DEMO_PREFIX)
    console.print(f"[bold]redmem demo[/bold] writes to agent {escape(repr(args.agent))}, "
                  f"{escape(runtime.describe())}", highlight=False)
    print_notes(console, runtime)
    chat_model = from_environment()
    console.print(f"chat model: {chat_model.describe()}" if chat_model else
                  "chat model: none (set OPENAI_BASE_URL / OPENAI_API_KEY to also ask one)")
    console.print(SCRIPTED)
    demo_run = DemoRun(args.agent)
    demo_run.check_alone()
    removed = demo_run.clear()
    if removed:
        console.print(f"removed the {removed} memories an earlier demo run created")
    conversation = sample_conversation(datetime.now(UTC))
    memories = _ingest(console, conversation, demo_run)
    assembler = assembler_from(args)
    moved: list[tuple[str, Scores, Scores]] = []
    for number, question in enumerate(conversation.questions, 1):
        moved += _turn(console, assembler, question, number, args, chat_model)
    console.print(Rule("what the outcomes did"))
    console.print(_movement(moved))
    show_hsca(console, conversation, args.agent)
    run_frames(console, args.agent, args.verbose)
    console.print(Text(_epilogue(runtime, args, memories)))
    run_hce(console, conversation, f"{args.agent}-hce", args.max_tokens, args.verbose)
    console.print(f"demo done in {time.perf_counter() - started:.1f} s")


def _ingest(console: Console, conversation: Conversation, demo_run: DemoRun) -> list[ChatMemory]:
    turns = conversation.turns
    sessions = list(dict.fromkeys(turn.session for turn in turns))
    console.print(f"sample conversation: {len(turns)} turns in {len(sessions)} sessions, "
                  f"{turns[0].at.date()} to {turns[-1].at.date()} (replayed so the last session was yesterday)")
    began = time.perf_counter()
    memories = ingest_with_progress(console, conversation, demo_run.agent, "ingesting the sample conversation",
                                    before_save=demo_run.record, ids=demo_run.memory_ids(len(turns)))
    console.print(
        f"stored {len(memories)} memories in {time.perf_counter() - began:.1f} s: each with BM25 terms, a vector, "
        "existence-filter bits, decay clocks set to when it was said; consecutive turns linked in the graph"
    )
    return memories


def _turn(
    console: Console, assembler: ContextAssembler, question: Question, number: int,
    args: argparse.Namespace, chat_model: ChatModel | None,
) -> list[tuple[str, Scores, Scores]]:
    """One user turn: assemble, show, ask the model, report outcomes, show the scores moving.

    Verbose: the context panel, the full trace and the outcome table; else one table of the
    records with their outcome, one line each.
    """
    console.print(Rule(f"user turn {number}: {question.text}"))
    result = assembler.assemble(question.text, emit_trace=True, agent_id=args.agent)
    moment = time.time() + SCORES_AHEAD  # both snapshots at one instant, after this turn's effects
    before = snapshot(result.records, moment)
    console.print(summary(result, args.max_tokens))
    if args.verbose:
        console.print(context_panel(result, args.format, args.max_tokens))
        console.print(trace_table(result, before if console.width >= WIDE else None))
    if chat_model is not None:
        answer = Text.assemble((f"{chat_model.model}: ", "bold"), chat_model.answer(
            messages_for(result.formatted, question.text)))
        if not args.verbose:
            answer.no_wrap, answer.overflow = True, "ellipsis"
        console.print(answer)
    outcomes = decide_outcomes(result.records, result.proactive, question.uses, question.contradicts)
    ObservationProtocol.on_context_used(result.records, outcomes)
    after = snapshot(result.records, moment)
    console.print(outcome_table(result.records, outcomes, before, after) if args.verbose
                  else turn_table(result, outcomes, before, after, console.width))
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


def _epilogue(runtime: Runtime, args: argparse.Namespace, memories: list[ChatMemory]) -> str:
    """Where the demo's memories are, and how to look at them (or how to keep them)."""
    prefix = f"--prefix {runtime.prefix} " if runtime.prefix != DEFAULT_PREFIX else ""
    if runtime.server.throwaway:
        return (f"the private embedded server stops now and its memories with it; give --url (or REDIS_URL) "
                f"to keep them, then try: redmem --url URL {prefix}ask --agent {args.agent} \"What does Biscuit eat?\"")
    url = f"--url {args.url} " if args.url else ""
    return (f"the demo's {len(memories)} memories stay on {runtime.address} under key prefix {runtime.prefix!r}, "
            f"agent {args.agent!r} (the next demo run replaces them): try\n"
            f"  redmem {url}{prefix}ask --agent {args.agent} \"What does Biscuit eat?\"\n"
            f"  redmem {url}{prefix}inspect {memories[0].db_key.redis_key}")
