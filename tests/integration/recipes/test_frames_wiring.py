"""Issue 29.1 and 29.4: ATTENTION ranks by the keyword arm fused with the vector arm, and learn()
wires the graph (near-neighbour edges, degree cap, co-retrieval reinforcement, flagged
contradictions and duplicates) so centrality, expansion and suppression work without hand wiring."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import configured_embeddings
from frames_support import Clock, WordEmbeddings
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._models import Block
from redmem.recipes.frames._wiring import (
    DEGREE_CAP,
    LearnWiring,
    OpenAIContradictionJudge,
    heuristic_judge,
    numbers,
    polarity,
)


class WiringBlindEmbeddings:
    """Every text the same vector: the vector arm cannot tell blocks apart."""

    dimensions = 8
    max_batch_size = 64

    def embed(self, texts, input_type="document"):
        return np.tile(np.eye(1, self.dimensions, dtype=np.float32), (len(texts), 1))


@pytest.fixture
def words(db):
    with configured_embeddings(WordEmbeddings()) as provider:
        yield provider


@pytest.fixture
def mem(words):
    memory = FrameMemory(agent_id="wiring-agent", clock=Clock(), neighbours=0)  # each block found by its own words
    memory.begin_session()
    return memory


def edge(mem, a, b):
    """The weight of the edge a-b (0.0 when there is none)."""
    graph = Block.edges.graph(agent_id=mem.agent_id)
    first, second = sorted((f"r:{a}", f"r:{b}"))
    raw = redmem.store.get_client().hget(graph.keys.weights, f"{first} {second}")
    return float(raw) if raw is not None else 0.0


def degree(mem, block_id):
    """How many edges the block has."""
    graph = Block.edges.graph(agent_id=mem.agent_id)
    node = f"r:{block_id}"
    return redmem.store.get_client().zlexcount(graph.keys.adjacency, f"[{node} ", f"({node}!")


# -- the keyword arm -----------------------------------------------------------------------------
def test_recall_finds_a_block_by_its_words_when_the_vectors_cannot_tell(db):
    with configured_embeddings(WiringBlindEmbeddings()):
        mem = FrameMemory(agent_id="blind-agent", wiring=None)
        for i in range(30):
            mem.learn(f"note {i} about the weekly groceries")
        wanted = mem.learn("we booked the trip to zanzibar")
        for i in range(30):
            mem.learn(f"note {i} about the garden")
        assert [b.id for b in mem.recall("attention", "when is the zanzibar trip", top_k=1)] == [wanted]
        assert 0 < mem.recall("attention", "zanzibar", top_k=1)[0].similarity <= 1


# -- edges ---------------------------------------------------------------------------------------
def test_learn_links_a_block_to_its_near_neighbours_only(mem):
    a = mem.learn("redis cluster failover runbook steps")
    b = mem.learn("redis cluster failover runbook notes")
    far = mem.learn("gardening in the spring")
    assert edge(mem, a, b) == pytest.approx(0.8, abs=1e-6)  # the pair's cosine (4 of 5 words shared)
    assert edge(mem, a, far) == edge(mem, b, far) == 0.0


def test_learn_links_at_most_max_links_neighbours(words):
    mem = FrameMemory(agent_id="few-links", clock=Clock(), wiring=LearnWiring(max_links=2))
    made = [mem.learn(f"alpha beta gamma delta item{i}") for i in range(5)]
    assert degree(mem, made[-1]) == 2
    assert FrameMemory(agent_id="no-links", wiring=None).wiring is None


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(extra=st.integers(min_value=1, max_value=8))
def test_no_block_keeps_more_than_the_degree_cap(words, extra):
    mem = FrameMemory(agent_id=f"cap-{extra}", wiring=LearnWiring(max_links=DEGREE_CAP))
    made = [mem.learn(f"alpha beta gamma delta epsilon item{i}") for i in range(DEGREE_CAP + extra + 1)]
    assert max(degree(mem, block) for block in made) <= DEGREE_CAP


def test_expansion_and_centrality_work_without_hand_wiring(mem):
    seed = mem.learn("alpha beta gamma delta")
    neighbour = mem.learn("beta gamma delta epsilon")  # cosine 0.75 with the seed, no word of the query
    found = {b.id: b for b in mem.recall("attention", "alpha", top_k=5)}
    assert found[neighbour].was_expanded and found[neighbour].similarity == 0.0
    assert found[seed].centrality == 1.0


def test_co_retrieved_learned_edges_are_reinforced(mem):
    a = mem.learn("celery worker queue settings")
    b = mem.learn("celery worker queue limits")
    before = edge(mem, a, b)
    result = mem.frame("attention", "celery worker queue", top_k=2)
    assert {blk.id for blk in result.blocks} == {a, b} and result.edges_reinforced == 1
    assert edge(mem, a, b) == pytest.approx(before + 0.10)


# -- flags ---------------------------------------------------------------------------------------
def test_a_negated_near_copy_supersedes_the_older_block(mem):
    old = mem.learn("the cache is enabled in production")
    mem.update_confidence(old, 0.9)
    negated = mem.learn("the cache is not enabled in production")
    assert not mem.contradict(old, negated)  # already recorded by learn
    assert mem.get(old).superseded_by == negated  # the lifecycle's supersede: the newer statement wins
    assert [b.id for b in mem.recall("attention", "is the cache enabled in production", top_k=5)] == [negated]


def test_a_changed_number_is_a_contradiction(mem):
    first = mem.learn("the nightly deploy starts at 3 am sharp")
    second = mem.learn("the nightly deploy starts at 5 am sharp")
    assert not mem.contradict(first, second)


def test_the_same_text_twice_is_flagged_a_duplicate(mem):
    a = mem.learn("the standup is at ten every weekday")
    b = mem.learn("the standup is at ten every weekday")
    assert mem.duplicates(a) == [b] and mem.duplicates(b) == [a]
    assert mem.contradict(a, b)  # a duplicate is not a contradiction


def test_the_judge_is_pluggable_and_an_openai_judge_reads_the_models_word(words):
    asked = []

    def create(**request):
        asked.append(request)
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="Supersedes."))])

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    mem = FrameMemory(agent_id="judged", wiring=LearnWiring(judge=OpenAIContradictionJudge(model="some-model", client=client)))
    a = mem.learn("our office moved to the harbour district")
    b = mem.learn("our office moved to the harbour district today")
    assert asked and asked[0]["model"] == "some-model" and not mem.contradict(a, b)
    assert mem.get(a).superseded_by == b


def test_heuristic_judge():
    assert polarity("we do not ship on fridays") and polarity("it isn't ready") and not polarity("not never")
    assert numbers("3 cats and 4.5 dogs") == {"3", "4.5"}
    assert heuristic_judge("it is not ready", "it is ready") == "supersedes"
    assert heuristic_judge("room 14", "room 12") == "supersedes"
    assert heuristic_judge("room 12", "room 12") == "duplicate"
    assert heuristic_judge("room 12 upstairs", "room 12") == "duplicate"  # the lifecycle's restatement
    # a different statement that happens to carry other numbers (a date) is no contradiction
    assert heuristic_judge("[8 May 2023] Ann: I love painting", "[9 June 2023] Ann: I love painting") == "unrelated"
