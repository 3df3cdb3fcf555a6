"""Issue 29 (frames' quality target): a block is found through the blocks learned just before and
after it in the same session (its keyword context), as ConversationMemory finds a turn."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redmem
from conftest import configured_embeddings
from frames_support import Clock, WordEmbeddings
from redmem.recipes.conversation import build_contexts
from redmem.recipes.frames import FrameMemory
from redmem.recipes.frames._neighbours import NEIGHBOURS, turn_of_block
from redmem.store._errors import ValidationError


class NeighboursBlindEmbeddings:
    """Every text the same vector: only the keyword arm tells blocks apart."""

    dimensions = 8
    max_batch_size = 64

    def embed(self, texts, input_type="document"):
        import numpy as np

        return np.tile(np.eye(1, self.dimensions, dtype=np.float32), (len(texts), 1))


@pytest.fixture
def blind(db):
    with configured_embeddings(NeighboursBlindEmbeddings()) as provider:
        yield provider


def agent(name, **options):
    mem = FrameMemory(agent_id=name, clock=Clock(), wiring=None, **options)
    mem.begin_session()
    return mem


def ids(blocks):
    return [b.id for b in blocks]


def conversation(mem):
    """An answer that names nothing of what it answers, between filler blocks."""
    for i in range(10):
        mem.learn(f"filler note {i} about the weekly groceries")
    question = mem.learn("Did you ever get to visit Zanzibar?")
    answer = mem.learn("Yes, twice last year, in March!")
    for i in range(10):
        mem.learn(f"filler note {i} about the garden")
    return question, answer


def test_a_block_is_found_by_its_neighbours_words(blind):
    question, answer = conversation(agent("neighbours-on"))
    mem = FrameMemory(agent_id="neighbours-on", clock=Clock(), wiring=None)
    assert set(ids(mem.recall("attention", "zanzibar visit", top_k=2))) == {question, answer}
    assert ids(mem.recall("attention", "zanzibar visit", top_k=1)) == [question]  # its own words weigh most


def test_without_neighbours_a_block_is_found_by_its_own_words_only(blind):
    _, answer = conversation(agent("neighbours-off", neighbours=0))
    assert answer not in ids(FrameMemory(agent_id="neighbours-off", wiring=None).recall("attention", "zanzibar",
                                                                                        top_k=5))


def test_the_block_learned_next_joins_the_earlier_blocks_context(blind):
    mem = agent("forward")
    teaser = mem.learn("We finally did it!")
    mem.learn("We adopted a puppy named Biscuit")
    assert teaser in ids(mem.recall("attention", "biscuit puppy", top_k=2))


def test_neighbours_stay_inside_a_session(blind):
    mem = agent("sessions")
    mem.learn("Did you ever get to visit Zanzibar?")
    mem.end_session()
    mem.begin_session()
    answer = mem.learn("Yes, twice last year, in March!")
    assert mem.get(answer).context == "Yes, twice last year, in March!"  # its own line only


def test_outside_a_session_a_block_has_no_neighbours(blind):
    mem = FrameMemory(agent_id="sessionless", clock=Clock(), wiring=None)
    question = mem.learn("Did you ever get to visit Zanzibar?")
    answer = mem.learn("Yes, twice last year, in March!")
    assert mem.get(answer).context == "Yes, twice last year, in March!"
    assert mem.get(question).context == "Did you ever get to visit Zanzibar?"


def test_frames_show_the_block_only(blind):
    mem = agent("shown")
    question = mem.learn("Did you ever get to visit Zanzibar?")
    mem.learn("Yes, twice last year, in March!")
    result = mem.frame("attention", "zanzibar", top_k=1)
    assert ids(result.blocks) == [question]
    assert result.text == "## Relevant Knowledge\n[1] Did you ever get to visit Zanzibar?"


def test_neighbours_is_checked():
    with pytest.raises(ValidationError):
        FrameMemory(agent_id="bad", neighbours=-1)
    assert NEIGHBOURS == 2


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.sampled_from(["alpha one", "beta two", "gamma three", "delta four"]), min_size=1,
                      max_size=7))
def test_learning_one_at_a_time_gives_each_block_its_whole_context(db, texts):
    """Property: each block's stored context is the one built from the whole session at once."""
    with configured_embeddings(WordEmbeddings()):
        mem = agent(f"contexts-{abs(hash(tuple(texts)))}")
        made = [mem.learn(text) for text in texts]
        blocks = [mem.get(block_id) for block_id in made]
        assert [b.context for b in blocks] == build_contexts([turn_of_block(b) for b in blocks], NEIGHBOURS)
        redmem.store.get_client().delete(*redmem.store.get_client().keys(f"*{mem.agent_id}*"))
