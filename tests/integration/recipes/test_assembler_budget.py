"""ContextAssembler budgets, token counters, output formats and shown fields, checked on assembled results.

Ranking here comes from the push path alone (a CyclicDecayField over ``salience``, every record
fresh, so the score is ``salience * 0.01 ** -0.1``): the candidate order is known in advance.

What is counted when packing: in ``structured`` and ``xml`` a record costs its slice and the
separator after it (``",\n"`` / ``"\n"``); in the line formats (``natural``, ``content``) it costs
the line it becomes, ``frame_line(format, position, slice) + "\n"``. With the
one-token-per-character counter ``chars`` a content record of n characters therefore costs n + 3
(``"- "``, the text, the line break). ``metadata["token_count"]`` is the counter of
``formatted``, the text sent (the last line's break is not in it).
"""

from __future__ import annotations

import itertools
import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import configured_embeddings
from models import Card
from models import SeedMemory as Memory
from redmem import (
    AutoKeyField,
    BM25Field,
    ConfigurationError,
    CyclicDecayField,
    KeyField,
    Model,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.context._rendering import LINE_FORMATS, compose, frame_line
from redmem.context._tokens import default_counter, exact_counter
from redmem.embeddings import HashingEmbeddings
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.conversation import SearchText

FORMATS = ["structured", "xml", "natural", "content"]


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


def cards(agent: str, *specs: tuple[float, str]) -> list[Card]:
    return [Card.create(agent_id=agent, salience=salience, content=content) for salience, content in specs]


def chars(text: str) -> int:
    """A str counter with obvious arithmetic: one token per character."""
    return len(text)


def line(text: str) -> int:
    """What ``chars`` counts for a content-format record of ``text``: ``"- " + text + "\n"``."""
    return len(text) + 3


def emitted(assembler: ContextAssembler, records: list) -> list[str]:
    """The pieces ``formatted`` is composed of: slices, or in the line formats the framed lines."""
    slices = [assembler.render(r) for r in records]
    if assembler.output_format in LINE_FORMATS:
        return [frame_line(assembler.output_format, i, piece) for i, piece in enumerate(slices, 1)]
    return slices


def counted(assembler: ContextAssembler, records: list) -> list[str]:
    """The exact strings the counter is given for the selected records, in order."""
    pieces = emitted(assembler, records)
    return [p + "\n" for p in pieces] if assembler.output_format in LINE_FORMATS else pieces


AGENTS = itertools.count()


# -- budget semantics ---------------------------------------------------------------------------
SIZES = [(0.9, "a" * 50), (0.8, "b" * 40), (0.7, "c" * 5), (0.6, "d" * 30)]


def content_of(result) -> list[str]:
    return [r.content for r in result.records]


def test_max_items_cuts_the_ranked_list(any_db):
    cards("a", *SIZES)
    result = ContextAssembler(Card, max_items=2, output_format="content", token_counter=chars).assemble(agent_id="a")
    assert content_of(result) == ["a" * 50, "b" * 40]
    assert result.metadata["token_count"] == len(result.formatted) == line("a" * 50) + line("b" * 40) - 1 == 95


def test_max_tokens_skips_what_does_not_fit_and_keeps_trying(any_db):
    cards("a", *SIZES)
    assembler = ContextAssembler(Card, max_tokens=61, output_format="content", token_counter=chars)
    result = assembler.assemble(agent_id="a")
    assert content_of(result) == ["a" * 50, "c" * 5]  # lines of 53, 43 (skipped), 8 (admitted), 33 (skipped)
    assert result.metadata["token_count"] == 60  # 61 costed, the last break not sent
    assert result.formatted == f"- {'a' * 50}\n- {'c' * 5}"
    tighter = ContextAssembler(Card, max_tokens=60, output_format="content", token_counter=chars)
    assert content_of(tighter.assemble(agent_id="a")) == ["a" * 50]  # the bullet and line break count too


@pytest.mark.parametrize("max_tokens", [1, 51])
def test_an_oversized_first_record_is_admitted_alone_when_asked(any_db, max_tokens):
    cards("a", *SIZES)
    assembler = ContextAssembler(Card, max_tokens=max_tokens, output_format="content", token_counter=chars,
                                 oversize="admit")
    result = assembler.assemble(agent_id="a")
    assert content_of(result) == ["a" * 50]
    assert result.metadata["token_count"] == 52 > max_tokens  # the overshoot is visible
    assert result.metadata["oversize"]["admitted"] == [result.records[0].card_id]


@pytest.mark.parametrize("option", ["max_items", "max_tokens"])
def test_a_zero_budget_is_rejected_at_construction(option):
    """An empty context is all a budget of 0 could give: both budgets must be >= 1."""
    with pytest.raises(ValidationError, match=f"{option} must be an int >= 1"):
        ContextAssembler(Card, **{option: 0})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=8),
    max_tokens=st.integers(1, 200),
    max_items=st.integers(1, 8),
)
def test_selection_is_skip_not_break_over_the_ranked_candidates(any_db, sizes, max_tokens, max_items):
    agent = f"agent-{next(AGENTS)}"  # a fresh partition per example
    made = cards(agent, *[(1.0 - i / 100, "abcdefgh"[i] * size) for i, size in enumerate(sizes)])  # distinct
    assembler = ContextAssembler(Card, max_items=max_items, max_tokens=max_tokens, output_format="content",
                                 token_counter=chars, oversize="skip")
    result = assembler.assemble(agent_id=agent)
    pool = result.metadata["total_candidates"]
    assert pool == min(len(made), 2 * max_items)  # the push path offers twice max_items
    expected, used = [], 0
    for card, size in zip(made[:pool], sizes):  # the reference rule, written out
        if len(expected) == max_items:
            break
        if used + size + 3 <= max_tokens:  # "- " + text + "\n"
            expected.append(card)
            used += size + 3
    assert result.records == expected
    assert result.metadata["token_count"] == max(used - 1, 0) <= max_tokens  # the last break is not sent


def test_a_skipped_push_record_is_replaced_by_a_later_smaller_one(any_db):
    cards("a", (0.9, "a" * 50), (0.8, "b" * 40), (0.7, "c" * 5), (0.6, "d" * 5), (0.5, "e" * 5))
    assembler = ContextAssembler(Card, max_items=2, max_tokens=61, output_format="content", token_counter=chars)
    result = assembler.assemble(agent_id="a")
    assert content_of(result) == ["a" * 50, "c" * 5]  # c is the third push record: 2 x max_items are offered
    assert result.metadata["total_candidates"] == 4 and result.metadata["token_count"] == 60


# -- token_count and formatted ------------------------------------------------------------------
@pytest.mark.parametrize("output_format", FORMATS)
def test_token_count_is_the_counter_of_the_text_sent(any_db, output_format):
    cards("a", (0.9, "deploy with blue green"), (0.8, "rollbacks use helm"), (0.7, "café ☕ 東京 <b>&"))
    assembler = ContextAssembler(Card, output_format=output_format)
    result = assembler.assemble(agent_id="a")
    pieces = emitted(assembler, result.records)
    assert result.metadata["token_count"] == default_counter()(result.formatted)
    assert result.formatted == compose(output_format, pieces)  # composed from exactly those strings
    for piece in pieces:
        assert piece in result.formatted


@pytest.mark.parametrize(("output_format", "expected"), [
    ("natural", ["1. content: deploy, salience: 0.9\n", "2. content: helm, salience: 0.8\n"]),
    ("content", ["- deploy\n", "- helm\n"]),
])
def test_line_formats_count_each_record_as_its_framed_line(any_db, output_format, expected):
    cards("a", (0.9, "deploy"), (0.8, "helm"))
    seen: list = []
    assembler = ContextAssembler(Card, output_format=output_format, token_counter=lambda text: seen.append(text) or 1)
    seen.clear()  # the constructor's probe call
    result = assembler.assemble(agent_id="a")
    assert seen == [*expected, result.formatted]  # each line as it is packed, then the text sent
    assert result.formatted == "\n".join(text.rstrip("\n") for text in expected)  # the last break is not emitted
    assert result.metadata["token_count"] == 1


def test_a_line_is_costed_at_the_position_it_would_take(any_db):
    cards("a", (0.9, "a" * 50), (0.8, "b" * 40), (0.7, "c" * 5))
    seen: list = []

    def counter(text: str) -> int:
        seen.append(text)
        return len(text)

    assembler = ContextAssembler(Card, output_format="natural", token_counter=counter, max_tokens=100,
                                 render_fields=["content"])
    seen.clear()
    result = assembler.assemble(agent_id="a")
    # a: 63 admitted; b: 63 + 53 > 100, skipped; c is then costed at position 2, not 3
    assert {f"1. content: {'a' * 50}\n", f"2. content: {'b' * 40}\n", f"2. content: {'c' * 5}\n"} <= set(seen)
    assert f"3. content: {'c' * 5}\n" not in seen
    assert content_of(result) == ["a" * 50, "c" * 5] and result.metadata["token_count"] == 63 + 18 - 1
    assert result.formatted == f"1. content: {'a' * 50}\n2. content: {'c' * 5}"


def test_formatted_text_matches_the_records_in_rank_order(any_db):
    cards("a", (0.7, "third"), (0.9, "first"), (0.8, "second"))
    result = ContextAssembler(Card, output_format="content").assemble(agent_id="a")
    assert result.formatted == "- first\n- second\n- third"
    structured = ContextAssembler(Card).assemble(agent_id="a")
    assert [item["content"] for item in json.loads(structured.formatted)] == ["first", "second", "third"]


# -- counter contract ---------------------------------------------------------------------------
def test_a_str_counter_receives_each_serialised_slice(any_db):
    cards("a", (0.9, "one"), (0.8, "two"))
    seen: list = []

    def counter(text: str) -> int:
        seen.append(text)
        return len(text.split())

    assembler = ContextAssembler(Card, output_format="xml", token_counter=counter)
    seen.clear()  # the constructor's probe call
    result = assembler.assemble(agent_id="a")
    slices = [assembler.render(r) for r in result.records]
    assert seen == [s + "\n" for s in slices] + [result.formatted]  # each slice and its separator, then the text
    assert all(s.startswith("  <record>") or s.startswith("<records>") for s in seen)
    assert result.metadata["token_count"] == len(result.formatted.split())


@pytest.mark.parametrize("old_counter", [
    lambda record: len(record.content),             # AttributeError on a str
    lambda record, encoding: 1,                     # TypeError: a second argument
], ids=["attribute", "signature"])
def test_an_old_record_counter_warns_at_construction_and_falls_back(any_db, old_counter):
    cards("a", (0.9, "deploy with blue green"), (0.8, "rollbacks use helm"))
    with pytest.warns(DeprecationWarning, match="text") as caught:
        assembler = ContextAssembler(Card, token_counter=old_counter)
    assert caught[0].filename == __file__  # points at the constructor call
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = assembler.assemble(agent_id="a")
    assert result.metadata["token_count"] == default_counter()(result.formatted)


@pytest.mark.parametrize("bad", [-1, 2.5, "7", True, None], ids=repr)
def test_a_bad_return_warns_and_falls_back(any_db, bad):
    cards("a", (0.9, "deploy with blue green"), (0.8, "rollbacks use helm"))
    assembler = ContextAssembler(Card, token_counter=lambda text: bad)
    with pytest.warns(RuntimeWarning, match="token_counter") as caught:
        result = assembler.assemble(agent_id="a")
    assert len(caught) == 1  # once per counter, not once per record
    assert result.metadata["token_count"] == default_counter()(result.formatted)


def test_a_counter_failing_at_call_time_warns_and_falls_back(any_db):
    cards("a", (0.9, "short"), (0.8, "a much longer memory text"))

    def picky(text: str) -> int:
        if "longer" in text:
            raise ValueError("cannot count this one")
        return 3

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assembler = ContextAssembler(Card, output_format="content", token_counter=picky)  # probe is fine
    with pytest.warns(RuntimeWarning, match="ValueError"):
        result = assembler.assemble(agent_id="a")
    assert result.metadata["token_count"] == default_counter()(result.formatted)  # the text holds "longer"


def test_tiktoken_exact_counter_by_encoding_name(any_db):
    cards("a", (0.9, "hello world"), (0.8, "tokenisation of memories"))
    assembler = ContextAssembler(Card, output_format="content", token_counter="cl100k_base")
    result = assembler.assemble(agent_id="a")
    import tiktoken  # loaded offline by exact_counter above; the registry now holds the encoding

    encoding = tiktoken.get_encoding("cl100k_base")
    assert result.metadata["token_count"] == len(encoding.encode(result.formatted)) == 9
    assert len(encoding.encode("- hello world\n")) == 4


def test_unusable_counters_are_rejected_at_construction():
    with pytest.raises(ConfigurationError, match="p50k_base"):
        ContextAssembler(Card, token_counter="p50k_base")
    with pytest.raises(ConfigurationError, match="callable"):
        ContextAssembler(Card, token_counter=42)


@pytest.fixture
def configured_counter():
    """Restores the library-wide token counter after a test that configures one."""
    previous = redmem.store.settings().token_counter
    yield
    redmem.configure(token_counter=previous)


def test_the_configured_token_counter_is_the_default(any_db, configured_counter):
    cards("a", (0.9, "one two three"))
    before = ContextAssembler(Card, output_format="content")
    redmem.configure(token_counter=lambda text: 7)
    assert ContextAssembler(Card, output_format="content").assemble(agent_id="a").metadata["token_count"] == 7
    explicit = ContextAssembler(Card, output_format="content", token_counter=chars)
    assert explicit.assemble(agent_id="a").metadata["token_count"] == len("- one two three")  # given wins
    # the counter is resolved at construction: an assembler made before keeps the default counter
    assert before.assemble(agent_id="a").metadata["token_count"] == default_counter()("- one two three")
    redmem.configure(token_counter="cl100k_base")
    assert ContextAssembler(Card, output_format="content").assemble(agent_id="a").metadata["token_count"] == 4


# -- golden formats -----------------------------------------------------------------------------
CONTENT = "Blue/green via <helm> & argo — café ✓ 東京"
GOLDEN = {
    "structured": (
        "[\n"
        "  {\n"
        '    "topic": "deployment",\n'
        f'    "content": "{CONTENT}",\n'
        '    "importance": 0.75\n'
        "  }\n"
        "]"
    ),
    "xml": (
        "<records>\n"
        "  <record>\n"
        "    <topic>deployment</topic>\n"
        "    <content>Blue/green via &lt;helm&gt; &amp; argo — café ✓ 東京</content>\n"
        "    <importance>0.75</importance>\n"
        "  </record>\n"
        "</records>"
    ),
    "natural": f"1. topic: deployment, content: {CONTENT}, importance: 0.75",
    "content": f"- {CONTENT}",
}
CUES = {"topic": "deployment", "tool": "argo"}
EMPTY = {"structured": "[]", "xml": "<records>\n</records>", "natural": "", "content": ""}


@pytest.mark.parametrize("output_format", FORMATS)
def test_golden_format_of_one_record(any_db, output_format):
    Memory.create(agent_id="a", topic="deployment", content=CONTENT, importance=0.75)
    result = ContextAssembler(Memory, output_format=output_format).assemble(CUES, agent_id="a")
    assert result.formatted == GOLDEN[output_format]


def test_structured_keeps_non_ascii_text_unescaped(any_db):
    Memory.create(agent_id="a", topic="deployment", content=CONTENT, importance=0.75)
    formatted = ContextAssembler(Memory).assemble(CUES, agent_id="a").formatted
    assert "\\u" not in formatted and "東京" in formatted  # ensure_ascii=False: fewer tokens
    assert json.loads(formatted) == [{"topic": "deployment", "content": CONTENT, "importance": 0.75}]


@pytest.mark.parametrize("output_format", FORMATS)
def test_golden_composition_of_two_records(any_db, output_format):
    Memory.create(agent_id="a", topic="deployment", content="deploy with blue green", importance=0.5)
    Memory.create(agent_id="a", topic="deployment", content="deploy rollbacks use helm", importance=1.0)
    assembler = ContextAssembler(Memory, output_format=output_format)
    result = assembler.assemble({"topic": "deployment"}, agent_id="a")
    first, second = ({"topic": "deployment", "content": r.content, "importance": r.importance}
                     for r in result.records)
    expected = {
        "structured": "[\n" + ",\n".join(
            "\n".join("  " + line for line in json.dumps(d, indent=2, ensure_ascii=False).splitlines())
            for d in (first, second)) + "\n]",
        "xml": "<records>\n" + "\n".join(
            f"  <record>\n    <topic>deployment</topic>\n    <content>{d['content']}</content>\n"
            f"    <importance>{d['importance']}</importance>\n  </record>" for d in (first, second)) + "\n</records>",
        "natural": "\n".join(f"{i}. topic: deployment, content: {d['content']}, importance: {d['importance']}"
                             for i, d in enumerate((first, second), 1)),
        "content": f"- {first['content']}\n- {second['content']}",
    }[output_format]
    assert result.formatted == expected


@pytest.mark.parametrize("output_format", FORMATS)
def test_empty_results(any_db, output_format):
    result = ContextAssembler(Memory, output_format=output_format).assemble({"topic": "deployment"}, agent_id="nobody")
    assert (result.records, result.proactive, result.formatted) == ([], [], EMPTY[output_format])
    assert result.metadata["token_count"] == default_counter()(EMPTY[output_format])  # what is sent: "[]" is 1
    assert result.metadata["total_candidates"] == 0


def test_slices_show_data_fields_only(any_db):
    Memory.create(agent_id="a", topic="deployment", content="deploy notes", importance=0.5)
    result = ContextAssembler(Memory).assemble({"topic": "deployment"}, agent_id="a")
    assert list(json.loads(result.formatted)[0]) == ["topic", "content", "importance"]  # no keys, no indexes


class AssemblerBudgetRoutine(Model):
    """A CyclicDecayField keeps learned amplitudes in the record: bookkeeping (``shown = False``).

    Local: a cyclic field with no base score and nothing else, so the slice shows ``content`` alone.
    """

    routine_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    rhythm = CyclicDecayField(cycles=[(86400, 0.5)], partition_by="agent_id")


def test_slices_hide_cyclic_bookkeeping(any_db):
    assert AssemblerBudgetRoutine.rhythm.shown is False and Memory.content.shown is True
    AssemblerBudgetRoutine.create(agent_id="a", content="standup at nine")
    result = ContextAssembler(AssemblerBudgetRoutine).assemble(agent_id="a")
    assert json.loads(result.formatted) == [{"content": "standup at nine"}]


def test_render_fields_choose_what_a_slice_shows_and_so_what_is_counted(any_db):
    Memory.create(agent_id="a", topic="deployment", content="deploy notes", importance=0.5)
    assembler = ContextAssembler(Memory, render_fields=["content", "topic"], token_counter=chars)
    result = assembler.assemble({"topic": "deployment"}, agent_id="a")
    assert result.formatted == '[\n  {\n    "content": "deploy notes",\n    "topic": "deployment"\n  }\n]'
    assert result.metadata["token_count"] == len(result.formatted) == len(assembler.render(result.records[0])) + 4
    natural = ContextAssembler(Memory, render_fields=["agent_id", "importance"], output_format="natural")
    assert natural.assemble({"topic": "deployment"}, agent_id="a").formatted == "1. agent_id: a, importance: 0.5"


def test_render_fields_may_name_a_hidden_field(any_db):
    AssemblerBudgetRoutine.create(agent_id="a", content="standup at nine")
    shown = ContextAssembler(AssemblerBudgetRoutine, render_fields=["rhythm", "content"], output_format="natural")
    formatted = shown.assemble(agent_id="a").formatted
    rhythm = float(formatted.removeprefix("1. rhythm: ").removesuffix(", content: standup at nine"))
    assert rhythm > 0  # the cyclic score, the value the field reads as on a record


def test_render_fields_never_show_a_field_object(any_db):
    Memory.create(agent_id="a", topic="deployment", content="deploy notes")
    try:
        assembler = ContextAssembler(Memory, render_fields=["topic", "confidence"], output_format="natural")
    except QueryException as refused:  # one acceptable fix: refuse a field without a stored value
        assert "confidence" in str(refused)
        return
    formatted = assembler.assemble({"topic": "deployment"}, agent_id="a").formatted
    assert formatted == "1. topic: deployment, confidence: 0.5"  # the other: show the record's value


def test_content_format_shows_the_memory_text_whatever_render_fields_say(any_db):
    Memory.create(agent_id="a", topic="deployment", content="deploy notes")
    assembler = ContextAssembler(Memory, render_fields=["topic"], output_format="content")
    assert assembler.assemble({"topic": "deployment"}, agent_id="a").formatted == "- deploy notes"


# -- wrapper framing ----------------------------------------------------------------------------
@pytest.mark.parametrize("output_format", FORMATS)
def test_token_count_includes_the_framing_at_any_record_count(any_db, output_format):
    """Before issue 27 ``token_count`` left out the framing (structured ``[`` / ``,`` / ``]``, xml
    ``<records>``): 2 and 6 cl100k_base tokens. It is now the count of ``formatted`` itself."""
    count = exact_counter("cl100k_base")
    framing = []
    for records in (1, 10, 25):
        agent = f"framing-{records}"
        cards(agent, *[(1.0, f"memory number {i} about the weekly deploy train") for i in range(records)])
        assembler = ContextAssembler(Card, output_format=output_format, token_counter="cl100k_base",
                                     max_items=records)
        result = assembler.assemble(agent_id=agent)
        assert len(result.records) == records
        framing.append(count(result.formatted) - result.metadata["token_count"])
    assert framing == [0] * 3


def test_content_format_skips_a_hidden_search_source(any_db):
    class Said(Model):
        said_id = AutoKeyField()
        agent_id = KeyField()
        content = StringField()
        context = SearchText()
        context_bm25 = BM25Field(source="context", partition_by="agent_id")

    Said.create(agent_id="a", content="we ship on tuesdays", context="[monday] Ann: we ship on tuesdays")
    result = ContextAssembler(Said, output_format="content").assemble("ship", agent_id="a")
    assert result.formatted == "- we ship on tuesdays"
