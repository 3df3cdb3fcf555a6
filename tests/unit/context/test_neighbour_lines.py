"""The lines of a neighbour context for a memory whose text carries its speaker, and its date."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from redmem.context._neighbours import Turn, build_contexts, own_line, split_speaker, spoken_date

words = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


def test_a_date_is_written_as_people_write_it():
    assert spoken_date(datetime(2023, 5, 8, 13, 56, tzinfo=UTC)) == "8 May 2023"


def test_a_short_name_before_a_colon_is_the_speaker():
    assert split_speaker("Caroline: I went to a support group.") == ("Caroline", "I went to a support group.")
    assert split_speaker("no speaker here") == ("", "no speaker here")
    assert split_speaker("a long sentence of many words: then more") == ("", "a long sentence of many words: then more")


@given(st.lists(words, min_size=1, max_size=3), st.lists(words, min_size=1, max_size=8))
def test_the_own_line_of_a_split_memory_reads_as_its_text(name, said):
    text = " ".join(name) + ": " + " ".join(said)
    assert own_line(Turn(*split_speaker(text))) == text


def test_neighbour_lines_hold_what_was_said_without_the_name():
    turns = [Turn(*split_speaker(text), session="s1") for text in ("Mel: How was it?", "Caroline: Great!", "Mel: Nice.")]
    assert build_contexts(turns)[1] == "> How was it?\nCaroline: Great!\n> Nice."
