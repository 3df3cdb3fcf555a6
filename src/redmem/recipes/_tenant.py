"""The tenant a recipe call searches: exactly the model's partition fields, given as keywords.

A recipe never picks a tenant for the caller (not the one of an earlier call, not every one):
one assembler usually serves many agents, so a guessed tenant would show one agent another's
memories. A call that names no tenant, or the wrong fields, is refused with the call to write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..store._errors import QueryException
from ..store._validation import tenant

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = ["require_tenant"]


def require_tenant(model: type[Model], partition: dict[str, Any], call: str) -> None:
    """Raise QueryException, naming the keyword arguments to add (or, for an unpartitioned model,
    the ``Meta.partition_by`` line to declare), unless ``partition`` gives exactly the partition
    fields of ``model``; ValidationError for an empty or blank tenant."""
    expected = list(model._meta.partition_fields)
    if set(partition) == set(expected):
        for name, value in partition.items():
            tenant(f"{model.__name__}.{name}", value)
        return
    if not expected:
        given = ", ".join(f"{name!r}" for name in sorted(partition))
        names = tuple(sorted(partition))
        raise QueryException(
            f"{call}() on {model.__name__} got the tenant {{{given}}}, but {model.__name__} is not partitioned, "
            f"so its records are shared by every tenant. To keep each tenant's records apart, declare the "
            f"tenant once on the model (a KeyField of that name):\n\n"
            f"    class {model.__name__}(Model):\n        class Meta:\n"
            f"            partition_by = {names[0] if len(names) == 1 else names!r}\n\n"
            f"or, if its records are meant to be shared, call {call}() without a tenant"
        )
    keywords = ", ".join(f'{name}="<tenant>"' for name in expected)
    raise QueryException(
        f"{call}() on {model.__name__} needs its tenant: pass the partition field(s) {expected} as "
        f"keyword arguments, e.g. assembler.{call}(query_cues, {keywords}); got {sorted(partition) or 'none'}. "
        "redmem searches one tenant's memories per call, never across tenants"
    )
