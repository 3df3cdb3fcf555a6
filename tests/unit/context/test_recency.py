"""Newer facts first without vectors: a memory saying a change needs fewer shared words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem.context._recency import (
    CURRENT_UPDATE_COSINE,
    RESTATEMENT_COSINE,
    RESTATEMENT_JACCARD,
    RESTATEMENT_NEW_WORDS,
    UPDATE_COSINE,
    VALUE_COSINE,
    WORDS_FOR_CHANGE,
    WORDS_FOR_COSINE,
    _Statement,
    _updates,
    asks_current,
    is_update,
    stated_time_fields,
)


@pytest.mark.parametrize(
    ("older", "newer", "expected"),
    [
        ("The project deadline is March 15.", "The client pushed the deadline to April 30.", True),
        ("The team standup starts at 9:30.", "Standup moved to 9:00 because of the new timezone split.", True),
        ("The project deadline is March 15.", "The client moved to a bigger office.", False),  # no shared word
        ("The project deadline is March 15.", "The deadline for the grant is April 30.", False),  # no change said
    ],
)
def test_without_vectors_a_said_change_sharing_a_tenth_of_the_words_updates(older, newer, expected):
    assert is_update(older, newer, None) is expected


def test_the_stated_time_comes_before_the_written_time():
    assert stated_time_fields(["created_at", "said_at"], ["created_at", "said_at"]) == ("said_at", "created_at")
    assert stated_time_fields(["valid_from", "said_at"], []) == ("said_at",)
    assert stated_time_fields(["created_at"], ["created_at"]) == ("created_at",)
    assert stated_time_fields(["content"], []) == ()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What database does billing use?", True),
        ("When is the weekly sync?", True),
        ("Which region is production in?", True),
        ("When did Caroline go to the support group?", False),
        ("What was the first car Ana drove?", False),
        ("Where has Melanie ever camped?", False),
        ("   ", False),
    ],
)
def test_a_question_asks_how_things_stand_now_unless_it_marks_the_past(question, expected):
    assert asks_current(question) is expected


def test_asked_how_things_stand_now_a_said_change_needs_less_similarity():
    """"We migrated prod" shares no word with "Our production region": only its cosine (0.50 under
    MiniLM) says one subject. Asked about the present it is the answer; asked about the past it
    is left where relevance put it, as a change at that distance always was."""
    older, newer = "Our production region is us-east-1.", "We migrated prod to eu-west-1 on November 2."
    assert is_update(older, newer, 0.5, current=True)
    assert not is_update(older, newer, 0.5)
    assert not is_update(older, newer, CURRENT_UPDATE_COSINE - 0.01, current=True)
    assert not is_update("Our production region is us-east-1.", "Production alerts go to the on-call phone.",
                         0.55, current=True)  # no change said: one subject, no new value


@pytest.mark.parametrize("current", [False, True])
def test_a_pair_below_every_cosine_bound_is_told_apart_without_reading_its_words(current):
    """Most candidate pairs of a read are about different things: their cosine alone decides."""
    older, newer = _Statement.of("Bob uses MySQL for billing."), _Statement.of("Bob switched billing to PostgreSQL.")
    assert not _updates(older, newer, CURRENT_UPDATE_COSINE - 0.01, current)
    assert not {"all_words", "words", "values"} & (set(vars(older)) | set(vars(newer)))
    assert _updates(older, newer, CURRENT_UPDATE_COSINE + 0.2, current)  # the same pair, about one subject


@given(st.text(max_size=40), st.text(max_size=40), st.one_of(st.none(), st.floats(-1, 1)), st.booleans())
def test_the_cosine_shortcut_keeps_every_judgement(older, newer, cosine, current):
    """The shortcut answers as the rules read in full (module docstring) would."""
    expected = _full_rules(_Statement.of(older), _Statement.of(newer), cosine, current)
    assert is_update(older, newer, cosine, current) is expected


def _full_rules(older: _Statement, newer: _Statement, cosine: float | None, current: bool) -> bool:
    def at_least(bound: float) -> bool:
        return jaccard(older.words, newer.words) >= WORDS_FOR_COSINE if cosine is None else cosine >= bound

    def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
        return len(a & b) / len(a | b) if a | b else 0.0

    if newer.says_change and cosine is None and jaccard(older.words, newer.words) >= WORDS_FOR_CHANGE:
        return True
    if newer.says_change and at_least(CURRENT_UPDATE_COSINE if current else UPDATE_COSINE):
        return True
    if not at_least(UPDATE_COSINE):
        return False
    subject = (older.words - older.values) & (newer.words - newer.values)
    if subject and older.values - newer.values and newer.values - older.values and at_least(VALUE_COSINE):
        return True
    own = max(len(older.words - newer.words), len(newer.words - older.words))
    restates = jaccard(older.words, newer.words) >= RESTATEMENT_JACCARD and 0 < own <= RESTATEMENT_NEW_WORDS
    return restates and at_least(RESTATEMENT_COSINE)
