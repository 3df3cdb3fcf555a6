"""The inspector's lifecycle actions: supersede and restore (a memory's versions are in inventory).

Offered only for a model with the lifecycle (:class:`~redmem.lifecycle.LifecycleMixin`); the
CLI's ChatMemory has it, so its pages offer both (see docs/lifecycle.md).
"""

from __future__ import annotations

from typing import Any

from ..cli_commands._as_of import parse_as_of
from ..cli_commands._inspect import find_record
from ..lifecycle import LifecycleMixin, restore, supersede
from ..store._errors import QueryArgumentError
from ._actions import Action, memory_ids_of

__all__ = ["lifecycle_actions"]


def _named(payload: dict[str, Any], name: str) -> str:
    value = payload.get(name)
    if not isinstance(value, str) or not value:
        raise QueryArgumentError(f"{name} must be a memory id")
    return value


def lifecycle_actions(model: type[Any]) -> dict[str, Action]:
    """``supersede`` (``memory_ids`` closed by the memory ``by``, at ``at`` or its start) and
    ``restore`` (``memory_ids`` made current again) over ``model``; none for a model without the lifecycle."""
    if not issubclass(model, LifecycleMixin):
        return {}

    def supersede_action(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Mark each memory named superseded by the memory ``by`` (``at``: ISO 8601 or epoch seconds)."""
        newer = find_record(model, _named(payload, "by"), agent)
        at = payload.get("at")
        end = None if at in (None, "") else parse_as_of(str(at), "at")
        if isinstance(end, str):
            raise QueryArgumentError("at must be a time (ISO 8601 or epoch seconds)")
        olders = [find_record(model, memory_id, agent) for memory_id in memory_ids_of(payload)]
        for older in olders:
            supersede(older, newer, at=end)
        return {"superseded": [o.db_key.record_id for o in olders], "by": newer.db_key.record_id}

    def restore_action(agent: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Make each memory named current again (its successor stays as it is)."""
        records = [find_record(model, memory_id, agent) for memory_id in memory_ids_of(payload)]
        for record in records:
            restore(record)
        return {"restored": [r.db_key.record_id for r in records]}

    return {"supersede": supersede_action, "restore": restore_action}
