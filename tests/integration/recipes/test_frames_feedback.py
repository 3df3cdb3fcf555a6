"""Frames that neither collapse nor forget (issue 29.2, 29.3): damped feedback, ``reinforce=False``,
guarantees the active-hours window never drops, and ``touch`` / ``revive``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import frames_support
import redmem
from frames_support import snapshot
from redmem import RecordNotFound, ValidationError
from redmem.recipes.frames import FrameDefinition, FrameMemory, ScoringWeights
from redmem.recipes.frames._definitions import ATTENTION_WEIGHTS, FrameFilters
from redmem.recipes.frames._scoring import FEEDBACK_CAP, frame_composite

provider, clock = frames_support.provider, frames_support.clock  # the frames tests' fixtures, defined once


def memory(clock, **options):
    mem = FrameMemory(agent_id="agent-1", clock=clock, **options)
    mem.begin_session()
    return mem


def ids(blocks):
    return [b.id for b in blocks]


def ask_in_sequence(mem, clock, question, times, hours_each):
    for _ in range(times):
        mem.frame("attention", question, top_k=1)
        clock.advance_hours(hours_each)


# -- 29.2: frames never collapse -------------------------------------------------------------------
def test_frames_in_sequence_keep_ranking_by_the_query_by_default(provider, clock):
    mem = memory(clock)
    often = mem.learn("redis eviction")
    best = mem.learn("redis eviction policy lru")
    ask_in_sequence(mem, clock, "redis eviction", 20, 2.5)  # `often` returned 20 times over 50 active hours
    assert mem.get(often).reinforcement_count == 20
    assert ids(mem.frame("attention", "redis eviction policy lru", top_k=1).blocks) == [best]


def test_the_seeds_raw_weights_remain_an_option_and_let_feedback_win(provider, clock):
    mem = memory(clock, feedback_cap=None)
    often = mem.learn("redis eviction")
    mem.learn("redis eviction policy lru")
    ask_in_sequence(mem, clock, "redis eviction", 20, 2.5)
    assert ids(mem.frame("attention", "redis eviction policy lru", top_k=1).blocks) == [often]


def test_frame_without_reinforcement_writes_nothing(provider, clock):
    mem = memory(clock)
    a, b = mem.learn("redis eviction"), mem.learn("redis eviction policy")
    mem.connect(a, b, 0.3)
    client = redmem.store.get_client()
    before = snapshot(client)
    clock.advance_hours(5)
    result = mem.frame("attention", "redis eviction", reinforce=False)
    assert set(ids(result.blocks)) == {a, b} and result.edges_reinforced == 0
    assert snapshot(client) == before
    assert mem.get(a).reinforcement_count == 0


def test_reinforce_must_be_a_bool(provider, clock):
    with pytest.raises(ValidationError):
        memory(clock).frame("attention", "redis", reinforce="no")


@pytest.mark.parametrize("cap", [-0.1, 1.5, float("nan")])
def test_a_feedback_cap_outside_0_1_is_a_validation_error(provider, clock, cap):
    with pytest.raises(ValidationError):
        FrameMemory(agent_id="agent-1", clock=clock, feedback_cap=cap)


unit = st.floats(0.0, 1.0)


@given(unit, unit, unit, unit, unit, st.floats(0.0, 1.0))
def test_damped_feedback_adds_at_most_the_cap(similarity, confidence, recency, centrality, reinforcement, cap):
    base = frame_composite(ATTENTION_WEIGHTS, similarity, confidence, 0.0, 0.0, 0.0, cap)
    damped = frame_composite(ATTENTION_WEIGHTS, similarity, confidence, recency, centrality, reinforcement, cap)
    assert -1e-12 <= damped - base <= cap + 1e-12
    raw_base = frame_composite(ATTENTION_WEIGHTS, similarity, confidence, 0.0, 0.0, 0.0)
    assert frame_composite(ATTENTION_WEIGHTS, similarity, confidence, recency, centrality, reinforcement) == (
        pytest.approx(raw_base + 0.25 * recency + 0.15 * centrality + 0.10 * reinforcement))
    assert 0 < FEEDBACK_CAP < ATTENTION_WEIGHTS.recency + ATTENTION_WEIGHTS.reinforcement


# -- 29.3: guarantees hold -------------------------------------------------------------------------
def test_self_constitutional_block_stays_in_self_frame_after_1000_active_hours(provider, clock):
    mem = memory(clock, neighbours=0)  # the notes' words do not find the core block through its context
    core = mem.learn("never share user secrets", tags=["self/constitutional"])
    for i in range(5):
        mem.learn(f"note {i} about redis topic{i}")
    for hour in range(1000):
        clock.advance_hours(1)
        if hour % 10 == 0:
            mem.frame("attention", f"redis topic{hour % 5}")
    assert mem.active_hours() == pytest.approx(1000)
    assert core not in ids(mem.recall("attention", "user secrets"))  # not guaranteed there: the window applies
    assert core in ids(mem.frame("self").blocks)


def test_a_custom_frames_guarantee_holds_past_the_window(provider, clock):
    mem = memory(clock)
    mem.register_frame(FrameDefinition("rules", ScoringWeights(0.2, 0.2, 0.2, 0.2, 0.2),
                                       FrameFilters(search_window_hours=10.0), ("rule/%",)))
    rule = mem.learn("always cite sources", tags=["rule/citation"])
    clock.advance_hours(50)
    fresh = mem.learn("sources are in the wiki")
    assert set(ids(mem.frame("rules", "sources").blocks)) == {rule, fresh}


def test_touch_brings_a_block_back_inside_the_window(provider, clock):
    mem = memory(clock)
    old = mem.learn("redis eviction policy")
    clock.advance_hours(300)
    assert old not in ids(mem.recall("attention", "redis eviction"))
    assert mem.touch(old) == pytest.approx(300)
    assert mem.get(old).last_reinforced == pytest.approx(300) and mem.get(old).reinforcement_count == 1
    assert ids(mem.recall("attention", "redis eviction")) == [old]


def test_revive_makes_an_archived_block_active_again(provider, clock):
    mem = memory(clock)
    gone = mem.learn("redis eviction policy")
    mem.archive(gone)
    mem.touch(gone)  # touching does not undo an archive
    assert mem.recall("attention", "redis eviction") == []
    mem.revive(gone)
    assert mem.get(gone).status == "active"
    assert ids(mem.recall("attention", "redis eviction")) == [gone]


def test_touching_a_self_block_makes_the_cached_self_frame_stale(provider, clock):
    mem = memory(clock)
    core = mem.learn("be honest", tags=["self/constitutional"])
    value = mem.learn("be kind", tags=["self/value"])
    mem.archive(value)
    assert ids(mem.frame("self").blocks) == [core]
    mem.revive(value)
    assert set(ids(mem.frame("self").blocks)) == {core, value}


def test_touch_and_revive_of_unknown_or_bad_ids(provider, clock):
    mem = memory(clock)
    with pytest.raises(RecordNotFound):
        mem.touch("nope")
    with pytest.raises(RecordNotFound):
        mem.revive("nope")
    with pytest.raises(ValidationError):
        mem.touch("")
