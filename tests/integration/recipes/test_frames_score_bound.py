"""The candidate script's score bound (issue 29, ATTENTION at 100k): an expanded block that cannot
enter the top k (top_k seeds that contradict nothing score above the most it can) is returned with
its scoring inputs but its stored fields are not read; what a frame returns is the same as
without the bound, on random graphs. On a real server."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from frames_support import Clock, WordEmbeddings
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames import _engine as engine
from redmem.recipes.frames._bound import NO_BOUND, score_bound
from redmem.recipes.frames._definitions import ATTENTION_WEIGHTS, TASK_FRAME

_agents = itertools.count()


@pytest.fixture
def words(db):
    before = redmem.store.settings().embedding_provider
    redmem.configure(embedding_provider=WordEmbeddings())
    yield
    redmem.configure(embedding_provider=before)


def memory(**options) -> FrameMemory:
    mem = FrameMemory(agent_id=f"bound-{next(_agents)}", clock=Clock(), wiring=None, neighbours=0, **options)
    mem.begin_session()
    return mem


def hmgets(client) -> int:
    return int(client.info("commandstats").get("cmdstat_hmget", {}).get("calls", 0))


def test_expanded_blocks_that_cannot_be_chosen_are_not_read(words, db, monkeypatch):
    mem = memory()
    seeds = [mem.learn(f"background jobs run on worker {i}") for i in range(6)]
    others = [mem.learn(f"the broker of team {i}") for i in range(12)]
    for i, other in enumerate(others):
        mem.connect(seeds[i % len(seeds)], other, weight=0.3)  # each brings a neighbour in, similarity 0
    mem.recall("attention", "background jobs worker")  # the process's copies catch up
    before = hmgets(db)
    blocks = mem.recall("attention", "background jobs worker", top_k=5)
    bounded = hmgets(db) - before
    explained = mem.frame("attention", "background jobs worker", top_k=5, reinforce=False).explain().to_dict()
    monkeypatch.setattr(engine, "score_bound", lambda *_: NO_BOUND)
    before = hmgets(db)
    assert mem.recall("attention", "background jobs worker", top_k=5) == blocks
    unbounded = hmgets(db) - before
    assert {b.id for b in blocks} <= set(seeds) and len(blocks) == 5
    assert unbounded - bounded == len(others)  # one HMGET of stored fields per neighbour, skipped
    # the neighbours are still scored: the explanation (left out: beyond top_k) is the same
    assert mem.frame("attention", "background jobs worker", top_k=5, reinforce=False).explain().to_dict() == explained


def test_a_neighbour_the_feedback_lifts_above_the_seeds_is_read(words, db):
    """Raw weights: a hub reinforced now, central, with no word of the query, beats the one seed
    (old, unreinforced): its fields are read and it is the frame's block."""
    mem = memory(feedback_cap=None)
    seed = mem.learn("alpha notes")
    mem.clock.advance_hours(100)
    hub = mem.learn("the broker of the team")
    mem.connect(seed, hub, weight=0.05)
    for i in range(10):
        mem.connect(hub, mem.learn(f"spoke {i}"), weight=1.0)
    for _ in range(5):
        mem.touch(hub)
    blocks = mem.recall("attention", "alpha", top_k=1)
    assert [(b.id, b.content, b.was_expanded) for b in blocks] == [(hub, "the broker of the team", True)]


def test_the_bound_covers_every_feedback():
    damped, raw = score_bound(ATTENTION_WEIGHTS, 0.005, 5), score_bound(ATTENTION_WEIGHTS, None, 5)
    assert damped.feedback_most == pytest.approx(0.005) and damped.feedback_most > 0.005
    assert raw.feedback_most == pytest.approx(0.25 + 0.15 + 0.10) and raw.top_k == 5
    assert NO_BOUND.top_k == 0


VOCABULARY = ["alpha", "beta", "gamma", "delta", "jobs", "worker", "broker", "deploy"]
texts = st.lists(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3).map(" ".join), min_size=4, max_size=16)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blocks=texts, data=st.data(), cap=st.sampled_from([0.005, None]), top_k=st.integers(1, 3))
def test_frames_return_the_same_with_and_without_the_bound(words, monkeypatch, blocks, data, cap, top_k):
    """Property: on a random graph (edges, contradictions, confidences, reinforcements, guaranteed
    blocks), recall() and frame()'s blocks are the same whether the script bounds or not."""
    mem = memory(feedback_cap=cap)
    tags = data.draw(st.lists(st.sampled_from([[], ["self/goal"]]), min_size=len(blocks), max_size=len(blocks)))
    ids = [mem.learn(text, tags=tag) for text, tag in zip(blocks, tags)]
    pair = st.tuples(st.sampled_from(ids), st.sampled_from(ids)).filter(lambda p: p[0] != p[1])
    for a, b in data.draw(st.lists(pair, max_size=30)):
        mem.connect(a, b, weight=data.draw(st.floats(0.01, 1.0)))
    for a, b in data.draw(st.lists(pair, max_size=3)):
        mem.contradict(a, b)
    for block in data.draw(st.lists(st.sampled_from(ids), max_size=5)):
        mem.update_confidence(block, data.draw(st.floats(0.0, 1.0)))
    queries = data.draw(st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=3))
    for query in queries:
        mem.frame("attention", query, top_k=top_k)  # reinforcements: counts and recency differ
    for name, query in itertools.product(("attention", TASK_FRAME.name), queries):
        bounded = mem.recall(name, query, top_k=top_k)
        with monkeypatch.context() as patched:
            patched.setattr(engine, "score_bound", lambda *_: NO_BOUND)
            unbounded = mem.recall(name, query, top_k=top_k)
        assert bounded == unbounded
