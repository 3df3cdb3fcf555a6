"""Which agents an MCP server acts for: the one it was started for (``--agent``) and, opted in,
an allow-list (``--agents``), or over HTTP the one agent of the request's per-agent token
(``--agent-tokens``). A tool call naming any other ``agent_id`` is refused, so a client cannot
read, recall or delete another tenant's memories by naming it."""

import argparse
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from ..store._errors import AgentNotServed, ConfigurationError

__all__ = ["AgentBinding", "AgentNotServed", "agent_list", "agent_tokens", "request_binding"]



@dataclass(frozen=True)
class AgentBinding:
    """The agent of calls that name none (``default``) and the others they may name, granted by ``grant``."""

    default: str
    others: frozenset[str] = frozenset()
    grant: str = "this MCP server (its --agent and --agents)"

    @property
    def agents(self) -> list[str]:
        """Every agent served: the default first, then the allow-list in order."""
        return [self.default, *sorted(self.others - {self.default})]

    def resolve(self, agent_id: str | None) -> str:
        """The agent a call acts for: ``agent_id`` if served, the default if None; AgentNotServed otherwise."""
        if agent_id is None or agent_id == self.default:
            return self.default
        if agent_id in self.others:
            return agent_id
        served = ", ".join(repr(agent) for agent in self.agents)
        raise AgentNotServed(f"agent_id {agent_id!r} refused: {self.grant} acts for {served} only; "
                             f"nothing was read or written")

    def describe(self) -> str:
        """``agent 'ana'`` or ``agents 'ana', 'bo' (default 'ana')``, for the start-up line and the schemas."""
        if not self.others - {self.default}:
            return f"agent {self.default!r}"
        return f"agents {', '.join(repr(agent) for agent in self.agents)} (default {self.default!r})"


#: The binding of the HTTP request being served when its token is a per-agent one (set by the
#: bearer check, seen by the tool calls the request carries); None: the server's own binding.
request_binding: ContextVar["AgentBinding | None"] = ContextVar("request_binding", default=None)


def agent_tokens(path: Path) -> dict[str, "AgentBinding"]:
    """The ``--agent-tokens`` file: one ``agent_id token`` pair a line (blank lines and ``#`` comments
    skipped), as token -> the binding to that agent alone. ConfigurationError naming the line otherwise."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"--agent-tokens {str(path)!r} cannot be read: {exc}") from None
    tokens: dict[str, AgentBinding] = {}
    for number, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 2 or words[1] in tokens:
            problem = "a token given twice" if len(words) == 2 else "not 'agent_id token'"
            raise ConfigurationError(f"--agent-tokens {str(path)!r} line {number}: {problem}")
        tokens[words[1]] = AgentBinding(words[0], grant="the request's per-agent token")
    if not tokens:
        raise ConfigurationError(f"--agent-tokens {str(path)!r} holds no 'agent_id token' line")
    return tokens


def agent_list(text: str) -> frozenset[str]:
    """The ``--agents`` value: comma-separated agent ids, none empty."""
    agents = [agent.strip() for agent in text.split(",")]
    if not all(agents):
        raise argparse.ArgumentTypeError(f"{text!r}: give agent ids separated by commas, none empty")
    return frozenset(agents)
