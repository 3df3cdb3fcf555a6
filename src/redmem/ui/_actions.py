"""The inspector's writes, each behind a confirmed POST: forget, feedback, export, and the hook for more.

An action is a function of ``(agent, payload)`` returning plain data, registered by name in
:data:`ACTIONS`; a lifecycle API (supersede, restore) joins with :func:`register_action`.
Errors are the library's typed ones (a RedmemError), shown by the page with their type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cli_commands._memory import ChatMemory
from ..cli_commands.mcp_server import forget_memories, memory_of, report_outcomes
from ..store._errors import QueryArgumentError

__all__ = ["ACTIONS", "Action", "register_action", "run_action", "memory_ids_of"]

Action = Callable[[str, dict[str, Any]], dict[str, Any]]
EXPORT_PAGE = 500


def memory_ids_of(payload: dict[str, Any]) -> list[str]:
    """The payload's ``memory_ids``; QueryArgumentError unless a non-empty list of ids."""
    ids = payload.get("memory_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise QueryArgumentError("memory_ids must be a non-empty list of memory ids")
    return ids


def forget(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Delete the memories named, with everything indexed about them."""
    done = forget_memories(agent, memory_ids_of(payload))
    return {"forgotten": done.forgotten, "not_found": done.not_found}


def feedback(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Report an outcome (acted, used, dismissed, deferred, contradicted) for each memory named."""
    outcomes = payload.get("outcomes")
    if not isinstance(outcomes, dict) or not outcomes:
        raise QueryArgumentError("outcomes must map memory ids to an outcome")
    return {"outcomes": report_outcomes(agent, outcomes).outcomes}


def export(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The agent's memories as JSON (``memory_ids`` to pick some), read a page at a time."""
    query = ChatMemory.query.filter(agent_id=agent).no_track()
    if payload.get("memory_ids"):
        picked = [query.get(agent_id=agent, memory_id=i) for i in memory_ids_of(payload)]
        return {"agent": agent, "memories": [memory_of(r) for r in picked if r is not None]}
    memories, offset = [], 0
    while page := query.limit(EXPORT_PAGE, offset).all():
        memories += [memory_of(r) for r in page]
        offset += EXPORT_PAGE
    return {"agent": agent, "memories": memories}


#: Actions by name; the page offers each one the server lists.
ACTIONS: dict[str, Action] = {"forget": forget, "feedback": feedback, "export": export}


def register_action(name: str, action: Action) -> None:
    """Offer ``action`` (e.g. supersede or restore) on the page under ``name``."""
    ACTIONS[name] = action


def run_action(name: str, agent: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Run the action ``name``; QueryArgumentError for an unknown one."""
    action = ACTIONS.get(name)
    if action is None:
        raise QueryArgumentError(f"unknown action {name!r}; use one of {sorted(ACTIONS)}")
    return action(agent, payload)
