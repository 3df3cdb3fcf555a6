"""``score_candidates`` scores over arrays (issue 29: the client's CPU per ATTENTION frame): every
candidate's signals and score are the same floats, bit for bit, and the order the same, as the
one-candidate-at-a-time scoring it replaced (kept here as the reference) on any candidates."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from redmem.recipes.frames._definitions import ATTENTION_WEIGHTS, ScoringWeights
from redmem.recipes.frames._scoring import (
    FrameCandidate,
    Scored,
    centralities,
    frame_composite,
    log_normalised_reinforcement,
    recency,
    score_candidates,
)


def reference(candidates, weights, now_hours, feedback_cap=None):
    """The scoring before issue 29's array version, one candidate at a time."""
    central = centralities({c.id: c.degree for c in candidates})
    most = max((c.reinforcement_count for c in candidates), default=0)
    scored = []
    for c in candidates:
        fresh = recency(c.decay_lambda, now_hours - c.last_reinforced)
        reinforced = log_normalised_reinforcement(c.reinforcement_count, most)
        score = frame_composite(weights, c.similarity, c.confidence, fresh, central[c.id], reinforced, feedback_cap)
        scored.append(Scored(c, fresh, central[c.id], reinforced, score))
    return sorted(scored, key=lambda s: (-s.score, s.candidate.id))


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
candidate = st.builds(
    FrameCandidate,
    id=st.text("abcdef0123456789", min_size=1, max_size=6),
    confidence=unit,
    last_reinforced=st.floats(min_value=-1e4, max_value=1e4, allow_nan=False),
    decay_lambda=st.sampled_from([1e-5, 1e-3, 1e-2, 5e-2]) | st.floats(min_value=0.0, max_value=10.0),
    reinforcement_count=st.integers(min_value=0, max_value=10_000),
    degree=st.floats(min_value=-1.0, max_value=50.0, allow_nan=False),
    similarity=unit,
    was_expanded=st.booleans(),
)


@st.composite
def weights(draw):
    raw = [draw(st.floats(min_value=0.0, max_value=1.0, allow_nan=False)) for _ in range(5)]
    total = math.fsum(raw)
    if total <= 0:
        return ATTENTION_WEIGHTS
    return ScoringWeights(*[w / total for w in raw])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(candidate, max_size=40, unique_by=lambda c: c.id),
    st.one_of(st.just(ATTENTION_WEIGHTS), weights()),
    st.floats(min_value=-1e4, max_value=1e4, allow_nan=False),
    st.none() | st.sampled_from([0.005, 0.0, 1.0]),
)
def test_array_scoring_equals_the_one_at_a_time_scoring(candidates, weights, now_hours, feedback_cap):
    got = score_candidates(candidates, weights, now_hours, feedback_cap)
    want = reference(candidates, weights, now_hours, feedback_cap)
    assert [(s.candidate.id, s.recency, s.centrality, s.reinforcement, s.score) for s in got] == [
        (s.candidate.id, s.recency, s.centrality, s.reinforcement, s.score) for s in want]
    assert all(type(value) is float for s in got for value in (s.recency, s.centrality, s.reinforcement, s.score))
