"""What the time-scored primitives (decay, cyclic, composite) share: times, declared parameters,
base scores, stamps of a record's score in its sorted sets, and the candidate selection of
``decay_select.lua`` (Fagin's threshold algorithm over per-partition sorted sets).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..model._codecs import finite_float
from ..model._dbkey import DbKey
from ..model._field import Field
from ..store._connection import server_errors
from ..store._errors import ModelException, ValidationError
from ..store._scripts import ScriptCall, queue_script, run_script
from ..store._validation import timestamp

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = [
    "epoch_seconds",
    "check_base_field",
    "base_score",
    "declared_float",
    "non_negative",
    "run_or_queue",
    "stamp",
    "stored_key",
    "rows_of",
    "select_call",
    "select_rows",
    "select_candidates",
    "best_first",
    "SELECTION_EPS",
]

#: Slack of the Lua candidate selection, relative to ``1 + |score|``: the Lua keeps every record
#: that could rank within it, Python then ranks the candidates by the exact formulas.
SELECTION_EPS = 1e-9

#: A selected record: its id and one value (None: no entry) per sorted set read.
Row = tuple[str, list[float | None]]


# -- times and declared parameters ---------------------------------------------------------------
def epoch_seconds(value: datetime | float | int | None = None, name: str = "as_of") -> float:
    """Seconds since the epoch of a datetime (naive taken as UTC) or a finite number; now for None.

    ``name`` is the argument's name in the error a bad value raises (see :func:`~redmem.store._validation.timestamp`).
    """
    return timestamp(name, value)


def declared_float(value: Any, what: str) -> float:
    """A declared parameter as a finite float, else ModelException."""
    try:
        return finite_float(value, what)
    except ValidationError as exc:
        raise ModelException(str(exc)) from exc


def non_negative(value: Any, what: str) -> float:
    """A declared parameter as a finite float >= 0, else ModelException."""
    number = declared_float(value, what)
    if number < 0:
        raise ModelException(f"{what} must be >= 0, got {number}")
    return number


# -- base scores ---------------------------------------------------------------------------------
def check_base_field(model: Any, name: str | None, label: str) -> None:
    """A base score field must be a stored int or float field of the model."""
    if name is None:
        return
    field = getattr(model, name, None)
    if not isinstance(field, Field) or not field.stored or field.python_type not in (int, float):
        raise ModelException(f"{label}: base_score_field {name!r} must name an int or float field")


def base_score(instance: Any, name: str | None, label: str) -> float:
    """The record's base score: its ``name`` field (None: 1.0); must be finite and >= 0.

    A bad value raises ValidationError naming that field, the one the caller set (``label``,
    the scoring field, is said second).
    """
    value = getattr(instance, name) if name else None
    if value is None:
        return 1.0
    where = f"{type(instance).__name__}.{name} (the base score of {label})"
    base = finite_float(value, where)
    if base < 0:
        raise ValidationError(f"{where} must be >= 0, got {base}")
    return base


# -- writes of one record ------------------------------------------------------------------------
def run_or_queue(name: str, keys: list[str], args: list[Any], pipeline: Any, client: Any) -> Any:
    """Run a script now and return its reply, or queue it on ``pipeline`` and return None."""
    if pipeline is not None:
        queue_script(pipeline, name, keys, args)
        return None
    with server_errors(client):
        return run_script(name, keys, args, client)


def stamp(key: DbKey, zsets: list[str], value: float, pipeline: Any, client: Any) -> bool | None:
    """Set the record's score in ``zsets`` if it exists: True/False, or None when queued."""
    reply = run_or_queue("decay_stamp", [key.redis_key, *zsets], [key.record_id, repr(value)], pipeline, client)
    return None if pipeline is not None else bool(reply)


def stored_key(instance: Model) -> DbKey:
    """Where the record was loaded from or saved to (else where its key fields put it)."""
    return instance._saved_key or instance.db_key


# -- candidate selection -------------------------------------------------------------------------
def rows_of(reply: list[Any], width: int) -> list[Row]:
    """Parse ``{id, s1..s_width, id, ..}`` into (record id, floats or None)."""
    rows = []
    for i in range(0, len(reply), width + 1):
        values = [float(raw) if raw else None for raw in reply[i + 1 : i + 1 + width]]
        rows.append((reply[i].decode(), values))
    return rows


def select_call(keys: list[str], plan: dict[str, Any]) -> ScriptCall:
    """The ``decay_select.lua`` call for ``plan`` (its reply goes to :func:`select_rows`)."""
    return ScriptCall("decay_select", keys, [json.dumps({"eps": SELECTION_EPS, **plan})])


def select_rows(reply: list[Any], keys: list[str]) -> list[Row]:
    """Rows of a ``decay_select`` reply: (record id, one value per key)."""
    return rows_of(reply, len(keys))


def select_candidates(client: Any, keys: list[str], plan: dict[str, Any]) -> list[Row]:
    """Run ``decay_select.lua`` (one round trip): a superset of the answer, values per key."""
    plan = {"eps": SELECTION_EPS, **plan}
    with server_errors(client):
        reply = run_script("decay_select", keys, [json.dumps(plan)], client)
    return rows_of(reply, len(keys))


def best_first(scored: list[tuple[str, float]], n: int | None) -> list[tuple[str, float]]:
    """Highest score first, ties by record id ascending, cut to ``n``."""
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored if n is None else scored[:n]
