"""Save and load a session's Redis state as a portable, versioned JSON export.

The export is one file, ``<directory>/hce-session.json``::

    {"format": "redmem.hce.session", "version": 1, "session_id": "user-42",
     "sha256": "<of the canonical JSON of keys>", "keys": [
        {"model": "HCEInteraction", "key": "r:<id>", "type": "hash", "value": [[field, value], ...]},
        {"model": "HCEInteraction", "key": "fb", "type": "list", "value": [entry, ...]},
        {"model": "HCEInteraction", "key": "co:graph:adj", "type": "zset", "value": [[member, score], ...]},
        {"model": "HCEInteraction", "key": "bf:entities_seen", "type": "string", "value": {"base64": "..."}}, ...]}

Keys are named relative to their model's partition (``<prefix>:<Model>:{<session>}:``), so an
export loads under any prefix and session. A value is its UTF-8 text, or ``{"base64": ...}``
when it is not valid UTF-8 (vectors, the Bloom bitmap); scores are JSON numbers (exact doubles).
Every key of the session is listed without a scan: each primitive's keys are known, and the
records are those of the partitions' id sets. Saving reads everything in one MULTI/EXEC (a
consistent snapshot; repeated if the record sets changed meanwhile). Loading checks the whole
file first (size, format, version, checksum, every entry's model, kind and type, and every
value entry by entry: text encodable as UTF-8, finite scores, records that decode as their
model's, focus entries that parse, member entries, numeric graph weights, at most
``MAX_FOCUS_ENTRIES`` focus entries), then replaces the session's keys in one MULTI/EXEC. An
export is editable (its checksum can be recomputed), so nothing in it is trusted: every check
runs before the first Redis call, and a failed load leaves the session byte-identical.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...embeddings._codec import decode_stored_vector as decode_vector_value
from ...embeddings._codec import stored_dimensions
from ...fields._bm25 import BM25Keys
from ...fields._restore import queue_new_epoch
from ...lifecycle import LifecycleKeyKind
from ...model._base import Model
from ...model._dbkey import DbKey
from ...model._loading import decode_stored
from ...store._connection import server_errors
from ...store._errors import ExportError, RedmemError
from ...store._keys import KeyKind, KeySpace
from ._focus import FocusEntry
from ._keys import HCEKeyKind
from ._models import HCEGroup, HCEInteraction, HCETopic
from ._storage import delete_keys, queue_replace, read_typed, record_ids
from ._summaries import TopicSummary

__all__ = ["ExportError", "save_session", "load_session", "clear_session", "session_keys", "FORMAT", "VERSION",
           "FILE_NAME"]

FORMAT = "redmem.hce.session"
VERSION = 1
FILE_NAME = "hce-session.json"
MODELS: dict[str, type[Model]] = {"HCEInteraction": HCEInteraction, "HCETopic": HCETopic, "HCEGroup": HCEGroup}
#: The Redis type of each of a co-occurrence graph's keys, by its last part.
GRAPH_TYPES = {"w": "hash", "adj": "zset", "in": "zset", "deg": "hash"}
#: The attempts a save makes at a snapshot whose record sets did not change while it was read.
SNAPSHOT_ATTEMPTS = 5
#: The largest export file loaded (bytes): it is read and checked whole in memory.
MAX_EXPORT_BYTES = 1 << 30
#: The most focus buffer entries an export may hold (a buffer keeps its last ``max_size``, 10 by default).
MAX_FOCUS_ENTRIES = 10_000



def _spaces(session_id: str) -> dict[str, KeySpace]:
    return {name: model._meta.keyspace((model._meta.fields["session_id"].validate(session_id),))
            for name, model in MODELS.items()}


def _fixed_keys(name: str, space: KeySpace) -> dict[str, str]:
    """Relative key -> Redis type of every key of a model's partition except its records."""
    kinds: dict[str, str] = {KeyKind.ALL_RECORDS.value: "zset"}
    vectors = MODELS[name].embedding.keys(space)  # type: ignore[attr-defined]
    kinds.update(zip((_relative(space, k) for k in vectors), ("hash", "hash", "zset")))
    if name == "HCEInteraction":
        graph = HCEInteraction.graph.graph(session_id=space.partition_values[0])
        kinds.update((_relative(space, k), GRAPH_TYPES[k.rsplit(":", 1)[1]]) for k in graph.keys.listed())
        kinds[_relative(space, HCEInteraction.entities_seen.key(space))] = "string"
        kinds[HCEKeyKind.FOCUS_BUFFER.value] = "list"
        kinds[HCEKeyKind.TREE_MEMBERS.value] = "list"
        kinds[HCEKeyKind.TREE_GROUPS.value] = "list"
        kinds[HCEKeyKind.TOPIC_SUMMARIES.value] = "hash"
        kinds[HCEKeyKind.ENTITY_TYPES.value] = "hash"
        kinds.update((_relative(space, space.key(KeyKind.SORTED, name)), "zset") for name in ("valid_from", "valid_to"))
        kinds[LifecycleKeyKind.LIFECYCLE_INDEX.value] = "hash"
        bm25 = _keyword_keys(space)
        kinds.update((_relative(space, key), "zset" if key == bm25.log else "hash") for key in
                     (bm25.lengths, bm25.entries, bm25.totals, bm25.references, bm25.version, bm25.log))
    return kinds


def _keyword_keys(space: KeySpace) -> BM25Keys:
    return HCEInteraction.text_bm25.keys_in(space)


def _is_posting(name: str, space: KeySpace, rel: str) -> bool:
    """Whether ``rel`` names one of the keyword index's posting lists (a zset per term)."""
    return name == "HCEInteraction" and rel.startswith(_relative(space, _keyword_keys(space).postings) + ":")


def _relative(space: KeySpace, key: str) -> str:
    return key[len(space.base) + 1:]


def session_keys(session_id: str, record_ids: dict[str, list[str]], terms: Sequence[str] = ()
                 ) -> list[tuple[str, str, str]]:
    """(model name, relative key, Redis type) of every key of the session, records from
    ``record_ids``, the keyword index's posting lists from its ``terms``."""
    out = []
    for name, space in _spaces(session_id).items():
        out += [(name, rel, kind) for rel, kind in _fixed_keys(name, space).items()]
        out += [(name, _relative(space, space.record(rid)), "hash") for rid in record_ids.get(name, [])]
        if name == "HCEInteraction":
            out += [(name, _relative(space, _keyword_keys(space).posting(term)), "zset") for term in terms]
    return out


def _snapshot(session_id: str) -> list[dict[str, Any]]:
    client = HCEInteraction._meta.client
    spaces = _spaces(session_id)
    for _ in range(SNAPSHOT_ATTEMPTS):
        ids, terms = record_ids(client, spaces, _keyword_keys(spaces["HCEInteraction"]).references)
        listed = session_keys(session_id, ids, terms)
        replies = read_typed(client, [(f"{spaces[name].base}:{rel}", kind) for name, rel, kind in listed])
        entries = [_entry(name, rel, kind, reply) for (name, rel, kind), reply in zip(listed, replies)]
        current = {name: sorted(m.decode() for m, _ in reply) for (name, rel, _), reply in zip(listed, replies)
                   if rel == KeyKind.ALL_RECORDS.value}
        if all(current.get(name, []) == sorted(found) for name, found in ids.items()):
            return [e for e in entries if e is not None]
    raise RedmemError(f"session {session_id!r} kept changing while it was saved; try again")


def _text(value: bytes) -> Any:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(value).decode("ascii")}


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"base64"} and isinstance(value["base64"], str):
        return base64.b64decode(value["base64"], validate=True)
    raise ExportError(f"a value is a string or {{'base64': ...}}, not {value!r}")


def _entry(name: str, rel: str, kind: str, reply: Any) -> dict[str, Any] | None:
    if not reply:
        return None
    value: Any
    if kind == "hash":
        value = sorted([[_text(f), _text(v)] for f, v in reply.items()], key=lambda p: json.dumps(p))
    elif kind == "zset":
        value = [[_text(m), float(s)] for m, s in reply]
    elif kind == "list":
        value = [_text(v) for v in reply]
    else:
        value = _text(reply)
    return {"model": name, "key": rel, "type": kind, "value": value}


def _checksum(keys: list[dict[str, Any]]) -> str:
    canonical = json.dumps(keys, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def save_session(session_id: str, directory: str | os.PathLike[str]) -> Path:
    """Write ``session_id``'s state to ``<directory>/hce-session.json`` (written whole, then renamed)."""
    with server_errors(HCEInteraction._meta.client):
        keys = _snapshot(session_id)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    payload = {"format": FORMAT, "version": VERSION, "session_id": session_id, "sha256": _checksum(keys), "keys": keys}
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
    partial.replace(path)
    return path


def read_export(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The export of ``directory``, checked whole; ExportError otherwise."""
    path = Path(directory) / FILE_NAME
    try:
        if path.stat().st_size > MAX_EXPORT_BYTES:
            raise ExportError(f"{path} is larger than {MAX_EXPORT_BYTES:,} bytes")
        payload = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except FileNotFoundError:
        raise ExportError(f"{directory} holds no HCE export ({FILE_NAME} is missing)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ExportError(f"{path} is not readable JSON: {exc}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ExportError(f"{path} is not an HCE session export (format {FORMAT!r})")
    if payload.get("version") != VERSION:
        raise ExportError(f"{path} is export version {payload.get('version')!r}; this redmem reads version {VERSION}")
    keys = payload.get("keys")
    if not isinstance(keys, list) or not isinstance(payload.get("session_id"), str):
        raise ExportError(f"{path} lacks its session_id or keys")
    try:
        if payload.get("sha256") != _checksum(keys):
            raise ExportError(f"{path} is corrupt: its checksum does not match its keys")
        spaces = _spaces(payload["session_id"])
    except (UnicodeEncodeError, RedmemError) as exc:  # a lone surrogate escape, a session id no key takes
        raise ExportError(f"{path} holds text that cannot be stored: {exc}") from None
    fixed = {name: _fixed_keys(name, space) for name, space in spaces.items()}
    for entry in keys:
        _check_entry(entry, fixed, spaces)
        _check_value(entry, spaces[entry["model"]], _decoded(entry, payload["session_id"]))
    return payload


def _no_constant(name: str) -> Any:
    """JSON's non-standard NaN / Infinity are refused where the file is parsed."""
    raise ExportError(f"an export holds no {name}: scores and numbers are finite")


def _check_entry(entry: Any, fixed: dict[str, dict[str, str]], spaces: dict[str, KeySpace]) -> None:
    """An entry names a key an HCE session has, with that key's type and a non-empty value."""
    if not isinstance(entry, dict) or set(entry) != {"model", "key", "type", "value"}:
        raise ExportError(f"an export entry has model, key, type and value: {entry!r}"[:200])
    name, rel = entry["model"], entry["key"]
    if name not in MODELS or not isinstance(rel, str):
        raise ExportError(f"an export entry of an unknown model or key: {name!r} {rel!r}")
    expected = fixed[name].get(rel, "hash" if rel.startswith(f"{KeyKind.RECORD.value}:") else
                               "zset" if _is_posting(name, spaces[name], rel) else None)
    if expected is None or entry["type"] != expected:
        raise ExportError(f"{name} key {rel!r} of type {entry['type']!r} is not part of an HCE session")
    if not entry["value"] or not isinstance(entry["value"], list if expected != "string" else (str, dict)):
        raise ExportError(f"{name} key {rel!r} has an empty or malformed value")
    if expected != "string" and not all(isinstance(v, list) and len(v) == 2 for v in entry["value"]
                                        if expected in ("hash", "zset")):
        raise ExportError(f"{name} key {rel!r}: a {expected}'s entries are pairs")
    if rel == HCEKeyKind.FOCUS_BUFFER.value and len(entry["value"]) > MAX_FOCUS_ENTRIES:
        raise ExportError(f"{name} key {rel!r} holds {len(entry['value']):,} focus entries, "
                          f"at most {MAX_FOCUS_ENTRIES:,}")


def _check_value(entry: dict[str, Any], space: KeySpace, value: Any) -> None:
    """The decoded ``value`` of ``entry`` is what the session's code reads back from that key:
    a record that decodes as its model's, focus entries that parse, ``<id> <topic>`` member
    entries, JSON entity types, numeric graph weights and vector versions."""
    name, rel = entry["model"], entry["key"]
    try:
        if rel.startswith(f"{KeyKind.RECORD.value}:"):
            decode_stored(MODELS[name], DbKey(space, rel[len(KeyKind.RECORD.value) + 1:]), value)
        elif rel == HCEKeyKind.FOCUS_BUFFER.value:
            for raw in value:
                FocusEntry.from_json(raw)
        elif rel in (HCEKeyKind.TREE_MEMBERS.value, HCEKeyKind.TREE_GROUPS.value):
            if not all(b" " in raw.strip(b" ") for raw in value):
                raise ValueError("a log entry is '<child id> <parent id>'")
        elif rel == HCEKeyKind.TOPIC_SUMMARIES.value:
            for raw in value.values():
                TopicSummary.from_json(raw)
        elif rel == HCEKeyKind.ENTITY_TYPES.value:
            if not all(isinstance(json.loads(raw), dict) for raw in value.values()):
                raise ValueError("an entity type is a JSON object")
        elif rel == f"{KeyKind.VECTOR.value}:embedding":
            _check_vectors(list(value.values()))
        elif entry["type"] == "hash" and rel.rsplit(":", 1)[-1] in ("w", "deg", "ver"):
            numbers = value.values() if not rel.endswith("ver") else [value.get(b"n", b"0")]
            if not all(math.isfinite(float(raw)) for raw in numbers):
                raise ValueError("weights and versions are finite numbers")
    except (RedmemError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ExportError(f"{name} key {rel!r} holds a value this session cannot read: {exc}"[:300]) from None


def _check_vectors(raws: list[bytes]) -> None:
    """Stored vectors of one width, each finite (a vector search reads them as one matrix)."""
    widths = {stored_dimensions(raw) for raw in raws}
    if None in widths or len(widths) != 1:
        raise ValueError("vectors are stored vectors of one width")
    for raw in raws:
        decoded = decode_vector_value(raw)
        if decoded is None or not np.isfinite(decoded[0]).all():
            raise ValueError("a vector holds a number that is not finite")


def load_session(session_id: str, directory: str | os.PathLike[str]) -> None:
    """Replace ``session_id``'s state with the export in ``directory`` (see the module docs)."""
    payload = read_export(directory)
    spaces = _spaces(session_id)
    writes = [(f"{spaces[e['model']].base}:{e['key']}", e["type"], _decoded(e, session_id)) for e in payload["keys"]]
    client = HCEInteraction._meta.client
    with server_errors(client):
        references = _keyword_keys(spaces["HCEInteraction"]).references
        old = session_keys(session_id, *record_ids(client, spaces, references))
        with client.pipeline(transaction=True) as pipe:
            queue_replace(pipe, [f"{spaces[name].base}:{rel}" for name, rel, _ in old], writes)
            for name, model in MODELS.items():  # a load is a restore: every process's caches reload
                queue_new_epoch(pipe, model, spaces[name], {key for key, _, _ in writes})
            pipe.execute()


def clear_session(session_id: str) -> int:
    """Delete every key of ``session_id`` in one MULTI/EXEC; returns how many existed."""
    spaces = _spaces(session_id)
    client = HCEInteraction._meta.client
    with server_errors(client):
        references = _keyword_keys(spaces["HCEInteraction"]).references
        listed = session_keys(session_id, *record_ids(client, spaces, references))
        return delete_keys(client, [f"{spaces[name].base}:{rel}" for name, rel, _ in listed])


def _decoded(entry: dict[str, Any], session_id: str) -> Any:
    """An entry's value as bytes; a record of an export by an older version, which holds its session_id
    (newer ones leave it to the key name), is re-homed: that entry becomes the new session's."""
    value = entry["value"]
    try:
        if entry["type"] == "hash":
            pairs = {_bytes(f): _bytes(v) for f, v in value}
            if entry["key"].startswith(f"{KeyKind.RECORD.value}:") and b"session_id" in pairs:
                pairs[b"session_id"] = session_id.encode("utf-8")
            return pairs
        if entry["type"] == "zset":
            return {_bytes(m): _score(s) for m, s in value}
        if entry["type"] == "list":
            return [_bytes(v) for v in value]
        return _bytes(value)
    except (TypeError, ValueError, binascii.Error) as exc:
        raise ExportError(f"{entry['model']} key {entry['key']!r} has a malformed value: {exc}"[:300]) from None


def _score(value: Any) -> float:
    """A sorted set score of an export: a finite JSON number (ZADD refuses NaN at EXEC, after the DELs)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"a score is a finite number, not {value!r}")
    return float(value)


