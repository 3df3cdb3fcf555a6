"""HCE's block labels: a candidate's text is costed apart from its label (so its count is
remembered across queries), and the two counts add up to the labelled text's exact count."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.context._tokens import exact_counter
from redmem.recipes.hce import ContextCandidate, HCEInteraction, HCEPipeline
from redmem.recipes.hce._budgeting import SOURCES
from redmem.recipes.hce._focus import ROLES
from redmem.recipes.hce._models import interaction_text
from redmem.recipes.hce._pipeline import block_label

COUNTERS = {name: exact_counter(name) for name in ("cl100k_base", "o200k_base")}
texts = st.text(st.characters(codec="utf-8"), max_size=200)
stamps = st.one_of(st.none(), st.floats(min_value=0, max_value=4e9))
sources = st.lists(st.sampled_from(SOURCES), min_size=1, max_size=4)


@st.composite
def shown(draw: st.DrawFn) -> str:
    """A text as the block shows it: an interaction's turn pair or a focus entry's line."""
    if draw(st.booleans()):
        return interaction_text(draw(texts), draw(texts))
    return f"{draw(st.sampled_from(ROLES))}: {draw(texts)}"


@pytest.mark.parametrize("name", sorted(COUNTERS))
@settings(max_examples=300, deadline=None)
@given(text=shown(), stamp=stamps, found_by=sources)
def test_the_label_and_the_text_counts_add_up_to_the_whole(name, text, stamp, found_by):
    count = COUNTERS[name]
    label = block_label(ContextCandidate(text, found_by[0], 1.0, 0, {"timestamp": stamp, "sources": found_by}))
    assert count(label) + count(f" {text}\n") == count(f"{label} {text}\n")


def test_a_text_is_counted_apart_from_its_label(db):
    seen: list[str] = []

    def counter(text: str) -> int:
        seen.append(text)
        return len(text.split())

    pipe = HCEPipeline(session_id="s", context_budget=200, token_counter=counter)
    pipe.update("I moved to Lisbon in March.", "Nice city.")
    pipe.update("My dog Biscuit likes Lisbon.", "Good dog.")
    for query in ("Lisbon", "Biscuit and Lisbon"):
        found = pipe.retrieve_candidates(query)
        assert found.selected
        for c in found.candidates:
            label, text = c.content.split("] ", 1)
            assert f"{label}]" in seen and f" {text}\n" in seen and f"{c.content}\n" not in seen
            assert c.token_cost == counter(f"{label}]") + counter(f" {text}\n")
        assert found.token_count == counter(found.block) <= 200


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=1, max_value=120), words=st.lists(st.sampled_from(
    ["Lisbon", "Acme", "moved", "dog", "the", "a", "Biscuit", "月", "é"]), min_size=1, max_size=30))
def test_the_block_never_exceeds_the_budget(db, budget, words):
    """One session (stored at the first example) asked with any budget and words."""
    pipe = HCEPipeline(session_id="budget", context_budget=budget, token_counter="cl100k_base")
    if not pipe.focus.get_recent():
        for i in range(6):
            pipe.update(" ".join(words[i:] or words) + f" Lisbon {i}", "Noted " * i)
    found = pipe.retrieve_candidates(" ".join(words))
    assert found.token_count == COUNTERS["cl100k_base"](found.block) <= budget


def test_an_interaction_stores_the_exact_count_of_its_text_and_queries_use_it(db):
    count = COUNTERS["o200k_base"]
    pipe = HCEPipeline(session_id="s", max_focus=2, context_budget=200, token_counter="o200k_base")
    rid = pipe.update("I moved to Lisbon in March.", "Nice city.")
    pipe.update("The weather is grey.", "Autumn.")  # out of the focus buffer: a candidate of its own
    text = interaction_text("I moved to Lisbon in March.", "Nice city.")
    record = HCEInteraction.query.get(session_id="s", interaction_id=rid)
    assert record.tokens == {"o200k_base": count(f" {text}\n")}
    record.tokens = {"o200k_base": 1000}  # a stored count is what a query costs the text at
    record.save()
    found = pipe.retrieve_candidates("Lisbon")
    [shown] = [c for c in found.candidates if c.metadata.get("interaction_id") == rid]
    assert shown.token_cost == count(shown.content.split("] ", 1)[0] + "]") + 1000


def test_another_counter_stores_nothing_and_counts_at_each_query(db):
    pipe = HCEPipeline(session_id="s", context_budget=200, token_counter="words")
    rid = pipe.update("I moved to Lisbon in March.", "Nice city.")
    assert HCEInteraction.query.get(session_id="s", interaction_id=rid).tokens == {}
    found = pipe.retrieve_candidates("Lisbon")
    assert all(c.token_cost == pipe.count_tokens(c.content.split("] ", 1)[0] + "]")
               + pipe.count_tokens(" " + c.content.split("] ", 1)[1] + "\n") for c in found.candidates)
