"""The tenant a recipe call searches: exactly the model's partition fields, given as keywords.

A recipe never picks a tenant for the caller (not the one of an earlier call, not every one):
one assembler usually serves many agents, so a guessed tenant would show one agent another's
memories. A call that names no tenant, or the wrong fields, is refused with the call to write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..store.errors import QueryException

if TYPE_CHECKING:
    from ..model.base import Model

__all__ = ["require_tenant"]


def require_tenant(model: type[Model], partition: dict[str, Any], call: str) -> None:
    """Raise QueryException, naming the keyword arguments to add, unless ``partition`` gives
    exactly the partition fields of ``model`` (none for an unpartitioned model)."""
    expected = list(model._meta.partition_fields)
    if set(partition) == set(expected):
        return
    if not expected:
        raise QueryException(
            f"{call}() on {model.__name__} takes no tenant: the model has no partition fields, "
            f"got {sorted(partition)}"
        )
    keywords = ", ".join(f'{name}="<tenant>"' for name in expected)
    raise QueryException(
        f"{call}() on {model.__name__} needs its tenant: pass the partition field(s) {expected} as "
        f"keyword arguments, e.g. assembler.{call}(query_cues, {keywords}); got {sorted(partition) or 'none'}. "
        "redmem searches one tenant's memories per call, never across tenants"
    )
