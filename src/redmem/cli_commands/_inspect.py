"""``redmem inspect KEY``: everything stored about one memory, read without side effects.

KEY is a record's Redis key (``<prefix>:<Model>:{<partition>}:r:<id>``, as ``ask`` prints),
or with ``--agent`` the record id, or an unambiguous start of it. Shown: the fields; per
primitive of the model, its state (decayed score and clock, cyclic score and learned
amplitudes, confidence and evidence, graph edges with their neighbours); the access count,
log and staged reads; the record's pending recall proposal. Records are loaded with
``no_track()``, so inspecting stages no read.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..fields._confidence import ConfidenceField
from ..fields._cooccurrence import CoOccurrenceField
from ..fields._cyclic import CyclicDecayField
from ..fields._decay import DecayingSortedField
from ..model._dbkey import DbKey
from ..model._loading import load_records
from ..model._persistence import ALL_RECORDS
from ..observation._access import AccessTrackerMixin
from ..observation._proposals import RecallProposal
from ..store._connection import server_errors
from ..store._errors import QueryException, RecordNotFound
from ..store._keys import unescape
from ._display import number
from ._memory import ChatMemory
from ._runtime import import_model, print_notes, start

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = ["add_arguments", "run", "find_record", "parse_key"]

#: Shortest id start accepted in place of a whole id.
MIN_ID_PREFIX = 4
EDGES_SHOWN = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", help="a record's Redis key, or with --agent its id (or the start of it)")
    parser.add_argument("--agent", help="the partition to look the id up in")
    parser.add_argument("--model", help="MODULE:Class of the record (default: the CLI's ChatMemory)")


def parse_key(key: str, model: type[Model]) -> DbKey | None:
    """The DbKey a Redis key names, None if ``key`` is not a record key; QueryException for another model."""
    parsed = DbKey.parse(key)
    if parsed is not None and parsed.keyspace.model != model._meta.name:
        other = parsed.keyspace.model
        raise QueryException(f"{key} is a {other} record; pass --model MODULE:{other}")
    return parsed


def _key_values(model: type[Model], key: DbKey) -> dict[str, Any]:
    """The key field values a DbKey encodes, decoded by their fields."""
    meta = model._meta
    parts = list(key.keyspace.partition_values) + [unescape(p) for p in key.record_id.split(":")]
    names = list(meta.partition_fields) + list(meta.id_fields)
    return {name: meta.fields[name].decode(part.encode()) for name, part in zip(names, parts)}


def _by_id_prefix(model: type[Model], agent: str, start: str) -> DbKey:
    """The one record of the partition whose id is, or starts with, ``start``."""
    space = model.query.filter(**{model._meta.partition_fields[0]: agent}).partition()
    client = model._meta.client
    with server_errors(client):
        found = client.zrangebylex(space.key(ALL_RECORDS), b"[" + start.encode(), b"[" + start.encode() + b"\xff", 0, 3)
    ids = [raw.decode() for raw in found]
    if start in ids or (len(ids) == 1 and len(start) >= MIN_ID_PREFIX):
        return DbKey(space, start if start in ids else ids[0])
    reason = "no record" if not ids else "several records" if len(start) >= MIN_ID_PREFIX else "a too short prefix"
    raise RecordNotFound(f"{start!r} in agent {agent!r}: {reason} (give at least {MIN_ID_PREFIX} characters)")


def find_record(model: type[Model], key: str, agent: str | None) -> Any:
    """The record ``key`` names (module docstring), loaded without tracking; RecordNotFound if none."""
    db_key = parse_key(key, model)
    if db_key is None:
        if agent is None or len(model._meta.partition_fields) != 1:
            raise QueryException(f"{key!r} is not a record key; give the full key, or --agent with an id")
        db_key = _by_id_prefix(model, agent, key)
    record = model.query.no_track().get(**_key_values(model, db_key))
    if record is None:
        raise RecordNotFound(f"no record stored at {db_key.redis_key}")
    return record


def _when(seconds: float | None) -> str:
    return "-" if seconds is None else datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _section(title: str) -> Table:
    table = Table(title=title, title_justify="left", show_header=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    return table


def _describe(field: Any, record: Any) -> tuple[str, str] | None:
    """(kind, state) of a scoring primitive for the record; None for other fields."""
    key = record._saved_key
    if isinstance(field, DecayingSortedField):
        client = record._meta.client
        with server_errors(client):
            clock = client.zscore(field.keys_in(key.keyspace).updated, key.record_id)
        return "decay", f"{number(field.score_of(record), 4)} now; clock at {_when(clock)}"
    if isinstance(field, CyclicDecayField):
        amplitudes = ", ".join(f"{cycle}: {value:.4f}" for cycle, value in field.amplitudes_of(record).items())
        return "cyclic", f"{number(field.score_of(record), 4)} now; learned amplitudes {amplitudes}"
    if isinstance(field, ConfidenceField):
        data = ConfidenceField.get_confidence_data(record, field.name)
        return "confidence", (f"{data['confidence']:.4f} from {data['evidence_count']} signals "
                              f"({data['corroborations']} corroborating, {data['contradictions']} contradicting)")
    return None


def _primitives(record: Any) -> Table:
    """One row per scoring primitive of the record's model."""
    table = _section("scores")
    for field in record._meta.fields.values():
        described = _describe(field, record)
        if described is not None:
            table.add_row(f"{field.name} ({described[0]})", described[1])
    return table


def _edges(record: Any, field: CoOccurrenceField) -> Table:
    """The record's strongest edges, with each neighbour's text when it is a record."""
    linked = field.get_linked(record, min_weight=0.0, limit=EDGES_SHOWN)
    keys = [node for node, _ in linked if isinstance(node, DbKey)]
    neighbours = {r._saved_key: r for r in load_records(type(record), keys, track=False)}
    table = Table(title=f"edges ({field.name}, strongest first)", title_justify="left")
    for name in ("weight", "neighbour", "content"):
        table.add_column(name, overflow="fold")
    for node, weight in linked:
        other = neighbours.get(node)
        table.add_row(f"{weight:.3f}", Text(str(node)), Text(str(getattr(other, "content", None) or "")))
    if not linked:
        table.add_row("-", "no edges", "")
    return table


def _access(record: AccessTrackerMixin) -> Table:
    table = _section("access")
    table.add_row("confirmed accesses", str(record.access_count))
    table.add_row("last confirmed", _when(record.last_accessed))
    table.add_row("access log", ", ".join(_when(t) for t in record.access_log[:5]) or "-")
    table.add_row("staged reads", ", ".join(_when(t) for t in record.staged_accesses) or "-")
    proposal = RecallProposal.for_record(record)
    table.add_row("recall proposal", "-" if proposal is None else
                  f"{proposal.status} (surfaced {_when(proposal.surfaced_at)}: {proposal.reason})")
    return table


def run(console: Console, args: argparse.Namespace) -> None:
    print_notes(console, start(args))
    model = import_model(args.model) if args.model else ChatMemory
    record = find_record(model, args.key, args.agent)
    fields = _section(escape(record._saved_key.redis_key))
    for name, value in record.to_dict().items():
        fields.add_row(name, Text("-" if value is None else str(value)))
    console.print(fields)
    console.print(_primitives(record))
    for field in record._meta.fields_of(CoOccurrenceField):
        console.print(_edges(record, field))
    if isinstance(record, AccessTrackerMixin):
        console.print(_access(record))
