"""Newer facts first without vectors: a memory saying a change needs fewer shared words."""

from __future__ import annotations

import pytest

from redmem.context._recency import CURRENT_UPDATE_COSINE, asks_current, is_update, stated_time_fields


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
