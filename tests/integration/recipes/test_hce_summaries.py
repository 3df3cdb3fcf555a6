"""Topic summaries stored beside the tree: within their token bound, rewritten only for topics that
gained members, written by a summariser when one is given, exported, loaded and cleared with the session."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.recipes.hce import HCEInteraction, HCEPipeline, SemanticTree, TopicSummary
from redmem.recipes.hce._keys import HCEKeyKind

SESSIONS = itertools.count()
WORDS = ["Ana", "moved", "to", "Lisbon.", "She", "likes", "curry!", "Why?", "the", "blue", "notebook", "2023"]


class TopicProvider:
    """Turns about ``t<k>`` share a direction, so each k is one topic."""

    dimensions, max_batch_size = 8, 1000

    def embed(self, texts, input_type="document"):
        out = []
        for text in texts:
            k = int(text.split("t", 1)[1].split()[0]) if " t" in f" {text}" else 0
            out.append(np.eye(8, dtype=np.float32)[k % 8] + 0.01 * (len(text) % 5))
        return np.stack(out)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    turns=st.lists(
        st.tuples(st.integers(0, 3), st.lists(st.sampled_from(WORDS), min_size=1, max_size=25)), min_size=1, max_size=15
    ),
    max_tokens=st.integers(1, 60),
)
def test_every_topic_gets_a_summary_within_its_bound(db, turns, max_tokens):
    session = f"sum-{next(SESSIONS)}"
    pipe = HCEPipeline(session_id=session, embedding_provider=TopicProvider())
    pipe.update_many((f"t{k} {' '.join(words)}", "noted.") for k, words in turns)
    written = pipe.summarise_topics(max_tokens=max_tokens)
    topics = {r.topic_id for r in HCEInteraction.query.filter(session_id=session).all()}
    assert set(written) == topics == set(pipe.topic_summaries())
    for summary in written.values():
        assert summary.tokens == pipe.count_tokens(summary.text) <= max_tokens
    sizes = {t: sum(r.topic_id == t for r in HCEInteraction.query.filter(session_id=session).all()) for t in topics}
    assert {t: s.members for t, s in written.items()} == sizes


def test_only_topics_that_gained_members_are_summarised_again(db):
    pipe = HCEPipeline(session_id="stale", embedding_provider=TopicProvider())
    pipe.update_many([("t0 Ana moved to Lisbon. She likes it.", "noted."), ("t1 The blue notebook.", "ok.")])
    first = pipe.summarise_topics()
    assert len(first) == 2 and pipe.summarise_topics() == {}
    pipe.update("t1 Another notebook story.", "ok.")
    again = pipe.summarise_topics()
    [topic] = again
    assert again[topic].members == 2 and first[topic].members == 1
    assert pipe.topic_summaries([topic]) == again


def test_a_summariser_writes_the_summary_cut_to_the_bound(db):
    seen = []

    def summariser(texts, max_tokens):
        seen.append((list(texts), max_tokens))
        return "A long summary " * 50

    pipe = HCEPipeline(session_id="llm", embedding_provider=TopicProvider())
    pipe.update_many([("t2 Ana moved to Lisbon.", "noted."), ("t2 She likes Lisbon.", "ok.")])
    [summary] = pipe.summarise_topics(max_tokens=12, summariser=summariser).values()
    assert seen and seen[0][1] == 12 and len(seen[0][0]) == 2
    assert summary.text.startswith("A long summary") and pipe.count_tokens(summary.text) <= 12


def test_summaries_travel_with_the_export_and_go_with_clear(db, tmp_path):
    tree = SemanticTree("exp", nest_threshold=0.2)
    pipe = HCEPipeline(session_id="exp", embedding_provider=TopicProvider(), tree=tree)
    pipe.update_many([("t0 Ana moved to Lisbon.", "noted."), ("t3 The blue notebook.", "ok.")])
    written = pipe.summarise_topics()
    pipe.save(tmp_path)
    pipe.clear()
    key = tree.space.key(HCEKeyKind.TOPIC_SUMMARIES)
    assert not HCEInteraction._meta.client.exists(key, tree.groups_key)
    pipe.load(tmp_path)
    assert pipe.topic_summaries() == written
    assert all(isinstance(s, TopicSummary) for s in written.values())
