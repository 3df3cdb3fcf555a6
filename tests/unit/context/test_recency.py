"""Newer facts first without vectors: a memory saying a change needs fewer shared words."""

from __future__ import annotations

import pytest

from redmem.context._recency import is_update, stated_time_fields


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
