"""``redmem mcp``: the agent memory of the command line as MCP tools, over stdio or streamable HTTP.

Seven tools, each a thin call into the library on the CLI's :class:`ChatMemory` (the memory
``ingest``, ``ask`` and ``chat`` use, so what one stores the others find): ``remember`` (store
a memory), ``recall`` (assemble context within a token budget), ``feedback`` (report outcomes,
:meth:`ObservationProtocol.on_context_used`), ``forget``, ``list_memories``, ``export`` (the
agent's whole memory as JSON Lines) and ``erase`` (the whole agent, with ``confirm`` repeating its
id). Each takes an optional ``agent_id``, the tenant: ``--agent`` when omitted, and refused unless
the server was started for it (:mod:`.mcp_agents`). Unknown arguments are refused
(:mod:`.mcp_arguments`); a library error becomes an MCP error result naming what is wrong. Requests are limited in size on both transports; over stdio, malformed lines get JSON-RPC
errors (:mod:`.mcp_stdio`); over HTTP, every request needs the bearer token (:mod:`.mcp_http`).
The ``mcp`` SDK (the ``mcp`` extra) is imported only when the command runs, so the core install
does without it.
"""

import argparse
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from rich.console import Console
from rich.markup import escape

from ..context._oversize import truncate_text
from ..observation._protocol import ObservationProtocol
from ..recipes._tenant_data import erase_tenant, export_lines
from ..store._errors import ConfigurationError, RedmemError, ValidationError
from ._agents import add_agent_argument
from ._as_of import as_of_where
from ._conversation import ChatTurn, parse_when
from ._ingest import store_turns
from ._mcp_agents import AgentBinding, agent_list, agent_tokens, request_binding
from ._mcp_arguments import strict_arguments
from ._mcp_http import BearerGuard, bearer_token, serve_http
from ._mcp_stdio import DEFAULT_MAX_REQUEST_BYTES, serve_stdio
from ._memory import ChatMemory, memory_assembler
from ._retention import Evicted, evict_memories, retention_policy
from ._runtime import print_notes, start
from ._windows import read_memories

__all__ = ["add_arguments", "run", "build_server", "Outcome", "Format", "INSTRUCTIONS"]

#: The outcomes ``feedback`` accepts (the keys of :data:`redmem.observation._protocol.OUTCOME_EFFECTS`).
Outcome = Literal["acted", "used", "dismissed", "deferred", "contradicted"]
#: The formats ``recall`` renders (:data:`redmem.context._rendering.FORMATS`).
Format = Literal["structured", "xml", "natural", "content"]
ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])
INSTRUCTIONS = (
    "Long-term memory on Redis. Call recall with the user's turn before answering and put the returned "
    "context in your prompt; call remember for facts worth keeping; after answering, call feedback with the "
    "memory_id of each recalled memory and what you did with it (acted, used, dismissed, contradicted), "
    "which moves its confidence and relevance for the next recall."
)
DEFAULT_PORT = 8000
#: The largest ``list_memories`` offset: past 2**53 the server's Lua numbers are no longer exact integers.
MAX_OFFSET = 2**53


@dataclass
class Memory:
    """One stored memory as the tools return it."""

    memory_id: str
    content: str
    speaker: str | None
    session: str | None
    date: str | None
    said_at: str | None


@dataclass
class Recalled(Memory):
    """A memory in a recalled context: how it was found (pull, push or both) and its combined score."""

    source: str
    score: float


@dataclass
class Stored:
    memory_id: str
    agent_id: str


@dataclass
class RecalledContext:
    """The assembled context, ready to put in a prompt, and the memories in it, best first;
    ``below_floor``: how many memories matched the query too weakly to be included."""

    context: str
    memories: list[Recalled]
    token_count: int
    below_floor: int
    explanation: dict[str, Any] | None = None


@dataclass
class Reported:
    """The outcome applied to each memory."""

    outcomes: dict[str, str]


@dataclass
class Forgotten:
    forgotten: list[str]
    not_found: list[str]


@dataclass
class Exported:
    """An agent's whole memory as JSON Lines (``redmem import`` reads it), and how many keys it holds."""

    agent_id: str
    keys: int
    jsonl: str


@dataclass
class Erased:
    """What ``erase`` deleted, and the keys of the agent found left after it (0: complete)."""

    agent_id: str
    keys_erased: int
    keys_left: int


@dataclass
class Page:
    """One page of an agent's memories (in memory-id order) and how many it holds in all."""

    memories: list[Memory]
    total: int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_agent_argument(parser, "the agent this server acts for, and the agent_id of calls without one")
    parser.add_argument("--agents", type=agent_list, default=frozenset(), metavar="A,B",
                        help="opt-in allow-list: more agents a call may name in agent_id (comma-separated); "
                             "without it any other agent_id is refused")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio (bearer token)")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"HTTP port (default: {DEFAULT_PORT})")
    parser.add_argument("--http-socket", type=Path, metavar="PATH",
                        help="serve HTTP on an owner-only unix socket at PATH instead of TCP (implies --http)")
    parser.add_argument("--token-file", type=Path, metavar="PATH",
                        help="HTTP bearer token: the first line of PATH (without it: $REDMEM_MCP_TOKEN, else one "
                             "generated and printed on stderr)")
    parser.add_argument("--agent-tokens", type=Path, metavar="PATH",
                        help="per-agent HTTP tokens: lines 'agent_id token' in PATH; a request with one acts for "
                             "that agent alone")
    parser.add_argument("--max-request-bytes", type=_positive, default=DEFAULT_MAX_REQUEST_BYTES, metavar="N",
                        help=f"largest request, a stdio line or an HTTP body (default: {DEFAULT_MAX_REQUEST_BYTES})")


def _positive(text: str) -> int:
    """The ``--max-request-bytes`` value: a whole number of bytes, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of bytes")
    return int(text)


def run(console: Console, args: argparse.Namespace) -> None:
    """Serve until the client closes stdin (stdio) or the process is stopped (HTTP); notes go to stderr."""
    binding = AgentBinding(args.agent, args.agents)
    server = build_server(args.agent, args.agents)
    http = args.http or args.http_socket is not None
    if not http and (args.token_file or args.agent_tokens):
        raise ConfigurationError("--token-file and --agent-tokens are for HTTP: add --http or --http-socket")
    token, origin = bearer_token(args.token_file) if http else ("", "")
    per_agent = agent_tokens(args.agent_tokens) if http and args.agent_tokens is not None else {}
    runtime = start(args)
    notes = Console(stderr=True)
    print_notes(notes, runtime)
    notes.print(f"redmem MCP server: {_where(args, http)}, {escape(binding.describe())}, "
                f"{escape(runtime.describe())}", highlight=False)
    if not http:
        # the low-level server on lines checked here: the SDK's own stdio transport drops malformed ones
        serve_stdio(server._lowlevel_server, args.max_request_bytes)
        return
    notes.print(f"bearer token ({origin}): {escape(token) if origin == 'generated' else '(not shown)'}",
                highlight=False, soft_wrap=True)
    app = server.streamable_http_app(max_request_body_size=args.max_request_bytes, host=args.host,
                                     transport_security=_no_host_check() if args.http_socket else None)
    if per_agent:
        notes.print(f"per-agent tokens for {escape(', '.join(sorted({b.default for b in per_agent.values()})))} "
                    f"from {escape(str(args.agent_tokens))}", highlight=False, soft_wrap=True)
    serve_http(BearerGuard(app, token, args.max_request_bytes, per_agent), args.host, args.port, args.http_socket)


def _no_host_check() -> Any:
    """No Host/Origin check (the SDK's DNS-rebinding guard for TCP): a browser cannot reach a unix socket."""
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _where(args: argparse.Namespace, http: bool) -> str:
    if args.http_socket is not None:
        return f"streamable HTTP on unix socket {args.http_socket} (http://localhost/mcp)"
    return f"streamable HTTP on http://{args.host}:{args.port}/mcp" if http else "stdio"


def memory_of(record: ChatMemory) -> dict[str, Any]:
    return {"memory_id": record.memory_id, "content": record.content, "speaker": record.speaker,
            "session": record.session, "date": record.date, "said_at": record.said_at}


def find_memories(agent: str, memory_ids: list[str]) -> dict[str, ChatMemory]:
    """The memories of ``agent`` with these ids, by id (ids naming none are left out)."""
    query = ChatMemory.query.no_track()
    found = {memory_id: query.get(agent_id=agent, memory_id=memory_id) for memory_id in dict.fromkeys(memory_ids)}
    return {memory_id: record for memory_id, record in found.items() if record is not None}


def store_memory(agent: str, content: str, speaker: str | None = None, session: str | None = None,
                 importance: float = 1.0, recurring: bool = False, said_at: str | None = None) -> Stored:
    """Remember one turn of ``agent``: said at ``said_at`` (ISO 8601 or ``1:56 pm on 8 May, 2023``;
    default now) in ``session``, linked to the turns remembered in that session before it
    (:func:`~.ingest.store_turns`). ValidationError, with nothing written, for empty content or
    an unreadable ``said_at``."""
    text = content.strip()
    if not text:
        raise ValidationError("content must hold some text")
    at = datetime.now(UTC) if said_at is None else parse_when(said_at, "said_at")
    turn = ChatTurn(text, at, session or None, speaker, importance, recurring)
    return Stored(store_turns([turn], agent)[0].memory_id, agent)


def recall_context(
    agent: str, query: str, max_tokens: int, max_items: int, output_format: Format, explain: bool = False,
    as_of: str | None = None,
) -> RecalledContext:
    """The context of ``query``; ``as_of`` reads a lifecycle model as it was then (ValidationError,
    nothing read, for a bad time or a model without the lifecycle)."""
    assembler = memory_assembler(max_items, max_tokens, output_format)
    where = as_of_where(assembler.model_class, as_of, "as_of")
    result = read_memories(assembler, query, agent, where, emit_trace=True)
    trace = result.metadata["trace"]
    cut = set(result.metadata["oversize"]["truncated"])
    memories = []
    for record, row in zip(result.records, trace):
        memory = memory_of(record)
        if record.memory_id in cut:  # cut in the context: cut in the reply too
            memory["content"] = truncate_text(memory["content"], max_tokens, assembler.token_counter)
        memories.append(Recalled(**memory, source=row["source"], score=row["score"]))
    return RecalledContext(result.formatted, memories, result.metadata["token_count"], result.metadata["below_floor"],
                           result.explain().to_dict() if explain else None)


def report_outcomes(agent: str, outcomes: dict[str, Outcome]) -> Reported:
    found = find_memories(agent, list(outcomes))
    missing = [memory_id for memory_id in outcomes if memory_id not in found]
    if missing:
        raise ValidationError(f"agent {agent!r} has no memory {', '.join(missing)}: nothing was reported")
    ObservationProtocol.on_context_used(list(found.values()), {found[i]: o for i, o in outcomes.items()})
    return Reported(dict(outcomes))


def forget_memories(agent: str, memory_ids: list[str]) -> Forgotten:
    found = find_memories(agent, memory_ids)
    gone = [memory_id for memory_id, record in found.items() if record.delete()]
    return Forgotten(gone, [memory_id for memory_id in dict.fromkeys(memory_ids) if memory_id not in gone])


def page_of_memories(agent: str, limit: int, offset: int) -> Page:
    query = ChatMemory.query.filter(agent_id=agent).no_track()
    page = query.limit(limit, offset).all()
    return Page([Memory(**memory_of(record)) for record in page], query.count())


def export_memory(agent: str) -> Exported:
    lines = list(export_lines(ChatMemory, agent_id=agent))
    return Exported(agent, len(lines) - 1, "\n".join(lines) + "\n")


def erase_memory(agent: str, confirm: str) -> Erased:
    """Erase ``agent`` when ``confirm`` repeats its id; ValidationError, nothing erased, otherwise."""
    if confirm != agent:
        raise ValidationError(f"not confirmed: to erase agent {agent!r} for good, pass confirm={agent!r} "
                              "(nothing was erased)")
    done = erase_tenant(ChatMemory, agent_id=agent)
    return Erased(agent, done.erased, done.left)


def build_server(default_agent: str, agents: Iterable[str] = ()) -> Any:
    """An ``MCPServer`` with the eight tools, their arguments described in their JSON schemas, acting
    for ``default_agent`` and the allow-list ``agents`` only (:class:`~.mcp_agents.AgentBinding`)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
        from pydantic import Field
    except ImportError as exc:
        raise ConfigurationError(f"redmem mcp needs the MCP SDK: pip install 'redmem[mcp]' ({exc})") from None

    server = MCPServer("redmem", instructions=INSTRUCTIONS, log_level="WARNING")

    def tool(description: str) -> Callable[[ToolFunction], ToolFunction]:
        """Register the function as a tool; a RedmemError it raises reaches the client as an error result."""
        def register(function: ToolFunction) -> ToolFunction:
            @functools.wraps(function)
            def guarded(*args: Any, **kwargs: Any) -> Any:
                try:
                    return function(*args, **kwargs)
                except RedmemError as exc:
                    raise ToolError(str(exc)) from exc
            server.add_tool(guarded, description=description)
            strict_arguments(server._tool_manager.get_tool(function.__name__))
            return function
        return register

    binding = AgentBinding(default_agent, frozenset(agents))
    tenant = Field(default=None, min_length=1,
                   description=f"whose memory (the tenant); omit for the server's default agent {default_agent!r} "
                               f"(or the agent of your per-agent token); this server acts for {binding.describe()} "
                               f"only")

    def agent(agent_id: str | None) -> str:
        """The agent a call acts for, under the request's per-agent token if it has one, else the server's binding."""
        return (request_binding.get() or binding).resolve(agent_id)

    @tool("Store one memory (a fact, preference or turn said) for an agent. Returns its memory_id.")
    def remember(
        content: Annotated[str, Field(min_length=1, description="the text to remember")],
        speaker: Annotated[str | None, Field(description="who said it (e.g. user, assistant, a name)")] = None,
        session: Annotated[str | None, Field(description="the conversation it belongs to: turns remembered in "
                                             "one session are linked, each found by its neighbours' words")] = None,
        said_at: Annotated[str | None, Field(description="when it was said: ISO 8601 (2023-05-08T13:56:00Z, "
                                             "2023-05-08) or '1:56 pm on 8 May, 2023'; default now")] = None,
        importance: Annotated[float, Field(ge=0, description="base weight of its relevance score")] = 1.0,
        recurring: Annotated[bool, Field(description="a daily routine: surfaces on its own when due")] = False,
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Stored:
        return store_memory(agent(agent_id), content, speaker, session, importance, recurring, said_at)

    @tool("Assemble the memories relevant to a query into a context that fits a token budget (keyword, "
          "vector and graph search, fused and ranked). Returns the context text to put in a prompt and the "
          "memories in it with their memory_id, for feedback.")
    def recall(
        query: Annotated[str, Field(min_length=1, description="the user's turn or what to look for")],
        max_tokens: Annotated[int, Field(ge=1, description="token budget of the context")] = 2000,
        max_items: Annotated[int, Field(ge=1, le=100, description="most memories in the context")] = 10,
        format: Annotated[Format, Field(description="how the context is rendered")] = "structured",
        agent_id: Annotated[str | None, tenant] = None,
        explain: Annotated[bool, Field(description="also return why each memory is in the context (arms, ranks, "
                                       "fusion weights, boosts) and what was left out and why")] = False,
        as_of: Annotated[str | None, Field(min_length=1, description="read the memory as it was at this time (ISO "
                                           "8601, epoch seconds, or 'all' for every version, superseded ones too)")] = None,
    ) -> RecalledContext:
        return recall_context(agent(agent_id), query, max_tokens, max_items, format, explain, as_of)

    @tool("Report what you did with recalled memories: acted (relied on it), used (read it), dismissed "
          "(not relevant), deferred (no verdict yet) or contradicted (it is wrong). Moves each memory's "
          "confidence, relevance and routine strength.")
    def feedback(
        outcomes: Annotated[dict[str, Outcome], Field(min_length=1, description="memory_id -> outcome")],
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Reported:
        return report_outcomes(agent(agent_id), outcomes)

    @tool("Delete memories by memory_id, with everything indexed about them.")
    def forget(
        memory_ids: Annotated[list[str], Field(min_length=1, description="the memory_id of each memory to delete")],
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Forgotten:
        return forget_memories(agent(agent_id), memory_ids)

    @tool("List an agent's stored memories, a page at a time (in memory_id order), with the total count.")
    def list_memories(
        limit: Annotated[int, Field(ge=1, le=500, description="most memories returned")] = 50,
        offset: Annotated[int, Field(ge=0, le=MAX_OFFSET, description="memories skipped first")] = 0,
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Page:
        return page_of_memories(agent(agent_id), limit, offset)

    @tool("Export an agent's whole memory (every memory with its scores, vectors, links and history) as JSON "
          "Lines, for `redmem import` on another server.")
    def export(agent_id: Annotated[str | None, tenant] = None) -> Exported:
        return export_memory(agent(agent_id))

    @tool("Evict an agent's least relevant memories past `keep`, and/or those said (or last recalled) more than "
          "`older_than_days` ago; each is archived first. A dry run listing what would go unless confirm repeats "
          "the agent's id.")
    def retention(
        keep: Annotated[int | None, Field(ge=1, description="keep this many memories, the most relevant")] = None,
        older_than_days: Annotated[float | None, Field(gt=0, description="evict memories older than this")] = None,
        confirm: Annotated[str | None, Field(description="the agent's id, repeated to evict; else a dry run")] = None,
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Evicted:
        policy = retention_policy(keep, older_than_days, ("keep", "older_than_days"))
        return evict_memories(agent(agent_id), policy, confirm)

    @tool("Erase an agent's whole memory for good: every memory and everything about it. confirm must repeat the "
          "agent's id.")
    def erase(
        confirm: Annotated[str, Field(description="the id of the agent to erase, repeated to confirm")],
        agent_id: Annotated[str | None, tenant] = None,
    ) -> Erased:
        return erase_memory(agent(agent_id), confirm)

    return server

