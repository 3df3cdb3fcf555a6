"""A tenant's data as a whole: erased in one call, exported to JSON Lines, imported elsewhere.

A tenant is one partition value of a model (``agent_id="a"``) and every key under the model's
key prefix that shares its hash tag: the records of every model partitioned by that value (the
memories and, e.g., the recall proposals about them), every index, vector, graph edge, access
log, operation key, and any key kind added later (:mod:`redmem.store._tenant_keys`). The
export's first line is a header naming the model and the tenant; each further line is one key
(:func:`~redmem.store._tenant_keys.dump_keys`). Importing it writes the same keys, byte for byte,
under the same key prefix, lists the tenant in the partition registries again, and gives the
vector and BM25 indexes a new cache epoch (:func:`~redmem.fields._restore.new_cache_epoch`), so no
process keeps a cache of the tenant from before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from ..fields._restore import new_cache_epoch
from ..model._registry import relist, unregister
from ..store._errors import ValidationError
from ..store._keys import KeySpace
from ..store._tenant_keys import TenantKeys, dump_keys, erase_tenant_keys, list_tenant_keys, restore_keys
from ._tenant import require_tenant

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = ["TenantErased", "erase_tenant", "export_tenant", "import_tenant", "tenant_key_count", "EXPORT_FORMAT"]

#: The ``format`` of an export's header line.
EXPORT_FORMAT = "redmem-tenant/1"


@dataclass(frozen=True)
class TenantErased:
    """What :func:`erase_tenant` did: keys unlinked, keys found left by the check after (0 when
    complete), and whether the partition registry listed the tenant."""

    erased: int
    left: int
    unregistered: bool

    @property
    def complete(self) -> bool:
        return self.left == 0


def tenant_space(model: type[Model], partition: dict[str, Any], call: str) -> KeySpace:
    """The key space of the tenant ``partition`` names (refused unless it gives exactly the
    model's partition fields: :func:`~.tenant.require_tenant`)."""
    require_tenant(model, partition, call)
    meta = model._meta
    return meta.keyspace(tuple(partition[name] for name in meta.partition_fields))


def tenant_keys(model: type[Model], partition: dict[str, Any], call: str) -> TenantKeys:
    return TenantKeys.of(tenant_space(model, partition, call))


def tenant_key_count(model: type[Model], **partition: Any) -> int:
    """How many keys the tenant has (0: nothing of it is stored)."""
    return len(list_tenant_keys(model._meta.client, tenant_keys(model, partition, "tenant_key_count")))


def erase_tenant(model: type[Model], **partition: Any) -> TenantErased:
    """Delete every key of one tenant of ``model`` and its registry entry, then check none is left.

    ``erase_tenant(Memory, agent_id="a")``. Keys of the tenant written by another client while
    it runs are erased too (a few passes); :attr:`TenantErased.left` counts any still appearing.
    """
    meta = model._meta
    tenant = tenant_keys(model, partition, "erase_tenant")
    erased, left, models = erase_tenant_keys(meta.client, tenant)
    listed = False
    if meta.partition_registry:
        for name in sorted(models | {meta.name}):
            listed |= unregister(meta.client, tenant.prefix, name, tenant.tag)
    return TenantErased(erased, left, listed)


def export_lines(model: type[Model], **partition: Any) -> Iterator[str]:
    """The export of one tenant, line by line (no newline): the header, then one key per line."""
    tenant = tenant_keys(model, partition, "export_tenant")
    header = {"format": EXPORT_FORMAT, "model": model._meta.name, "partition": partition}
    yield json.dumps(header, ensure_ascii=False, default=str)
    for dump in dump_keys(model._meta.client, tenant):
        yield json.dumps(dump, ensure_ascii=False, separators=(",", ":"))


def export_tenant(model: type[Model], out: IO[str], **partition: Any) -> int:
    """Write one tenant of ``model`` to ``out`` as JSON Lines; returns how many keys it holds."""
    lines = 0
    for line in export_lines(model, **partition):
        out.write(line + "\n")
        lines += 1
    return lines - 1


def import_tenant(model: type[Model], lines: Iterable[str]) -> tuple[dict[str, Any], int]:
    """Write an export (its lines) into ``model``'s tenant; returns (the tenant, keys written).

    Refused with ValidationError, nothing written, when the export is of another model or not an
    export, or when the tenant already holds keys here (erase it first).
    """
    rows = (line for line in lines if line.strip())
    header = _header(next(rows, ""), model)
    partition = header["partition"]
    tenant = tenant_keys(model, partition, "import_tenant")
    client = model._meta.client
    existing = len(list_tenant_keys(client, tenant))
    if existing:
        raise ValidationError(f"tenant {partition} of {model._meta.name} already holds {existing} keys here: "
                              "erase it first (nothing was imported)")
    written, models = restore_keys(client, tenant, (_row(line) for line in rows))
    if model._meta.partition_registry:
        relist(client, tenant.prefix, sorted(models | {model._meta.name}), tenant.tag)
    new_cache_epoch(model, **partition)
    return partition, written


def _header(line: str, model: type[Model]) -> dict[str, Any]:
    header = _row(line) if line.strip() else {}
    if header.get("format") != EXPORT_FORMAT:
        raise ValidationError(f"not a redmem tenant export (its first line should have format {EXPORT_FORMAT!r})")
    if header.get("model") != model._meta.name:
        raise ValidationError(f"this export holds a {header.get('model')!r} tenant, not a {model._meta.name!r} one")
    if not isinstance(header.get("partition"), dict):
        raise ValidationError("the export's header names no tenant")
    return header


def _row(line: str) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"an export line is not JSON: {exc}") from None
    if not isinstance(row, dict):
        raise ValidationError("an export line is not a JSON object")
    return row
