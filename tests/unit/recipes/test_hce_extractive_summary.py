"""The extractive topic summary: within its token bound whatever the texts, made of their
sentences, the closest member's first sentence first."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem.context._tokens import exact_counter, word_estimate
from redmem.recipes.hce._summaries import closest_first, extractive_summary, sentences

WORDS = st.sampled_from(
    [
        "Ana",
        "moved",
        "to",
        "Lisbon",
        "in",
        "May.",
        "She",
        "likes",
        "curry!",
        "why?",
        "the",
        "blue",
        "notebook",
        "ok",
        "2023",
        "—",
        "é",
        "🙂",
    ]
)
TEXTS = st.lists(
    st.lists(WORDS, min_size=1, max_size=30).map(" ".join).map(lambda t: f"user: {t}\nassistant: ok."),
    min_size=1,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(texts=TEXTS, max_tokens=st.integers(1, 120), exact=st.booleans())
def test_a_summary_stays_within_its_token_bound_and_is_made_of_the_members_sentences(texts, max_tokens, exact):
    count = exact_counter() if exact else word_estimate
    summary = extractive_summary(texts, count, max_tokens)
    assert count(summary) <= max_tokens
    every = {s for t in texts for s in sentences(t)}
    kept = [s for s in every if s in summary]
    assert not summary or kept  # only the members' own sentences
    first = sentences(texts[0])[0]
    if count(first) <= max_tokens:
        assert summary.startswith(first)  # the closest member's first sentence leads


def test_sentences_drop_the_role_and_split_after_end_marks():
    assert sentences("user: Ana moved. She likes Lisbon!\nassistant: Why? Fine") == [
        "Ana moved.",
        "She likes Lisbon!",
        "Why?",
        "Fine",
    ]


def test_members_are_ranked_by_cosine_with_their_centroid():
    vectors = np.array([[0.0, 1.0], [1.0, 0.1], [1.0, 0.0], [0.9, 0.2]], dtype=np.float32)
    assert closest_first(vectors)[0] in (1, 3) and closest_first(vectors)[-1] == 0
