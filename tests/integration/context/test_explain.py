"""AssemblyResult.explain(): each selected memory's arms, weights and boosts reproduce its score and
rank; every candidate left out names its reason; explaining costs no round trip."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import configured_embeddings
from models import RhythmicMemory as Memory
from models import SeedNote as Note
from redmem.context._explain import LEFT_OUT_REASONS, Explanation
from redmem.embeddings import HashingEmbeddings
from redmem.recipes.context_assembler import AssemblyResult, ContextAssembler
from redmem.store._errors import QueryException

WORDS = ["deploy", "helm", "canary", "rollback", "freeze", "alert", "runbook"]


@pytest.fixture(autouse=True)
def hashing_embeddings():
    with configured_embeddings(HashingEmbeddings(64)):
        yield


def corpus(model: type, size: int, **extra) -> None:
    model.save_many([model(agent_id="a", content=f"{WORDS[i % 7]} note {i} about {WORDS[(i * 3) % 7]}", **extra)
                     for i in range(size)])


def reproduces_ranking(explanation: Explanation) -> None:
    """The arms' contributions sum to the fused score, the fused score over the normaliser plus the
    question-cue bonus is the item's score, and the scores order the items (an item newer-first
    moved aside)."""
    for item in explanation.items:
        assert item.fused is not None and item.normaliser is not None
        assert math.fsum(arm.contribution for arm in item.arms) == pytest.approx(item.fused, rel=1e-9)
        cues = next(b.contribution for b in item.boosts if b.name == "cues")
        assert item.fused / item.normaliser + cues == pytest.approx(item.score, rel=1e-9)
    ranked = [i for i in explanation.items if not any(b.name == "recency" and "moved" in b.note and "not" not in b.note
                                                      for b in i.boosts)]
    assert [i.score for i in ranked] == sorted((i.score for i in ranked), reverse=True)


@pytest.mark.parametrize("fusion", ["rrf", "convex"])
@pytest.mark.parametrize("model", [Memory, Note])
def test_contributions_reproduce_the_fused_score_and_the_order(db, model, fusion):
    extra = {"topic": "deployment"} if model is Memory else {}
    corpus(model, 60, **extra)
    result = ContextAssembler(model, max_items=8, fusion=fusion, min_relevance=None).assemble(
        "helm canary rollback", agent_id="a")
    explanation = result.explain()
    assert [i.record_id for i in explanation.items] == [r._saved_key.record_id for r in result.records]
    assert [i.score for i in explanation.items] == [h.score for h in result.hits]
    assert explanation.fusion == fusion and explanation.tenant == {"agent_id": "a"}
    assert all(i.arms for i in explanation.items)
    assert all(a.rank is None or a.rank >= 1 for i in explanation.items for a in i.arms)
    reproduces_ranking(explanation)


def test_hybrid_lists_both_arms_with_their_weights(db):
    corpus(Memory, 40, topic="deployment")
    assembler = ContextAssembler(Memory, max_items=5, fusion="rrf", fusion_weights={"keyword": 2.0, "vector": 0.5})
    explanation = assembler.assemble({"topic": "deployment", "q": "helm canary"}, agent_id="a").explain()
    assert explanation.weights["keyword"] == 2.0 and explanation.weights["vector"] == 0.5
    top = explanation.items[0]
    assert {a.arm for a in top.arms} == {"keyword", "vector"}
    for arm in top.arms:
        assert arm.contribution == pytest.approx(arm.weight / (60 + arm.rank))
    reproduces_ranking(explanation)


def test_left_out_reasons(db):
    Note.save_many([Note(agent_id="a", content=text) for text in
                    ["helm canary rollout", "helm canary rollout", "helm canary rollback plan",
                     "helm chart values", "helm upgrade dry run", "canary weights"]])
    Note(agent_id="a", content="helm canary " * 200).save()
    result = ContextAssembler(Note, max_items=3, max_tokens=60, oversize="skip", min_relevance=None).assemble("helm canary", agent_id="a")
    explanation = result.explain()
    reasons = explanation.cut_counts()
    assert set(reasons) == set(LEFT_OUT_REASONS)
    assert reasons["duplicate"] == 1
    assert reasons["oversize"] == 1
    assert reasons["max_items"] + reasons["budget"] + reasons["relevance_floor"] >= 1
    chosen = {i.record_id for i in explanation.items}
    assert not chosen & {o.record_id for o in explanation.left_out}
    assert len(chosen) + len(explanation.left_out) == result.metadata["total_candidates"]


def test_relevance_floor_is_named(db):
    Note.save_many([Note(agent_id="a", content="helm canary rollout helm canary"),
                    Note(agent_id="a", content="canary bird song")])
    explanation = ContextAssembler(Note, min_relevance=0.9).assemble("helm canary", agent_id="a").explain()
    floor = [o for o in explanation.left_out if o.reason == "relevance_floor"]
    assert floor and "below the floor 0.9" in floor[0].detail


def test_boosts_are_reported(db):
    corpus(Memory, 20, topic="deployment")
    Memory(agent_id="a", topic="ops", content="helm canary morning check", salience=1.0).save()
    result = ContextAssembler(Memory, max_items=5).assemble("helm canary", agent_id="a")
    explanation = result.explain()
    assert explanation.filters is None
    names = [b.name for b in explanation.items[0].boosts]
    assert names == ["decay", "confidence", "recency", "graph", "cues", "push"]
    assert explanation.to_dict()["items"][0]["boosts"][0]["name"] == "decay"


def test_explaining_costs_no_round_trip(db, sent):
    corpus(Memory, 30, topic="deployment")
    result = ContextAssembler(Memory, max_items=5).assemble("helm canary", agent_id="a")
    sent.clear()
    result.explain().to_dict()
    assert sent == []


def test_a_result_not_made_by_assemble_has_nothing_to_explain():
    with pytest.raises(QueryException, match="no trail"):
        AssemblyResult().explain()


AGENTS = itertools.count()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=25),
       max_items=st.integers(1, 8), max_tokens=st.integers(5, 200), fusion=st.sampled_from(["rrf", "convex"]),
       floor=st.sampled_from([None, 0.3, 0.8]))
def test_every_candidate_is_explained_once_and_the_numbers_hold(db, texts, max_items, max_tokens, fusion, floor):
    agent = f"p{next(AGENTS)}"
    Note.save_many([Note(agent_id=agent, content=text) for text in texts])
    result = ContextAssembler(Note, max_items=max_items, max_tokens=max_tokens, fusion=fusion,
                              min_relevance=floor).assemble("helm canary rollback", agent_id=agent)
    explanation = result.explain()
    explained = [i.record_id for i in explanation.items] + [o.record_id for o in explanation.left_out]
    assert len(explained) == len(set(explained)) == result.metadata["total_candidates"]
    assert len(explanation.items) <= max_items and explanation.token_count <= max_tokens
    assert explanation.cut_counts()["duplicate"] == result.metadata["duplicates_collapsed"]
    assert explanation.cut_counts()["relevance_floor"] == result.metadata["below_floor"]
    pulled = [i for i in explanation.items if i.fused is not None]
    for item in pulled:
        assert math.fsum(arm.contribution for arm in item.arms) == pytest.approx(item.fused, rel=1e-9)
