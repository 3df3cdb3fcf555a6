"""The packer's three strategies, on plain numbers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redmem.context._oversize import Cuttable
from redmem.context._packing import Budget, pack
from redmem.context._rendering import pack_slices
from redmem.context._tokens import (
    ExactCounter,
    GuardedCounter,
    default_counter,
    estimate_tokens,
    exact_counter,
    is_own_counter,
    quarter_length,
    word_estimate,
)


def test_skip_not_break_skips_and_keeps_trying_smaller_items():
    packed = pack([40, 70, 30, 10], Budget(max_tokens=80))
    assert packed.selected == [0, 2, 3] and packed.skipped == [1] and packed.token_count == 80


def test_skip_not_break_always_admits_the_first_item():
    packed = pack([500, 10], Budget(max_tokens=100))
    assert packed.selected == [0] and packed.token_count == 500  # overshoots, visibly


def test_skip_not_break_honours_max_items():
    assert pack([1, 1, 1, 1], Budget(max_items=2)).selected == [0, 1]
    assert pack([1, 1], Budget(max_items=0)).selected == []


def test_stop_at_first_miss_pre_allocates_guaranteed_items():
    packed = pack([10, 50, 20, 5], Budget(max_tokens=70), "stop_at_first_miss", guaranteed=[3])
    assert packed.selected == [3, 0, 1] and packed.token_count == 65  # item 2 misses: stop


def test_greedy_knapsack_orders_by_utility_per_token():
    packed = pack([100, 10, 10], Budget(max_tokens=25), "greedy_knapsack", utilities=[5.0, 1.0, 2.0])
    assert packed.selected == [2, 1] and packed.token_count == 20


def test_bad_budgets_and_strategies_are_rejected():
    with pytest.raises(ValueError, match="max_tokens"):
        Budget(max_tokens=-1)
    with pytest.raises(ValueError, match="max_items"):
        Budget(max_items=True)
    with pytest.raises(ValueError, match="unknown packing strategy"):
        pack([1], Budget(), "best_effort")
    with pytest.raises(TypeError):
        pack([1], Budget(), "skip_not_break", guaranteed=[0])


@given(st.lists(st.integers(0, 200), max_size=30), st.integers(0, 500), st.integers(1, 10))
def test_skip_not_break_invariants(costs, max_tokens, max_items):
    packed = pack(costs, Budget(max_items=max_items, max_tokens=max_tokens))
    assert packed.selected == sorted(packed.selected)
    assert len(packed.selected) <= max_items
    assert packed.token_count == sum(costs[i] for i in packed.selected)
    if costs:
        assert packed.selected[0] == 0
    if len(packed.selected) > 1:
        assert packed.token_count <= max_tokens
    for index in packed.skipped:  # nothing skipped would have fitted at its turn
        before = sum(costs[i] for i in packed.selected if i < index)
        assert before + costs[index] > max_tokens


# -- rendered slices ----------------------------------------------------------------------------
def test_slices_of_a_line_format_cost_the_line_at_the_position_they_would_take():
    seen = []

    def count(text: str) -> int:
        seen.append(text)
        return len(text.split())

    fitted = pack_slices(["a b c", "d e f g h", "i"], "natural", count, Budget(max_tokens=7))
    assert fitted.selected == [0, 2] and fitted.token_count == 6  # "1. a b c", "2. d ...": skipped, "2. i"
    assert fitted.pieces == ["1. a b c", "2. i"] and fitted.text == "1. a b c\n2. i"
    assert {"1. a b c\n", "2. d e f g h\n", "2. i\n"} <= set(seen)


def test_slices_of_a_block_format_cost_the_slice_and_the_text_is_counted_whole():
    fitted = pack_slices(["  {}", "  {\n  }"], "structured", len, Budget(max_items=1))
    assert (fitted.selected, fitted.pieces, fitted.text) == ([0], ["  {}"], "[\n  {}\n]")
    assert fitted.token_count == len("[\n  {}\n]")  # what is emitted, brackets included


def slices_rendered_into(rendered: list[str], *names: str) -> list[Cuttable]:
    """Slices that note their name in ``rendered`` when they are rendered."""
    return [Cuttable(len(name), lambda chars, name=name: rendered.append(name) or name[:chars]) for name in names]


def test_without_a_token_limit_redmems_own_counter_counts_only_the_text_sent():
    """No ``max_tokens``: a piece's cost decides nothing, so redmem's own (pure) counter counts no
    piece, only the text (seen in its memo: one text counted), and a packing stopped by
    ``max_items`` never renders the slices after it."""
    rendered: list[str] = []
    counter = exact_counter("cl100k_base")
    fitted = pack_slices(slices_rendered_into(rendered, "a", "bb", "ccc"), "content", counter, Budget(max_items=2))
    assert (fitted.selected, fitted.text, fitted.token_count) == ([0, 1], "- a\n- bb", counter("- a\n- bb"))
    assert counter._memo.cache_info().misses == 1 and sorted(rendered) == ["a", "bb"]


def test_without_a_token_limit_a_users_counter_still_receives_each_line_then_the_text():
    """The counter contract: a user's counter sees each framed line as it is packed, then the text
    sent, with or without ``max_tokens``; the slices past ``max_items`` are still never rendered."""
    counted: list[str] = []
    rendered: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    fitted = pack_slices(slices_rendered_into(rendered, "a", "bb", "ccc"), "content", count, Budget(max_items=2))
    assert (fitted.selected, fitted.text, fitted.token_count) == ([0, 1], "- a\n- bb", len("- a\n- bb"))
    assert counted == ["- a\n", "- bb\n", "- a\n- bb"] and sorted(rendered) == ["a", "bb"]


@pytest.mark.parametrize("counter", [estimate_tokens, word_estimate, quarter_length, exact_counter("cl100k_base")],
                         ids=["estimate", "words", "len/4", "exact"])
def test_only_redmems_own_counters_are_left_uncalled(counter):
    assert is_own_counter(counter)
    assert not is_own_counter(lambda text: len(text)) and not is_own_counter(GuardedCounter(counter))

    class Subclassed(ExactCounter):
        """A user's subclass may watch its calls: it is theirs."""

    assert not is_own_counter(Subclassed(default_counter().encoding))
