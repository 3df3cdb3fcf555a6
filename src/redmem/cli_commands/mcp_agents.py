"""Which agents an MCP server acts for: the one it was started for (``--agent``) and, opted in,
an allow-list (``--agents``). A tool call naming any other ``agent_id`` is refused, so a client
cannot read, recall or delete another tenant's memories by naming it."""

import argparse
from dataclasses import dataclass

from ..store.errors import RedmemError

__all__ = ["AgentBinding", "AgentNotServed", "agent_list"]


class AgentNotServed(RedmemError, PermissionError):
    """A tool call named an agent the server was not started for (neither ``--agent`` nor in ``--agents``)."""


@dataclass(frozen=True)
class AgentBinding:
    """The server's own agent (``default``, the agent of calls that name none) and the others it may act for."""

    default: str
    others: frozenset[str] = frozenset()

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
        raise AgentNotServed(f"agent_id {agent_id!r} refused: this MCP server acts for {served} only "
                             f"(its --agent and --agents); nothing was read or written")

    def describe(self) -> str:
        """``agent 'ana'`` or ``agents 'ana', 'bo' (default 'ana')``, for the start-up line and the schemas."""
        if not self.others - {self.default}:
            return f"agent {self.default!r}"
        return f"agents {', '.join(repr(agent) for agent in self.agents)} (default {self.default!r})"


def agent_list(text: str) -> frozenset[str]:
    """The ``--agents`` value: comma-separated agent ids, none empty."""
    agents = [agent.strip() for agent in text.split(",")]
    if not all(agents):
        raise argparse.ArgumentTypeError(f"{text!r}: give agent ids separated by commas, none empty")
    return frozenset(agents)
