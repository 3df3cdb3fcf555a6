"""The agents the commands act for: the default one, the ones holding memories, and the refusal of an
agent that holds none (a typo would otherwise read as an empty memory)."""

from __future__ import annotations

import argparse

from ..model._registry import listed_partitions
from ..store._errors import ValidationError
from ._memory import ChatMemory
from ._runtime import Runtime

__all__ = ["DEFAULT_AGENT", "add_agent_argument", "agents_here", "memory_count", "require_memories"]

#: The agent of the data commands when ``--agent`` is not given (``redmem demo`` keeps its own, ``demo``).
DEFAULT_AGENT = "default"


def add_agent_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--agent``, defaulting to :data:`DEFAULT_AGENT`; ``what`` says what the agent is to the command."""
    parser.add_argument("--agent", default=DEFAULT_AGENT, help=f"{what} (default: {DEFAULT_AGENT})")


def agents_here() -> list[str]:
    """The agents holding memories under the current key prefix (from the partition registry)."""
    meta = ChatMemory._meta
    return [space.partition_values[0] for space in listed_partitions(meta, meta.client)]


def memory_count(agent: str) -> int:
    return ChatMemory.query.filter(agent_id=agent).count()


def require_memories(agent: str, runtime: Runtime) -> int:
    """How many memories ``agent`` holds; ValidationError naming the agents that hold some when it holds none."""
    count = memory_count(agent)
    if count:
        return count
    others = ", ".join(repr(name) for name in agents_here()) or "none"
    raise ValidationError(f"agent {agent!r} has no memories ({runtime.location}); agents with memories here: {others}")
