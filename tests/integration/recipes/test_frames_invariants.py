"""The frames recipe's invariants, edge cases, tenant isolation, purity, bad input and round trips."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

import redmem
from frames_support import Clock, WordEmbeddings, snapshot
from redmem import RecordNotFound, ValidationError
from redmem.recipes.frames import FrameDefinition, FrameMemory, ScoringWeights
from redmem.recipes.frames._definitions import ATTENTION_WEIGHTS, SELF_WEIGHTS, TASK_WEIGHTS
from redmem.recipes.frames._guarantees import suppress_contradictions
from redmem.recipes.frames._models import Block, decay_tier
from redmem.recipes.frames._scoring import FrameCandidate, Scored, centralities


def _setup_memory(client_fixture):
    words = WordEmbeddings()
    redmem.configure(embedding_provider=words)
    clock = Clock()
    memory = FrameMemory(agent_id="agent-1", clock=clock, wiring=None, neighbours=0)  # the seed invariants, graph wired by hand
    memory.begin_session()
    return memory, words, clock


@pytest.fixture
def setup(db):
    before = redmem.store.settings().embedding_provider
    yield _setup_memory(db)
    redmem.configure(embedding_provider=before)


@pytest.fixture
def mem(setup):
    return setup[0]


def ids(blocks):
    return [b.id for b in blocks]


def corpus(mem):
    """A small agent memory with every kind of block, edge and contradiction."""
    core = mem.learn("I never deceive the user", tags=["self/constitutional"])
    goal = mem.learn("Finish the API documentation", tags=["self/goal"])
    value = mem.learn("I explain my reasoning first", tags=["self/value"])
    jobs = mem.learn("Use Celery with Redis for background jobs")
    cron = mem.learn("Use cron for background jobs")
    broker = mem.learn("Redis is the broker")
    mem.connect(jobs, broker, weight=0.4)
    mem.connect(value, jobs, weight=0.3)
    mem.contradict(jobs, cron)
    return core, goal, value, jobs, cron, broker


# -- the seed's invariants -------------------------------------------------------------------------
def test_invariant_1_recall_is_pure_every_key_byte_identical(mem):
    corpus(mem)
    mem.frame("self")  # a cached entry exists too
    client = redmem.store.get_client()
    before = snapshot(client)
    for name, query in [("self", None), ("attention", "background jobs"), ("attention", None), ("task", "docs")]:
        mem.recall(name, query, top_k=3)
    assert snapshot(client) == before
    counts = [(b.block_id, b.reinforcement_count) for b in Block.query.filter(agent_id="agent-1").all()]
    mem.frame("attention", "background jobs")
    assert snapshot(client) != before and counts != [
        (b.block_id, b.reinforcement_count) for b in Block.query.filter(agent_id="agent-1").all()]


def test_invariant_2_expanded_blocks_get_similarity_zero(mem):
    *_, broker = corpus(mem)
    for block in mem.recall("attention", "celery", top_k=10):
        assert block.was_expanded == (block.similarity == 0.0)
    assert {b.id for b in mem.recall("attention", "celery", top_k=10) if b.was_expanded} >= {broker}


def test_invariant_3_prefilter_is_strictly_greater_than(mem, setup):
    clock = setup[2]
    block = mem.learn("edge of the window")
    clock.advance_hours(200 - 1e-6)
    assert ids(mem.recall("attention")) == [block]
    clock.advance_hours(1e-6)
    assert mem.active_hours() - 200 == mem.get(block).last_reinforced  # exactly on the cutoff
    assert mem.recall("attention") == []


weights = st.tuples(*[st.integers(0, 100)] * 5).filter(lambda w: sum(w) > 0)


@given(weights)
def test_invariant_4_weights_sum_to_one_renormalised_too(raw):
    total = sum(raw)
    w = ScoringWeights(*(x / total for x in raw))
    for each in (w, w.without_similarity(), SELF_WEIGHTS.without_similarity(), ATTENTION_WEIGHTS, TASK_WEIGHTS):
        assert math.isclose(each.similarity + each.confidence + each.recency + each.centrality + each.reinforcement,
                            1.0, abs_tol=1e-9)
    assert w.without_similarity().similarity == 0.0


def test_invariant_5_guaranteed_blocks_survive_budget_cuts_when_oversize_admits(mem):
    core, goal, *_ = corpus(mem)
    mem.oversize = "admit"  # the seed's rule; by default the budget is hard (test_hard_budget.py)
    assert core in ids(mem.frame("self", token_budget=0).blocks)
    assert goal in ids(mem.frame("task", "background jobs", token_budget=0).blocks)


def _scored(block_id, confidence, last=0.0):
    candidate = FrameCandidate(block_id, confidence, last, 0.01, 0, 0.0)
    return Scored(candidate, 1.0, 0.0, 0.0, confidence)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), max_size=12),
       st.sets(st.integers(0, 7)))
def test_invariant_6_contradiction_suppression_never_adds_blocks(confidences, pairs, pinned):
    blocks = [_scored(f"b{i}", c) for i, c in enumerate(confidences)]
    pairs = [(f"b{a}", f"b{b}") for a, b in pairs if a != b]
    kept = suppress_contradictions(blocks, pairs, {f"b{i}" for i in pinned})
    assert set(ids(s.candidate for s in kept)) <= {s.candidate.id for s in blocks}
    assert [s.candidate.id for s in kept] == [s.candidate.id for s in blocks if s in kept]  # order kept
    survivors = {s.candidate.id for s in kept}
    assert not any(a in survivors and b in survivors for a, b in pairs)


def test_invariant_7_self_frame_makes_zero_embedding_calls(setup):
    mem, words, _ = setup
    corpus(mem)
    before = len(words.calls)
    mem.frame("self")
    mem.recall("self")
    mem.frame("self")
    assert len(words.calls) == before


def test_invariant_8_co_retrieval_reinforcement_never_creates_edges(mem):
    made = [mem.learn(f"celery note {i}") for i in range(4)]
    graph = Block.edges.graph(agent_id="agent-1")
    client = redmem.store.get_client()
    mem.frame("attention", "celery note", top_k=4)
    assert not any(client.exists(key) for key in graph.keys.listed())
    mem.connect(made[0], made[1], weight=0.2)
    mem.frame("attention", "celery note", top_k=4)
    assert client.hlen(graph.keys.weights) == 1


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.floats(0, 1000), max_size=10))
def test_invariant_9_centrality_normalised_to_unit_interval(degrees):
    result = centralities(degrees)
    assert all(0.0 <= c <= 1.0 for c in result.values())
    if degrees and max(degrees.values()) > 0:
        assert max(result.values()) == 1.0


# -- the seed's edge cases -------------------------------------------------------------------------
def test_edge_case_1_zero_active_blocks(mem):
    result = mem.frame("attention", "anything")
    assert result.text == "" and result.blocks == [] and mem.recall("self") == []


def test_edge_case_2_fewer_candidates_than_top_k(mem):
    made = {mem.learn("celery one"), mem.learn("celery two")}
    assert set(ids(mem.recall("attention", "celery", top_k=10))) == made


def test_edge_case_3_no_edges(mem):
    for i in range(3):
        mem.learn(f"celery {i}")
    blocks = mem.recall("attention", "celery")
    assert [b.centrality for b in blocks] == [0.0] * 3 and not any(b.was_expanded for b in blocks)


def test_edge_case_4_all_candidates_contradict_each_other(mem):
    made = [mem.learn(f"deploy day is day{i}") for i in range(4)]
    mem.update_confidence(made[2], 0.9)
    for i, a in enumerate(made):
        for b in made[i + 1:]:
            mem.contradict(a, b)
    assert ids(mem.recall("attention", "deploy day", top_k=4)) == [made[2]]


def test_edge_case_5_multiple_guaranteed_blocks_all_included(mem):
    cores = {mem.learn(f"core rule {i}", tags=["self/constitutional"]) for i in range(3)}
    mem.learn("I like tea", tags=["self/value"])
    result = mem.frame("self", top_k=2)  # more guaranteed blocks than top_k: all of them, nothing else
    assert set(ids(result.blocks)) == cores
    assert len(mem.frame("self", top_k=4).blocks) == 4


def test_edge_case_6_archived_guaranteed_block_is_not_included_a_stale_one_is(mem, setup):
    """Archiving drops a guaranteed block; the active-hours window does not (issue 29.3)."""
    clock = setup[2]
    archived = mem.learn("old rule", tags=["self/constitutional"])
    mem.archive(archived)
    stale = mem.learn("stale goal", tags=["self/goal"])
    clock.advance_hours(300)
    fresh = mem.learn("fresh value", tags=["self/value"])
    assert ids(mem.frame("self").blocks) == [fresh]
    task = mem.frame("task", "goal").blocks
    assert stale in ids(task) and archived not in ids(task)


def test_edge_case_7_query_with_no_similar_block_still_scores_prefiltered_blocks(mem):
    made = {mem.learn("celery worker"), mem.learn("redis broker")}
    blocks = mem.recall("attention", "zebra giraffe")
    assert set(ids(blocks)) == made and all(b.similarity == 0.0 for b in blocks)


# -- precedence rules --------------------------------------------------------------------------------
def test_a_guaranteed_block_wins_its_contradictions(mem):
    goal = mem.learn("Ship on Friday", tags=["self/goal"])
    rival = mem.learn("Never ship on Friday")
    mem.update_confidence(rival, 1.0)
    mem.contradict(goal, rival)
    assert ids(mem.frame("task", "ship friday").blocks) == [goal]


def test_decay_tiers_follow_tags_then_category():
    assert decay_tier(["self/constitutional", "self/value"], "knowledge") == "permanent"
    assert decay_tier(["self/goal"], "observation") == "durable"
    assert decay_tier([], "observation") == "ephemeral"
    assert decay_tier(["topic/x"], "knowledge") == "standard"


def test_prefix_index_answers_patterns_without_a_scan(mem, sent):
    value = mem.learn("a value", tags=["self/value"])
    mem.learn("selfish but not self", tags=["selfish"])
    sent.clear()
    assert ids(mem.recall("self")) == [value]
    assert not any(b"SCAN" in b"".join(part if isinstance(part, bytes) else b"" for part in request)
                   for request in sent)


# -- tenants ---------------------------------------------------------------------------------------
def test_two_agents_with_the_same_words_never_see_each_other(setup):
    mem, _, clock = setup
    other = FrameMemory(agent_id="agent-2", clock=clock)
    mine = corpus(mem)
    theirs = corpus(other)
    for name, query in [("self", None), ("attention", "background jobs"), ("attention", None), ("task", "docs")]:
        assert set(ids(mem.frame(name, query, top_k=10).blocks)) <= set(mine)
        assert set(ids(other.recall(name, query, top_k=10))) <= set(theirs)
    with pytest.raises(RecordNotFound):
        mem.connect(mine[0], theirs[1])


def test_frames_on_the_cluster(any_db):
    before = redmem.store.settings().embedding_provider
    try:
        mem, _, _ = _setup_memory(any_db)
        core, _goal, _value, jobs, cron, _broker = corpus(mem)
        mem.update_confidence(jobs, 0.9)
        result = mem.frame("attention", "background jobs with celery", top_k=3)
        assert jobs in ids(result.blocks) and cron not in ids(result.blocks)
        assert mem.frame("self").blocks[0].id == core and mem.frame("self").cached
        state = snapshot(any_db)
        mem.recall("task", "docs")
        assert snapshot(any_db) == state
    finally:
        redmem.configure(embedding_provider=before)


# -- bad input -------------------------------------------------------------------------------------
def test_bad_input_raises_typed_errors_and_writes_nothing(mem):
    a, b, *_ = corpus(mem)
    client = redmem.store.get_client()
    state = snapshot(client)
    bad = [
        lambda: mem.frame("nope"),
        lambda: mem.recall("nope"),
        lambda: mem.frame("attention", "q", top_k=0),
        lambda: mem.frame("attention", "q", token_budget=-1),
        lambda: mem.register_frame(FrameDefinition("x", ScoringWeights(0.5, 0.5, 0.5, 0.0, 0.0))),
        lambda: mem.register_frame(FrameDefinition("self", SELF_WEIGHTS)),
        lambda: mem.connect(a, "missing"),
        lambda: mem.connect(a, a),
        lambda: mem.connect(a, b, weight=1.5),
        lambda: mem.contradict("missing", b),
        lambda: mem.archive("missing"),
        lambda: mem.learn(""),
        lambda: mem.learn("text", tags=["has space"]),
        lambda: mem.learn("text", tags="self/value"),
    ]
    for call in bad:
        with pytest.raises((ValidationError, RecordNotFound)):
            call()
    assert snapshot(client) == state


# -- round trips -----------------------------------------------------------------------------------
def test_round_trips(mem, sent):
    corpus(mem)
    mem.frame("attention", "background jobs")  # the process's vector matrix catches up
    sent.clear()
    mem.frame("attention", "background jobs")
    assert len(sent) == 3  # the shared retrieval (keyword + vector), the candidates with their fields, side effects
    sent.clear()
    mem.recall("attention", "background jobs")
    assert len(sent) == 2
    mem.frame("self")
    sent.clear()
    mem.frame("self")
    assert len(sent) == 1
