"""Reading an outcome map: the outcome of each record of a context, checked before any write.

``ObservationProtocol.on_context_used(records, outcome_map)`` (and ``AssemblyResult.report``)
takes either one outcome for every record (``"acted"``) or a mapping from records to outcomes,
each record named in any of these forms (mixed freely):

- the record itself (records hash by class and key, so ``{record: "acted"}`` works);
- its ``db_key`` or ``db_key.redis_key`` (``rm:Memory:{agent-1}:r:<id>``);
- its record id, ``db_key.record_id``, or for a model with one non-partition key field that
  field's value (an AutoKeyField's hex id, an int key): the id must name one record of the context.

A record the mapping does not name is ``deferred``. A key naming no record of the context, an id
naming several, two outcomes for one record, an unknown outcome or a map of another type raise
:class:`OutcomeError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model._base import Model
from ..model._dbkey import DbKey
from ..store._errors import OutcomeError
from ..store._validation import instance_of
from ._access import stored_key

__all__ = ["OutcomeError", "outcomes_for", "check_records", "ACCEPTED_KEYS", "DEFAULT_OUTCOME"]

#: The outcome of a record that the outcome map does not mention.
DEFAULT_OUTCOME = "deferred"
#: How an outcome map may name a record (quoted in error messages).
ACCEPTED_KEYS = "the record, its db_key or db_key.redis_key, or its record id (db_key.record_id or its key field's value)"



def check_records(records: Any) -> list[Any]:
    """``records`` as a list of model records; OutcomeError for anything else (a str, a lone record)."""
    if isinstance(records, (str, bytes, Mapping, Model)) or not hasattr(records, "__iter__"):
        raise OutcomeError(f"records must be a list of model records, not {type(records).__name__}")
    listed: list[Any] = list(records)
    for record in listed:
        if not isinstance(record, Model):
            raise OutcomeError(f"records must hold model records, not {record!r}")
    return listed


def check_outcome(outcome: Any, known: Mapping[str, Any], about: str) -> str:
    """``outcome`` if it is one of ``known``, else OutcomeError naming ``about`` and the known ones."""
    if not isinstance(outcome, str) or outcome not in known:
        raise OutcomeError(f"unknown outcome {outcome!r} for {about}: expected one of {sorted(known)}")
    return outcome


def outcomes_for(records: list[Any], outcome_map: Any, known: Mapping[str, Any]) -> list[str]:
    """The outcome of each of ``records`` (distinct records) under ``outcome_map``; see the module docs."""
    if isinstance(outcome_map, str):
        return [check_outcome(outcome_map, known, "every record")] * len(records)
    if not isinstance(outcome_map, Mapping):
        raise OutcomeError(
            f"outcome_map must be one outcome for every record ({', '.join(sorted(known))}) or a mapping "
            f"{{record: outcome}}, not {type(outcome_map).__name__}"
        )
    index = _RecordIndex(records)
    chosen: dict[int, str] = {}
    for name, outcome in outcome_map.items():
        check_outcome(outcome, known, f"{name!r}")
        position = index.find(name)
        if chosen.setdefault(position, outcome) != outcome:
            raise OutcomeError(
                f"outcome_map gives {stored_key(records[position]).redis_key} two outcomes, "
                f"{chosen[position]!r} and {outcome!r}"
            )
    return [chosen.get(i, DEFAULT_OUTCOME) for i in range(len(records))]


#: A record name: a Redis key, or a record id (a str, or an int but not a bool).
_is_record_name = instance_of(str, int)


class _RecordIndex:
    """Where each accepted name of a record points: its position in the context's records."""

    def __init__(self, records: list[Any]) -> None:
        self.by_key: dict[str, int] = {}
        self.by_id: dict[Any, set[int]] = {}
        for position, record in enumerate(records):
            key = stored_key(record)
            self.by_key[key.redis_key] = position
            self.by_id.setdefault(key.record_id, set()).add(position)
            ids = record._meta.id_fields
            if len(ids) == 1 and getattr(record, ids[0]) is not None:
                self.by_id.setdefault(getattr(record, ids[0]), set()).add(position)
        self.records = records

    def find(self, given: Any) -> int:
        """The position of the record ``given`` names; OutcomeError when it names none, or several."""
        name = stored_key(given) if isinstance(given, Model) else given
        if isinstance(name, DbKey):
            name = name.redis_key
        if not _is_record_name(name):
            raise OutcomeError(f"outcome_map key {given!r} ({type(given).__name__}) is no record name: use {ACCEPTED_KEYS}")
        if name in self.by_key:
            return self.by_key[name]
        found = self.by_id.get(name, set())
        if len(found) == 1:
            return next(iter(found))
        if found:
            keys = sorted(stored_key(self.records[p]).redis_key for p in found)
            raise OutcomeError(f"outcome_map key {given!r} is the id of several records of the context ({keys}): "
                               "name them by record or db_key.redis_key")
        raise OutcomeError(f"outcome_map key {given!r} names no record of the context: use {ACCEPTED_KEYS} "
                           "of one of the records passed")
