"""Retention: how many memories a tenant keeps, and for how long; evicted ones archived or deleted.

A model declares its policy as a class attribute, ``retention = Retention(max_memories=1000)``,
and :func:`apply_retention` enforces it on one tenant when called (:func:`plan_retention`
lists what it would evict, changing nothing) (after writes, or on a
schedule; saves never evict on their own, so a write stays one round trip and nothing is lost
behind the caller's back). Two rules, either or both:

- ``ttl_seconds``: a memory whose decay clock (the last-updated time of the model's
  :class:`~redmem.fields._decay.DecayingSortedField`: created or last touched) is older goes;
- ``max_memories``: past the cap, the memories with the lowest decayed value at ``now`` go
  (the field's own ranking, confidence modulation included).

With ``archive=True`` (the default) each evicted memory's stored fields are first appended to
the tenant's archive stream (``RetentionKeyKind.ARCHIVE``, ``<prefix>:<Model>:{<tenant>}:arc``: the
record hash's fields plus ``record_id``, ``reason`` and ``evicted_at``), then the record is
deleted with every index entry. The archive is the tenant's: exported, imported and erased with
it. ``archive=False`` deletes outright.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum, unique
from typing import TYPE_CHECKING, Any

from ..fields._decay import DecayingSortedField
from ..model._dbkey import DbKey
from ..model._loading import load_records
from ..store._connection import server_errors
from ..store._errors import ConfigurationError
from ..store._keys import KeySpace
from ..store._validation import positive_int
from ._tenant_data import tenant_space

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = ["RetentionKeyKind", "Retention", "RetentionReport", "apply_retention", "plan_retention", "archived"]


@unique
class RetentionKeyKind(StrEnum):
    """Retention's kinds of key (the core kinds are :class:`~redmem.store._keys.KeyKind`; every owner's
    values are distinct, ``tests/unit/store/test_keys.py``)."""

    #: stream: records a retention policy evicted with archiving on, one entry per record (its hash fields)
    ARCHIVE = "arc"


@dataclass(frozen=True)
class Retention:
    """A model's retention policy (see the module docstring); ``field``: the decaying field to rank
    and age by (default: the model's only one)."""

    max_memories: int | None = None
    ttl_seconds: float | None = None
    archive: bool = True
    field: str | None = None

    def __post_init__(self) -> None:
        if self.max_memories is not None:
            positive_int("Retention.max_memories", self.max_memories)
        if self.ttl_seconds is not None and not self.ttl_seconds > 0:
            raise ConfigurationError(f"Retention.ttl_seconds must be above 0, not {self.ttl_seconds!r}")


@dataclass(frozen=True)
class RetentionReport:
    """The record ids evicted, by reason, and whether they were archived first."""

    expired: list[str]
    over_cap: list[str]
    archived: bool

    @property
    def evicted(self) -> int:
        return len(self.expired) + len(self.over_cap)


def plan_retention(model: type[Model], now: float | None = None, policy: Retention | None = None,
                   **partition: Any) -> RetentionReport:
    """What :func:`apply_retention` would evict from one tenant at ``now``, nothing changed
    (a dry run); ``policy`` in place of ``model.retention``."""
    policy = _policy(model, policy)
    decay = _decay_field(model, policy.field)
    space = tenant_space(model, partition, "apply_retention")
    now = time.time() if now is None else now
    client = model._meta.client
    expired: list[str] = []
    if policy.ttl_seconds is not None:
        with server_errors(client):
            old = client.zrangebyscore(decay.keys_in(space).updated, "-inf", f"({now - policy.ttl_seconds!r}")
        expired = sorted(raw.decode() for raw in old)
    over_cap: list[str] = []
    if policy.max_memories is not None:
        total = model.query.filter(**partition).count()
        if total - len(expired) > policy.max_memories:
            gone = set(expired)
            ranked = [rid for rid, _ in decay.ranked(space, now, total) if rid not in gone]
            over_cap = ranked[policy.max_memories :]
    return RetentionReport(expired, over_cap, policy.archive)


def apply_retention(model: type[Model], now: float | None = None, policy: Retention | None = None,
                    **partition: Any) -> RetentionReport:
    """Enforce ``model.retention`` (or ``policy``) on one tenant at ``now`` (epoch seconds, default now)."""
    now = time.time() if now is None else now
    report = plan_retention(model, now, policy, **partition)
    space = tenant_space(model, partition, "apply_retention")
    for reason, ids in (("expired", report.expired), ("over_cap", report.over_cap)):
        _evict(model, space, ids, reason, now, report.archived)
    return report


def archived(model: type[Model], **partition: Any) -> list[dict[str, str]]:
    """The tenant's archive, oldest eviction first: each evicted record's stored fields (as text)
    with ``record_id``, ``reason`` and ``evicted_at``."""
    space = tenant_space(model, partition, "archived")
    client = model._meta.client
    with server_errors(client):
        entries = client.xrange(space.key(RetentionKeyKind.ARCHIVE))
    return [{k.decode(): v.decode("utf-8", "replace") for k, v in fields.items()} for _, fields in entries]


def _policy(model: type[Model], policy: Retention | None) -> Retention:
    chosen = getattr(model, "retention", None) if policy is None else policy
    if not isinstance(chosen, Retention):
        raise ConfigurationError(f"{model.__name__} declares no retention: set retention = Retention(...) on it")
    return chosen


def _decay_field(model: type[Model], name: str | None) -> DecayingSortedField:
    fields = model._meta.fields_of(DecayingSortedField)
    chosen = [f for f in fields if name is None or f.name == name]
    if len(chosen) != 1:
        raise ConfigurationError(f"{model.__name__} retention needs one DecayingSortedField (name it with "
                                 f"Retention(field=...)); found {[f.name for f in fields]}")
    return chosen[0]


def _evict(model: type[Model], space: KeySpace, ids: list[str], reason: str, now: float, archive: bool) -> None:
    """Archive (when asked) then delete each record: an interrupted run leaves a record archived
    twice at worst, never lost."""
    client = model._meta.client
    for record in load_records(model, [DbKey(space, rid) for rid in ids], track=False):
        if archive:
            with server_errors(client):
                stored = client.hgetall(record.db_key.redis_key)
                client.xadd(space.key(RetentionKeyKind.ARCHIVE), {**stored, b"record_id": record.db_key.record_id,
                                                          b"reason": reason, b"evicted_at": repr(now)})
        record.delete()
