"""Newer facts first without vectors: a memory saying a change needs fewer shared words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem.context._recency import (
    CHANGE_WORDS,
    CURRENT_UPDATE_COSINE,
    ENDING_WORDS,
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

#: Words of the property below: change words of every kind, values, names and filler.
VOCABULARY = sorted(CHANGE_WORDS | ENDING_WORDS) + [
    "Tom", "Tom's", "rent", "is", "the", "book", "club", "meets", "at", "library", "9:30", "MySQL", "PostgreSQL",
    "March", "uses", "for", "billing", "Berlin", "lives", "in",
]


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
    if current and newer.says_ending and (
            jaccard(older.words, newer.words) >= WORDS_FOR_CHANGE if cosine is None else cosine >= CURRENT_UPDATE_COSINE):
        return True
    if not at_least(UPDATE_COSINE):
        return False
    subject = (older.words - older.values) & (newer.words - newer.values)
    if subject and older.values - newer.values and newer.values - older.values and at_least(VALUE_COSINE):
        return True
    own = max(len(older.words - newer.words), len(newer.words - older.words))
    restates = jaccard(older.words, newer.words) >= RESTATEMENT_JACCARD and 0 < own <= RESTATEMENT_NEW_WORDS
    return restates and at_least(RESTATEMENT_COSINE)


def test_asked_how_things_stand_now_an_ended_value_updates_at_the_bound_of_a_change():
    """"raised" (SPEC.md form 1) says the old amount ended: read beside a question about now, at
    the cosine a change word needs there; a question about the past keeps to CHANGE_WORDS."""
    older, newer = "Tom pays 1200 euros rent a month.", "Tom's landlord raised it to 1350 in July."
    assert is_update(older, newer, 0.55, current=True)
    assert not is_update(older, newer, 0.55)
    assert not is_update(older, newer, CURRENT_UPDATE_COSINE - 0.01, current=True)


def test_without_vectors_a_possessive_names_its_owner():
    """"Tom's" and "Tom" are one subject: without vectors the shared owner is the shared word."""
    assert is_update("Tom pays 1200 euros rent a month.", "Tom's landlord raised it to 1350 in July.", None,
                     current=True)


@settings(max_examples=200, deadline=None)
@given(older=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(" ".join),
       newer=st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(" ".join),
       cosine=st.one_of(st.none(), st.floats(-1, 1)))
def test_asking_how_things_stand_now_takes_no_update_away(older, newer, cosine):
    """A question about now only adds ways to read a change: every update to a question about the
    past is one to a question about now."""
    if is_update(older, newer, cosine):
        assert is_update(older, newer, cosine, current=True)
