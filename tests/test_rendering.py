"""Golden shapes of the four output formats, and composition from the counted slices."""

from __future__ import annotations

import json

import pytest

from redmem.context.rendering import compose, frame_line, record_view, render_slice
from redmem.context.tokens import exact_counter

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
