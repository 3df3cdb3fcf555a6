"""Rendering selected records for the prompt: per-record slices, then one composition.

The token budget is checked against each record's slice, and the final text is composed from
exactly those slices, so what was counted is what is sent. Formats:

| format | slice of one record | composition | empty |
|---|---|---|---|
| structured | ``json.dumps(d, indent=2)`` with every line indented 2 spaces | ``[`` + ``,\\n``-joined + ``]`` | ``[]`` |
| xml | ``<record>`` with one ``<k>v</k>`` line per field (& < > escaped) | inside ``<records>`` | ``<records>\\n</records>`` |
| natural | ``k: v, k: v`` | numbered lines ``1. ...`` | ``""`` |
| content | the memory text | lines ``- ...`` | ``""`` |

In the two line formats the per-record framing (``1. `` / ``- `` and the line break) grows
with the number of records, so it belongs to the record: :func:`frame_line` makes the line
that is counted, and :func:`compose` only joins lines.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from ..store.errors import ValidationError

__all__ = ["FORMATS", "LINE_FORMATS", "render_slice", "frame_line", "compose", "record_view"]

FORMATS = ("structured", "xml", "natural", "content")
#: Formats that put one record per line, numbered or bulleted.
LINE_FORMATS = ("natural", "content")


def _structured(view: Mapping[str, Any], text: str) -> str:
    body = json.dumps(dict(view), indent=2, default=str, ensure_ascii=False)
    return "\n".join("  " + line for line in body.splitlines())


def _xml(view: Mapping[str, Any], text: str) -> str:
    lines = [f"    <{k}>{escape(_plain(v))}</{k}>" for k, v in view.items()]
    return "  <record>\n" + "\n".join(lines) + "\n  </record>"


def _natural(view: Mapping[str, Any], text: str) -> str:
    return ", ".join(f"{k}: {_plain(v)}" for k, v in view.items())


def _content(view: Mapping[str, Any], text: str) -> str:
    return text


_SLICES: dict[str, Callable[[Mapping[str, Any], str], str]] = {
    "structured": _structured,
    "xml": _xml,
    "natural": _natural,
    "content": _content,
}


def _plain(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def check_format(output_format: str) -> str:
    """Return ``output_format`` if known, else raise ValidationError naming the known ones."""
    if not isinstance(output_format, str) or output_format not in _SLICES:
        raise ValidationError(f"unknown output_format {output_format!r}; use one of {list(FORMATS)}")
    return output_format


def render_slice(output_format: str, view: Mapping[str, Any], text: str) -> str:
    """One record's slice: ``view`` is its rendered fields, ``text`` its memory text (content format)."""
    return _SLICES[check_format(output_format)](view, text)


def frame_line(output_format: str, position: int, piece: str) -> str:
    """The text a record contributes at ``position`` (1-based): its slice plus per-record framing."""
    if output_format == "natural":
        return f"{position}. {piece}"
    if output_format == "content":
        return f"- {piece}"
    return piece


def compose(output_format: str, pieces: Sequence[str]) -> str:
    """Join framed pieces (see :func:`frame_line`) with the format's constant framing."""
    check_format(output_format)
    if output_format == "structured":
        return "[\n" + ",\n".join(pieces) + "\n]" if pieces else "[]"
    if output_format == "xml":
        return "<records>\n" + "\n".join(pieces) + "\n</records>" if pieces else "<records>\n</records>"
    return "\n".join(pieces)


def record_view(values: Mapping[str, Any], hidden: Sequence[str] = ()) -> dict[str, Any]:
    """The fields of a record worth showing a model: set, not hidden, not raw bytes."""
    return {
        k: v for k, v in values.items()
        if k not in hidden and v is not None and not isinstance(v, (bytes, bytearray))
    }
