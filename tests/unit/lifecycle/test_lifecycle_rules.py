"""The LLM-free detection rules as properties: a changed name, number or value word never merges,
a restatement of the same value in other words does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redmem.lifecycle import infer_slot, text_digest
from redmem.lifecycle._detect import analysis, restates, same_value

NAMES = st.sampled_from(
    ["Alice Moreau", "Ben Quint", "Ida Sato", "Omar Holm", "Lena Castell-45"]
)  # a number in a name is no value
PLACES = st.sampled_from(["Berlin", "Lisbon", "Oslo", "Porto", "Madrid"])
DRINKS = st.sampled_from(["tea", "coffee", "cocoa", "chai", "matcha"])
PLACE_TEMPLATES = st.sampled_from(
    ["{e} lives in {v}.", "{e} moved to {v}.", "{e} is now based in {v}.", "{e} relocated to {v} last month."]
)
DRINK_TEMPLATES = st.sampled_from(
    ["{e} prefers {v}.", "{e} likes {v} best.", "{e}'s favourite drink is {v}.", "{e} now drinks {v} every morning."]
)


@given(NAMES, PLACE_TEMPLATES, PLACE_TEMPLATES, PLACES, PLACES)
def test_places_merge_exactly_when_the_place_is_the_same(person, one, two, here, there):
    first, second = one.format(e=person, v=here), two.format(e=person, v=there)
    assert infer_slot(first) == infer_slot(second) == (person, "residence")
    assert same_value(first, second, person) == (here == there)


@given(NAMES, DRINK_TEMPLATES, DRINK_TEMPLATES, DRINKS, DRINKS)
def test_lowercase_values_merge_exactly_when_the_value_is_the_same(person, one, two, this, that):
    first, second = one.format(e=person, v=this), two.format(e=person, v=that)
    assert infer_slot(first) == infer_slot(second) == (person, "preference")
    assert same_value(first, second, person) == (this == that)
    if this != that:
        assert not restates(first, second)


@given(NAMES, NAMES, st.integers(1, 99), st.integers(1, 99))
def test_a_changed_name_or_number_never_restates(one, two, many, more):
    first, second = f"{one} owns {many} bikes.", f"{two} owns {more} bikes."
    assert restates(first, second) == (one == two and many == more)


@given(st.from_regex(r"[a-z][a-z ]{0,30}[a-z0-9]", fullmatch=True))
def test_the_digest_ignores_case_spacing_and_end_punctuation(text):
    assert text_digest(text) == text_digest(f"  {text.upper().replace(' ', '   ')} .")
    assert text_digest(text) != text_digest(text + " again")


def _within_either(a: list[str], b: list[str]) -> bool:
    return bool(a) and bool(b) and (set(a) <= set(b) or set(b) <= set(a))


STATEMENTS = st.one_of(
    st.builds(lambda t, e, v: t.format(e=e, v=v), PLACE_TEMPLATES, NAMES, PLACES),
    st.builds(lambda t, e, v: t.format(e=e, v=v), DRINK_TEMPLATES, NAMES, DRINKS),
)


@given(STATEMENTS, STATEMENTS, NAMES)
def test_the_analysis_decides_as_the_rules(text, other, subject):
    """What the one-call write compares (``lifecycle_write.lua``): the precomputed analyses give
    :func:`restates` and :func:`same_value` as set comparisons."""
    mine, theirs = analysis(text, subject), analysis(other, subject)
    assert restates(text, other) == (mine[0] == theirs[0] and _within_either(mine[1], theirs[1]))
    assert same_value(text, other, subject) == (
        mine[0] == theirs[0] and (theirs[2] or _within_either(mine[3], theirs[3]))
    )
