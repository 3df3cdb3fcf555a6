"""HSCA layer-2 self-tuning: per-agent weights on each (domain, keyword), learned from the served
history, bounded, reproducible, stored per agent and applied by HSCAEngine.for_agent."""

from __future__ import annotations

from collections import Counter

import pytest

from redmem.recipes.hsca import HSCAEngine, HSCAParameters, tune
from redmem.recipes.hsca._domains import classify_domains
from redmem.recipes.hsca._keyword_tuning import (
    KEYWORD_WEIGHT_BOUNDS,
    keyword_readings,
    keyword_weights,
    query_domain,
)
from redmem.recipes.hsca._text import parse_turn
from redmem.recipes.hsca._tuning import load_parameters
from redmem.store._errors import ValidationError

# "heart" is a keyword of both medical and poetry: in these medical conversations it is medical.
MEDICAL = [
    "The doctor checked the patient's heart after the surgery.",
    "Her heart rate stayed high, so the doctor changed the medication dose.",
    "The patient went home once the heart tests came back normal.",
]
# A poetry conversation where "heart" is the poem's.
POETRY = [
    "The poem opens at dusk with a heart that aches for the moon.",
    "Each stanza returns to the heart and its sorrow, in a slow rhyme.",
    "The last verse lets the heart rest as the stars come out.",
]
ASIDE = ("Unrelated, but I spent the weekend rebuilding my home network. The old router kept dropping the "
         "connection, so I bought a new one. By Sunday evening everything worked, except the doorbell camera.")
PROBE = "The doctor listened to her heart."


def converse(agent: str, session: str, central: list[str], query: str) -> None:
    """One recorded interaction: the central turns around an aside, the central chunks served."""
    engine = HSCAEngine.for_agent(agent, session_id=session)
    chunks = [engine.ingest_turn(t) for t in [central[0], ASIDE, *central[1:]]]
    if engine.buffer:
        engine.take_snapshot()
    engine.record_served(query, [c.chunk_id for i, c in enumerate(chunks) if i != 1])


def readings(chunks: list[tuple[str, bool]]) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]:
    return keyword_readings([[(parse_turn(t), served) for t, served in chunks]])


def test_keyword_weights_scale_the_hits_of_their_domain_only():
    probe = parse_turn(PROBE)
    assert classify_domains(probe) == ["medical", "poetry", "cross_domain"]
    assert classify_domains(probe, {"poetry": {"heart": 0.5}}) == ["medical"]
    assert classify_domains(probe, {"medical": {"heart": 0.5}}) == ["medical", "poetry", "cross_domain"]
    assert classify_domains(probe, {"medical": {"doctor": 0.0, "heart": 0.0}}) == ["poetry"]
    with pytest.raises(ValidationError):
        HSCAEngine(keyword_weights={"poetry": {"heart": -1.0}})


def test_the_query_domain_is_the_served_chunks_majority_and_none_on_a_tie():
    assert query_domain([parse_turn(t) for t in MEDICAL]).value == "medical"
    assert query_domain([parse_turn(t) for t in POETRY]).value == "poetry"
    assert query_domain([parse_turn("The heart.")]) is None  # medical and poetry tie
    assert query_domain([parse_turn("Nothing to see here.")]) is None


def test_readings_served_chunks_against_the_query_domain_unserved_ones_only_when_they_claim_it():
    agree, disagree = readings([(MEDICAL[0], True), (MEDICAL[1], True), (ASIDE, False)])
    assert agree[("medical", "heart")] == 2 and disagree[("poetry", "heart")] == 2
    assert agree[("medical", "doctor")] == 2 and not disagree[("medical", "doctor")]
    assert not any(domain == "technical_prose" for domain, _ in agree | disagree)  # the aside is not read
    claimed = "The doctor at the next table talked about his holiday the whole evening."
    agree, disagree = readings([(MEDICAL[0], True), (MEDICAL[1], True), (claimed, False)])
    assert disagree[("medical", "doctor")] == 1 and agree[("medical", "doctor")] == 2
    assert readings([("The heart.", True)]) == (Counter(), Counter())  # no query domain: no reading


def test_weights_are_bounded_and_one_without_readings():
    low, high = KEYWORD_WEIGHT_BOUNDS
    weights = keyword_weights((Counter({("medical", "heart"): 1000, ("poetry", "moon"): 3}),
                               Counter({("poetry", "heart"): 1000, ("poetry", "moon"): 3})))
    assert weights == {"medical": {"heart": high}, "poetry": {"heart": low}}  # moon: 3 each way, weight 1
    few = keyword_weights((Counter(), Counter({("poetry", "heart"): 2})))
    many = keyword_weights((Counter(), Counter({("poetry", "heart"): 40})))
    assert low < many["poetry"]["heart"] < few["poetry"]["heart"] < 1.0


def test_a_history_of_a_mis_tag_moves_that_keyword_and_leaves_others_alone(db):
    for i in range(6):
        converse("agent-med", f"s-{i}", MEDICAL, "heart doctor")
    result = tune("agent-med", seed=5)
    weights = result.parameters.keyword_weights
    assert weights["poetry"]["heart"] < 1.0 < weights["medical"]["heart"]
    assert "moon" not in weights.get("poetry", {}) and "technical_prose" not in weights  # never read
    assert "dusk" not in weights.get("poetry", {})
    assert all(KEYWORD_WEIGHT_BOUNDS[0] <= w <= KEYWORD_WEIGHT_BOUNDS[1] for d in weights.values() for w in d.values())
    assert result.domain_match[1] >= result.domain_match[0]
    assert HSCAEngine(domain_model=None).score_layers(PROBE).domain_tags == ["medical", "poetry", "cross_domain"]
    assert HSCAEngine.for_agent("agent-med", domain_model=None).score_layers(PROBE).domain_tags == ["medical"]


def test_keyword_weights_are_reproducible_stored_per_agent_and_isolated(db):
    for i in range(6):
        converse("agent-med", f"s-{i}", MEDICAL, "heart doctor")
        converse("agent-poet", f"s-{i}", POETRY, "heart poem")
    first = tune("agent-med", seed=2, store=False)
    stored = tune("agent-med", seed=2)
    assert first == stored  # same history and seed: same weights
    sampled = [tune("agent-med", seed=9, max_queries=3, store=False) for _ in range(2)]
    assert sampled[0] == sampled[1] and sampled[0].queries == 3  # a seeded sample of the history
    poet = tune("agent-poet", seed=2).parameters.keyword_weights
    med = load_parameters("agent-med").keyword_weights
    assert med == stored.parameters.keyword_weights
    assert med["poetry"]["heart"] < 1.0 < poet["poetry"]["heart"]
    assert poet["medical"]["heart"] < 1.0 < med["medical"]["heart"]
    assert load_parameters("agent-none") == HSCAParameters()
    assert "poetry" in HSCAEngine.for_agent("agent-poet", domain_model=None).score_layers(PROBE).domain_tags
    assert HSCAEngine.for_agent("agent-med", domain_model=None).score_layers(PROBE).domain_tags == ["medical"]
    assert HSCAEngine.for_agent("agent-none").keyword_weights == {}
