"""Golden shapes of the four output formats, and composition from the counted slices."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models import SeedNote as Note
from redmem import AutoKeyField, IntField, Model, QueryException, ValidationError
from redmem.context._rendering import (
    Renderer,
    check_render_fields,
    compose,
    frame_line,
    indented_json,
    record_view,
    render_slice,
)
from redmem.context._tokens import exact_counter


class Tally(Model):
    """No text field: nothing for the content format to show (local for that reason)."""

    tally_id = AutoKeyField()
    count = IntField()


VIEW = {"topic": "deploy", "content": "Ship <b> & roll back", "tags": ["ops", "日本"]}


def test_structured_slices_are_indented_json_objects():
    piece = render_slice("structured", VIEW, "")
    assert piece.splitlines()[0] == "  {" and all(line.startswith("  ") for line in piece.splitlines())
    whole = compose("structured", [piece, piece])
    assert json.loads(whole) == [VIEW, VIEW]
    assert "日本" in whole  # not \\u-escaped: fewer tokens for non-English memories
    assert compose("structured", []) == "[]"


def test_xml_slices_escape_markup():
    piece = render_slice("xml", VIEW, "")
    assert piece == ("  <record>\n    <topic>deploy</topic>\n"
                     "    <content>Ship &lt;b&gt; &amp; roll back</content>\n"
                     '    <tags>["ops", "日本"]</tags>\n  </record>')
    assert compose("xml", [piece]) == f"<records>\n{piece}\n</records>"
    assert compose("xml", []) == "<records>\n</records>"


def test_natural_and_content_formats():
    assert render_slice("natural", {"a": 1, "b": "x"}, "") == "a: 1, b: x"
    lines = [frame_line("natural", i, piece) for i, piece in enumerate(["a: 1", "b: 2"], 1)]
    assert compose("natural", lines) == "1. a: 1\n2. b: 2"
    assert render_slice("content", VIEW, "the memory") == "the memory"
    assert compose("content", [frame_line("content", i, s) for i, s in enumerate(["one", "two"], 1)]) == "- one\n- two"
    assert compose("natural", []) == compose("content", []) == ""


def test_uncounted_framing_stays_under_20_tokens_at_any_size():
    count = exact_counter("cl100k_base")
    for fmt in ("structured", "xml", "natural", "content"):
        piece = render_slice(fmt, VIEW, "text")
        for n in (1, 5, 50):
            lines = [frame_line(fmt, i, piece) for i in range(1, n + 1)]
            counted = [line + "\n" if fmt in ("natural", "content") else line for line in lines]
            framing = count(compose(fmt, lines)) - sum(count(c) for c in counted)
            assert framing < 20, (fmt, n, framing)


def test_record_view_hides_keys_bytes_and_unset_fields():
    values = {"memory_id": "x", "content": "c", "vector": b"\x00", "topic": None}
    assert record_view(values, hidden=["memory_id"]) == {"content": "c"}


def test_unknown_format_is_rejected():
    with pytest.raises(ValueError, match="unknown output_format 'yaml'"):
        render_slice("yaml", VIEW, "")


# -- Renderer: one model's records, checked once ---------------------------------------------------
def test_a_renderer_shows_the_stored_data_fields_or_the_named_ones():
    note = Note(agent_id="a", content="deploy on friday", salience=0.5)
    assert Renderer(Note).view(note) == {"content": "deploy on friday", "salience": 0.5}
    natural = Renderer(Note, "natural", ["content", "agent_id"])
    assert natural.render_fields == ("content", "agent_id")
    assert natural.render(note) == "content: deploy on friday, agent_id: a"
    assert natural.compose([frame_line("natural", 1, natural.render(note))]) == "1. content: deploy on friday, agent_id: a"


def test_the_content_format_shows_the_memory_text_else_the_fields():
    renderer = Renderer(Note, "content")
    assert renderer.text_fields == ("content",)
    assert renderer.render(Note(agent_id="a", content="the memory")) == renderer.text_of(Note(content="the memory"))
    assert renderer.text_of(Note(agent_id="a", salience=0.5)) == "salience: 0.5"


def test_a_renderer_is_checked_when_made():
    with pytest.raises(ValidationError, match="unknown output_format"):
        Renderer(Note, "yaml")
    with pytest.raises(ValidationError, match="render_fields must be a list of field names"):
        Renderer(Note, "natural", "content")
    with pytest.raises(QueryException, match=r"render_fields names field\(s\) \['title'\] that SeedNote does not store"):
        Renderer(Note, "natural", ["title"])
    with pytest.raises(ValidationError, match="output_format='content' .* Tally has no shown str field"):
        Renderer(Tally, "content")
    assert check_render_fields(("a", "b")) == ["a", "b"] and check_render_fields(None) is None


#: Values a record's view holds: texts (line and paragraph separators, which ``splitlines`` cuts
#: and json leaves as they are, quotes, controls), numbers (nan, inf, huge ints), flags, None,
#: datetimes (``default=str``), and now and then a list or a dict (the ``json.dumps`` path).
SCALARS = (st.text() | st.sampled_from(["a\u2028b", "x\x85y", "\"q\"\n\\", "日本"]) | st.integers()
           | st.floats() | st.booleans() | st.none()
           | st.datetimes(timezones=st.just(UTC) | st.none()))
VALUES = SCALARS | st.lists(SCALARS, max_size=3) | st.dictionaries(st.text(max_size=5), SCALARS, max_size=3)


@given(st.dictionaries(st.text(), SCALARS, max_size=8) | st.dictionaries(st.text(max_size=8), VALUES, max_size=8))
def test_indented_json_is_the_text_json_dumps_writes(values):
    assert indented_json(values) == json.dumps(values, indent=2, default=str, ensure_ascii=False)


def test_structured_slice_of_a_flat_view_is_json_dumps_indented():
    view = {"content": "Bob switched billing\u2028to PostgreSQL", "importance": 1.0, "said_at": datetime(2023, 5, 8)}
    body = json.dumps(view, indent=2, default=str, ensure_ascii=False)
    assert render_slice("structured", view, "") == "\n".join("  " + line for line in body.splitlines())
