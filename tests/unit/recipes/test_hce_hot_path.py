"""The HCE retrieval's per-query helpers: the focus entries' word sets remembered by text, and the
candidates' checks of utility and cost (a fast path for plain floats and ints that must accept
and refuse exactly what the general checks do)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem.recipes.hce import ContextCandidate
from redmem.recipes.hce._extractor import significant_word_set, significant_words
from redmem.store._errors import ValidationError


def test_a_texts_word_set_is_remembered_and_the_mutable_copy_is_fresh():
    text = "Ana moved to Lisbon, and the move went well."
    words = significant_word_set(text)
    assert isinstance(words, frozenset) and words == significant_words(text) == {"ana", "moved", "lisbon", "move", "went", "well"}
    assert significant_word_set(text) is words  # remembered: the focus buffer's texts recur query after query
    copy = significant_words(text)
    copy.add("extra")
    assert "extra" not in significant_word_set(text) and "extra" not in significant_words(text)


def _valid_utility(value: object) -> bool:
    return (isinstance(value, (int, float, Fraction, np.floating)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 0)  # type: ignore[arg-type]


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.booleans(),
                 st.fractions(), st.floats(allow_nan=True, allow_infinity=True).map(np.float64), st.just(-0.0)))
def test_a_utility_is_accepted_exactly_when_it_is_a_finite_real_at_least_zero(utility):
    if _valid_utility(utility):
        assert ContextCandidate("x", "tree", utility, 1).utility == utility
    else:
        with pytest.raises(ValidationError):
            ContextCandidate("x", "tree", utility, 1)


@given(st.one_of(st.integers(-5, 5), st.booleans(), st.floats(0, 5), st.just(np.int64(3))))
def test_a_token_cost_is_accepted_exactly_when_it_is_an_int_at_least_zero(cost):
    if type(cost) is int and cost >= 0:
        assert ContextCandidate("x", "tree", 0.5, cost).token_cost == cost
    else:
        with pytest.raises(ValidationError):
            ContextCandidate("x", "tree", 0.5, cost)
