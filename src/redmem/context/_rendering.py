"""Rendering selected records for the prompt: per-record slices, then one composition.

The token budget is checked against each record's slice, and the final text is composed from
exactly those slices, so what was counted is what is sent. :class:`Renderer` is the stage a
recipe holds: one model's shown fields and memory text in one format, checked once. Formats:

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from ..fields._bm25 import BM25Field
from ..fields._embedding import EmbeddingField
from ..store._errors import QueryException, ValidationError
from ._oversize import Cuttable, cut, cuttable_text
from ._packing import Budget, Fitted, Layout, fit

if TYPE_CHECKING:
    from ..model._base import Model

__all__ = [
    "FORMATS", "LINE_FORMATS", "Renderer", "render_slice", "frame_line", "compose", "record_view",
    "check_format", "check_render_fields", "format_layout", "pack_slices",
]

FORMATS = ("structured", "xml", "natural", "content")
#: Formats that put one record per line, numbered or bulleted.
LINE_FORMATS = ("natural", "content")


def _structured(view: Mapping[str, Any], text: str) -> str:
    body = indented_json(dict(view))
    return "\n".join("  " + line for line in body.splitlines())


#: The one-line encoder of a flat object, its items on lines of their own: json's C encoder (which
#: ``json.dumps`` uses only without ``indent``) with the separators ``indent=2`` writes.
_FLAT_OBJECT = json.JSONEncoder(default=str, ensure_ascii=False, separators=(",\n  ", ": "))


def indented_json(values: dict[str, Any]) -> str:
    """``json.dumps(values, indent=2, default=str, ensure_ascii=False)``, the same text.

    json's pure-Python encoder writes an indented text at about a tenth of the speed of its C
    encoder, and a record is rendered at every assembly. An object whose keys are texts and
    whose values hold no list, tuple or dict (a record's fields, most often) is written by the
    C encoder with the separators ``indent=2`` puts between its items: the same text. Any
    other object goes to ``json.dumps``.
    """
    if not values or not all(type(k) is str and not isinstance(v, (list, tuple, dict)) for k, v in values.items()):
        return json.dumps(values, indent=2, default=str, ensure_ascii=False)
    return "{\n  " + _FLAT_OBJECT.encode(values)[1:-1] + "\n}"


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


def format_layout(output_format: str) -> Layout:
    """The :class:`Layout` of an output format (see the module docstring)."""
    check_format(output_format)
    return Layout(
        lambda position, piece: frame_line(output_format, position, piece),
        lambda indices, pieces: compose(output_format, pieces),
        ",\n" if output_format == "structured" else "\n",
        compose(output_format, [""]) if output_format not in LINE_FORMATS else "",
    )


def pack_slices(
    slices: Sequence[str | Cuttable], output_format: str, counter: Callable[[str], int], budget: Budget,
    oversize: str = "truncate",
) -> Fitted:
    """:func:`fit` of rendered slices (rank order, skip-not-break) in ``output_format``: a slice
    is a text, or a :class:`~redmem.context._oversize.Cuttable` that renders it at any cut
    (:meth:`Renderer.cuttable <redmem.context._rendering.Renderer.cuttable>`, which keeps a cut
    record well-formed; a plain text is cut as it is). In the line formats a slice costs the
    line it becomes at its position, line break included.
    """
    items = [s if isinstance(s, Cuttable) else cuttable_text(s) for s in slices]
    return fit(items, format_layout(output_format), counter, budget, "skip_not_break", oversize)


def record_view(values: Mapping[str, Any], hidden: Sequence[str] = ()) -> dict[str, Any]:
    """The fields of a record worth showing a model: set, not hidden, not raw bytes."""
    return {
        k: v for k, v in values.items()
        if k not in hidden and v is not None and not isinstance(v, (bytes, bytearray))
    }


def check_render_fields(names: Sequence[str] | None) -> list[str] | None:
    """``render_fields`` as a list of field names, or None; ValidationError for anything else."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ValidationError(f"render_fields must be a list of field names or None, got {names!r}")
    return list(names)


@dataclass(frozen=True)
class Renderer:
    """One model's records as prompt text: a slice per record in ``output_format``, then one text.

    A slice shows ``render_fields``, in that order (None: every stored field that is neither a
    key nor bookkeeping, ``Field.shown`` False, e.g. cyclic amplitudes); the ``content`` format
    shows the record's memory text (:meth:`text_of`). Checked when made: ValidationError for an
    unknown format, ``render_fields`` that is not a list of names, or the content format on a
    model with no text field; QueryException for a name the model does not store.
    """

    model: type[Model]
    output_format: str = "structured"
    render_fields: Sequence[str] | None = None
    #: The fields the content format takes a record's text from, in order of preference: the
    #: source of the model's BM25Field, of its EmbeddingField, ``content`` (shown str fields only).
    text_fields: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        output_format = check_format(self.output_format)
        names = _stored(self.model, check_render_fields(self.render_fields))
        object.__setattr__(self, "output_format", output_format)
        object.__setattr__(self, "render_fields", None if names is None else tuple(names))
        object.__setattr__(self, "text_fields", _text_fields(self.model, output_format))

    def render(self, record: Any) -> str:
        """The slice of ``record``: exactly the text counted and emitted (before line framing)."""
        view = self.view(record)
        return render_slice(self.output_format, view, self.text_of(record, view))

    def cuttable(self, record: Any) -> Cuttable:
        """``record``'s slice at any cut (for a memory bigger than the budget): ``render(n)`` cuts
        each shown text, and the memory text, longer than ``n`` characters (see
        :func:`~redmem.context._oversize.cut`), so a cut slice is still well-formed in its format."""
        view = self.view(record)
        text = self.text_of(record, view)
        longest = max([len(text), *(len(v) for v in view.values() if isinstance(v, str))])

        def render(chars: int) -> str:
            shown = {k: cut(v, chars) if isinstance(v, str) else v for k, v in view.items()}
            return render_slice(self.output_format, shown, cut(text, chars))

        return Cuttable(longest, render)

    def view(self, record: Any) -> dict[str, Any]:
        """The shown fields of ``record`` (see the class docstring), by name, as they are rendered."""
        meta = record._meta
        if self.render_fields is not None:
            names: Sequence[str] = self.render_fields
        else:
            names = [f.name for f in meta.stored_fields() if f.shown and f.name not in meta.key_fields]
        return record_view({name: getattr(record, name, None) for name in names})

    def text_of(self, record: Any, view: Mapping[str, Any] | None = None) -> str:
        """The memory text of ``record``: the first text set among :attr:`text_fields`, else (its
        text unset) its shown fields ``view`` (default :meth:`view`) as in the natural format."""
        for source in self.text_fields:
            text = getattr(record, source, None)
            if isinstance(text, str):
                return text
        return render_slice("natural", self.view(record) if view is None else view, "")

    def compose(self, pieces: Sequence[str]) -> str:
        """The text of framed pieces (see :func:`frame_line`) in this format."""
        return compose(self.output_format, pieces)


def _stored(model: type[Model], names: list[str] | None) -> list[str] | None:
    """``names`` if each is a field ``model`` stores in its records, else QueryException."""
    if names is None:
        return None
    fields = model._meta.fields
    unknown = [n for n in names if n not in fields or not fields[n].stored]
    if unknown:
        raise QueryException(
            f"render_fields names field(s) {unknown} that {model.__name__} does not store "
            "in its records (only stored fields can be shown)"
        )
    return names


def _text_fields(model: type[Model], output_format: str) -> tuple[str, ...]:
    """The fields the content format takes a record's text from (see :attr:`Renderer.text_fields`);
    the content format on a model that has none is refused."""
    meta = model._meta
    fields, indexed = meta.fields, (*meta.fields_of(BM25Field)[:1], *meta.fields_of(EmbeddingField)[:1])
    named = (*(getattr(f, "source", None) for f in indexed), "content")
    sources = tuple(n for n in dict.fromkeys(named) if isinstance(n, str) and n in fields and fields[n].shown
                    and getattr(fields[n], "python_type", None) is str)
    if output_format == "content" and not sources:
        raise ValidationError(
            f"output_format='content' shows each record's memory text, and {model.__name__} "
            "has no shown str field to take it from (the source of its BM25Field or EmbeddingField, "
            "or a field named 'content'); use one of 'structured', 'xml', 'natural'"
        )
    return sources
