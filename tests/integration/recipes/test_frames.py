"""The frames recipe against its seed's done criteria (TC-*), one test each, on a real server."""

from __future__ import annotations

import pytest

import frames_support
import redmem
from redmem.recipes.frames import (
    CachePolicy,
    FrameDefinition,
    FrameFilters,
    FrameMemory,
    ScoringWeights,
)
from redmem.recipes.frames._models import Block
from redmem.recipes.frames._retrieval import N_SEEDS_MULTIPLIER, block_keys, gather
from redmem.store._errors import ValidationError

provider, clock = frames_support.provider, frames_support.clock  # the frames tests' fixtures, defined once


@pytest.fixture
def mem(provider, clock):
    memory = FrameMemory(agent_id="agent-1", clock=clock, wiring=None, neighbours=0)  # the stage rules, graph wired by hand
    memory.begin_session()
    return memory


def edge(mem, a, b):
    """The weight of the edge a-b (0.0 when there is none)."""
    graph = Block.edges.graph(agent_id=mem.agent_id)
    client = redmem.store.get_client()
    a_id, b_id = f"r:{a}", f"r:{b}"
    raw = client.hget(graph.keys.weights, f"{min(a_id, b_id)} {max(a_id, b_id)}")
    return float(raw) if raw is not None else 0.0


def counts(mem, *ids):
    return [mem.get(i).reinforcement_count for i in ids]


def ids(blocks):
    return [b.id for b in blocks]


# -- retrieval -------------------------------------------------------------------------------
def test_tc_r_001_prefilter_excludes_stale_and_archived_blocks(mem, clock):
    stale = mem.learn("redis deploy notes")
    at_edge = None
    clock.advance_hours(1)
    at_edge = mem.learn("redis deploy at the window edge")
    clock.advance_hours(100)
    fresh = mem.learn("redis deploy fresh")
    archived = mem.learn("redis deploy archived")
    mem.archive(archived)
    clock.advance_hours(100)  # stale: 201 h ago; at_edge: exactly 200 h ago (strict >: out)
    assert set(ids(mem.recall("attention", "redis deploy", top_k=10))) == {fresh}
    assert set(ids(mem.recall("attention", top_k=10))) == {fresh}
    assert stale != at_edge


def test_tc_r_002_vector_search_returns_n_seeds_blocks(mem):
    for i in range(30):
        mem.learn(f"alpha note number{i}")
    space = mem.space
    gathered = gather(redmem.store.get_client(), space, mem.frame_definition("attention"), mem.clock(), 2,
                      ("alpha", Block.embedding.embed_texts(["alpha"], "query")[0]))
    seeds = [c for c in gathered.candidates if c.similarity > 0]
    assert len(seeds) == 2 * N_SEEDS_MULTIPLIER == len(gathered.candidates)


def test_tc_r_003_vector_search_returns_all_when_fewer_than_n_seeds(mem):
    for i in range(3):
        mem.learn(f"alpha note number{i}")
    mem.learn("unrelated words entirely")
    gathered = gather(redmem.store.get_client(), mem.space, mem.frame_definition("attention"), mem.clock(), 5,
                      ("alpha", Block.embedding.embed_texts(["alpha"], "query")[0]))
    assert sorted(c.similarity > 0 for c in gathered.candidates) == [True] * 3


def test_tc_r_004_graph_expansion_adds_1hop_neighbours_with_similarity_zero(mem):
    seed = mem.learn("celery background jobs")
    neighbour = mem.learn("broker configuration matters")
    two_hops = mem.learn("unrelated gardening tips")
    mem.connect(seed, neighbour, weight=0.5)
    mem.connect(neighbour, two_hops, weight=0.5)
    found = {b.id: b for b in mem.recall("attention", "celery jobs", top_k=5)}
    assert found[neighbour].was_expanded and found[neighbour].similarity == 0.0
    assert not found[seed].was_expanded and found[seed].similarity > 0
    assert two_hops not in found


def test_tc_r_005_high_centrality_expanded_block_can_beat_low_centrality_seed(mem):
    strong = mem.learn("celery")  # the best match: a seed's similarity is its match relative to the best
    seed = mem.learn("celery " + " ".join(f"filler{i}" for i in range(60)))  # weak match with "celery"
    hub = mem.learn("hub block")
    mem.connect(seed, hub, weight=1.0)
    for i in range(5):
        mem.connect(hub, mem.learn(f"spoke{i} block"), weight=1.0)
    seeds_weights = FrameMemory(agent_id="agent-1", clock=mem.clock, wiring=None, feedback_cap=None)
    found = seeds_weights.recall("attention", "celery", top_k=3)  # centrality at its raw weight (damped by default)
    assert ids(found)[:3] == [strong, hub, seed]
    assert found[1].was_expanded and found[1].centrality == 1.0 and found[2].centrality < 0.5


def test_tc_r_006_self_frame_bypasses_vector_search_and_graph_expansion(mem, provider):
    value = mem.learn("I explain my reasoning", tags=["self/value"])
    other = mem.learn("Celery runs jobs")
    mem.connect(value, other, weight=1.0)
    before = provider.queries()
    blocks = mem.recall("self", "reasoning")
    result = mem.frame("self")
    assert provider.queries() == before + 1  # the recall's query; frame("self") without one embeds nothing
    assert ids(blocks) == [value] and ids(result.blocks) == [value]
    assert all(not b.was_expanded for b in blocks + result.blocks)
    assert result.blocks[0].similarity == 0.0


def test_tc_r_007_contradiction_suppression_removes_lower_confidence_block(mem):
    strong = mem.learn("deploy on fridays is fine")
    weak = mem.learn("deploy on fridays is forbidden")
    mem.update_confidence(strong, 0.9)
    mem.contradict(strong, weak)
    assert ids(mem.recall("attention", "deploy fridays")) == [strong]


def test_tc_r_008_end_to_end_retrieval_returns_valid_results(mem):
    made = [mem.learn(f"python async note {i}", tags=["topic/python"]) for i in range(8)]
    mem.connect(made[0], made[1], weight=0.3)
    blocks = mem.recall("attention", "python async", top_k=5)
    assert len(blocks) == 5 and len(set(ids(blocks))) == 5 and set(ids(blocks)) <= set(made)
    for b in blocks:
        assert all(0.0 <= x <= 1.0 for x in (b.similarity, b.confidence, b.recency, b.centrality, b.reinforcement,
                                               b.score))
        assert b.content.startswith("python async note") and b.tags == ["topic/python"] and b.status == "active"
    assert [b.score for b in blocks] == sorted((b.score for b in blocks), reverse=True)


# -- frames ----------------------------------------------------------------------------------
def test_tc_f_001_self_frame_always_includes_constitutional_blocks(mem):
    core = mem.learn("I never deceive the user", tags=["self/constitutional"])
    values = [mem.learn(f"I value craft {i}", tags=["self/value"]) for i in range(5)]
    for v in values:
        mem.connect(v, values[0] if v != values[0] else values[1], weight=1.0)
    for _ in range(3):
        mem.frame("attention", top_k=5)  # the values gain reinforcement
    result = mem.frame("self", top_k=2)
    assert core in ids(result.blocks) and "I never deceive the user" in result.text
    assert result.blocks[0].guaranteed and len(result.blocks) == 2


def test_tc_f_002_self_frame_cached(mem, provider, sent, clock):
    mem.learn("I explain my reasoning", tags=["self/value"])
    first = mem.frame("self")
    sent.clear()
    second = mem.frame("self")
    assert not first.cached and second.cached and second.text == first.text and second.blocks == first.blocks
    assert len(sent) == 1  # the cache read and the version, one script call
    (key,) = redmem.store.get_client().keys(mem.space.key("fc", "self", "*"))
    assert 3500 < redmem.store.get_client().ttl(key) <= 3600
    mem.learn("Celery runs jobs")  # not a self block: the cache stays valid
    assert mem.frame("self").cached
    other_process = FrameMemory(agent_id="agent-1", clock=clock)  # no state shared but Redis
    other_process.learn("I prefer small commits", tags=["self/value"])
    third = mem.frame("self")
    assert not third.cached and "I prefer small commits" in third.text
    assert other_process.frame("self").cached


def test_tc_f_004_attention_frame_ranks_query_relevant_block_first(mem):
    mem.learn("The cat sleeps on the sofa")
    relevant = mem.learn("Use Celery with Redis for background jobs")
    mem.learn("Paris is the capital of France")
    result = mem.frame("attention", "how do I run background jobs with celery", top_k=3)
    assert result.blocks[0].id == relevant
    assert result.text.splitlines()[:2] == ["## Relevant Knowledge", "[1] Use Celery with Redis for background jobs"]


def test_tc_f_005_task_frame_guarantees_self_goal_blocks(mem):
    goal = mem.learn("Finish the API documentation", tags=["self/goal"])
    for i in range(6):
        mem.learn(f"pytest fixture tip {i}")
    result = mem.frame("task", "pytest fixture", top_k=3)
    assert goal in ids(result.blocks) and result.blocks[0].guaranteed
    assert result.text.startswith("## Active Goals\n- Finish the API documentation\n## Context\n[1] pytest fixture tip")


def test_tc_f_006_token_budget_enforced(mem):
    for i in range(10):
        mem.learn(f"redis note {i}: " + "words " * 20)
    result = mem.frame("attention", "redis note", top_k=10, token_budget=60)
    assert 0 < len(result.blocks) < 10 and result.dropped
    assert result.token_count == mem.count_tokens(result.text) <= 60
    estimated = FrameMemory(agent_id="agent-1", token_counter="len/4", clock=mem.clock)
    assert estimated.frame("attention", "redis note", top_k=10, token_budget=60).token_count <= 60


def test_tc_f_007_guarantee_tags_preallocated_before_token_budget_cuts(mem, clock):
    core = mem.learn("I never deceive the user " + "truly " * 30, tags=["self/constitutional"])
    mem.learn("I value craft", tags=["self/value"])
    seed = FrameMemory(agent_id="agent-1", clock=clock, oversize="admit")  # the seed's rule, asked for
    result = seed.frame("self", token_budget=5)
    assert ids(result.blocks) == [core] and result.token_count > 5  # over budget, but there
    assert result.oversize["admitted"] == [core]
    hard = mem.frame("self", token_budget=12)  # the default: a hard budget, the guaranteed block cut first
    assert ids(hard.blocks) == [core] and hard.token_count <= 12 and hard.oversize["truncated"] == [core]
    assert hard.text.startswith("## Identity\n- I never") and hard.text.endswith("…[truncated]")


def test_tc_f_008_contradiction_suppression_in_frame_results(mem):
    kept = mem.learn("The deploy day is Tuesday")
    dropped = mem.learn("The deploy day is Friday")
    mem.update_confidence(dropped, 0.2)
    mem.contradict(kept, dropped)
    result = mem.frame("attention", "deploy day")
    assert ids(result.blocks) == [kept] and "Friday" not in result.text


def test_tc_f_009_queryless_attention_returns_most_salient_blocks(mem, provider):
    salient = mem.learn("A salient block")
    mem.learn("An ordinary block")
    mem.update_confidence(salient, 1.0)
    before = len(provider.calls)
    result = mem.frame("attention", top_k=1)
    assert ids(result.blocks) == [salient] and result.blocks[0].similarity == 0.0
    assert len(provider.calls) == before


# -- graph -----------------------------------------------------------------------------------
def test_tc_g_004_co_retrieved_blocks_get_edge_reinforcement(mem):
    a, b = mem.learn("celery worker"), mem.learn("celery beat")
    c, d = mem.learn("celery result"), mem.learn("celery queue")
    mem.connect(a, b, weight=0.4)
    mem.connect(c, d, weight=0.95)
    result = mem.frame("attention", "celery", top_k=4)
    assert result.edges_reinforced == 2
    assert edge(mem, a, b) == pytest.approx(0.5) and edge(mem, c, d) == 1.0  # +0.10, capped at 1.0
    assert edge(mem, a, c) == 0.0  # co-returned without an edge: none is created


def test_tc_g_005_edge_not_reinforced_when_only_one_block_returned(mem):
    a, b = mem.learn("celery worker"), mem.learn("gardening")
    mem.connect(a, b, weight=0.4)
    result = mem.frame("attention", "celery worker", top_k=1)
    assert ids(result.blocks) == [a] and result.edges_reinforced == 0 and edge(mem, a, b) == 0.4


def test_tc_g_007_centrality_computed_correctly_from_edge_weights(mem):
    a = mem.learn("self a", tags=["self/value"])
    b = mem.learn("self b", tags=["self/value"])
    c = mem.learn("self c", tags=["self/value"])
    outside = mem.learn("not a self block")
    mem.connect(a, b, weight=0.2)
    mem.connect(b, c, weight=0.2)
    mem.connect(c, outside, weight=0.8)  # counts: centrality is the full weighted degree
    found = {blk.id: blk.centrality for blk in mem.recall("self", top_k=3)}
    assert found == {a: pytest.approx(0.2), b: pytest.approx(0.4), c: 1.0}


# -- reinforcement -----------------------------------------------------------------------------
def test_tc_l_009_recall_via_frame_reinforces_returned_blocks(mem, clock):
    a, b = mem.learn("celery worker"), mem.learn("celery beat")
    clock.advance_hours(2)
    result = mem.frame("attention", "celery", top_k=2)
    assert set(ids(result.blocks)) == {a, b} and counts(mem, a, b) == [1, 1]
    now = mem.active_hours()
    assert mem.get(a).last_reinforced == pytest.approx(now) and mem.get(a).window == pytest.approx(now)
    mem.recall("attention", "celery", top_k=2)
    assert counts(mem, a, b) == [1, 1]


def test_tc_l_010_frame_does_not_reinforce_blocks_not_returned(mem):
    returned = mem.learn("celery worker")
    left_out = mem.learn("gardening tips")
    mem.frame("attention", "celery", top_k=1)
    assert counts(mem, returned, left_out) == [1, 0] and mem.get(left_out).last_reinforced == 0.0


# -- custom frames -----------------------------------------------------------------------------
def test_custom_frames_are_stored_in_redis_and_used(mem, clock):
    definition = FrameDefinition(
        "projects", ScoringWeights(0.5, 0.2, 0.1, 0.1, 0.1), FrameFilters(tag_patterns=["project/%"]),
        guarantees=["project/active"], template="task", token_budget=300, cache=CachePolicy(60),
    )
    mem.register_frame(definition)
    active = mem.learn("Ship the frames recipe", tags=["project/active"])
    mem.learn("Celery runs jobs")
    other_process = FrameMemory(agent_id="agent-1", clock=clock)
    assert other_process.frame_definition("projects") == definition
    result = other_process.frame("projects", "anything")
    assert ids(result.blocks) == [active] and not result.cached
    assert other_process.frame("projects", "anything").cached


@pytest.mark.parametrize("garbage", ["not json", "[1, 2]", "{}", b"\xff\xfe",
                                     '{"name": "x", "weights": 5, "filters": {}, "guarantees": [], "template": "task",'
                                     ' "token_budget": 1, "cache": null, "source": "user"}'])
def test_a_stored_definition_of_garbage_is_a_validation_error(mem, db, garbage):
    db.hset(block_keys(mem.space)["definitions"], "broken", garbage)
    with pytest.raises(ValidationError, match="not a stored frame definition"):
        mem.frame_definition("broken")
    with pytest.raises(ValidationError):
        mem.frame("broken", "anything")


@pytest.mark.parametrize("build", [
    lambda: FrameFilters(tag_patterns=["self/\udcff"]),
    lambda: FrameFilters(tag_patterns=["\udcff%"]),
    lambda: FrameFilters(categories=["kn\udcffowledge"]),
    lambda: FrameDefinition("x", ScoringWeights(0.2, 0.2, 0.2, 0.2, 0.2), guarantees=["goal/\ud800"]),
])
def test_lone_surrogates_in_a_definition_are_validation_errors(mem, build):
    with pytest.raises(ValidationError, match="surrogate"):
        build()
    with pytest.raises(ValidationError, match="surrogate"):
        mem.learn("a block", tags=["self/\udcff"])
