"""HSCA backward bridging: a later beat close in meaning to an earlier, frozen one is linked to it
through a new bridge snapshot carrying both domains; the frozen snapshot is never edited."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.embeddings import MiniLMEmbeddings
from redmem.recipes.hsca import ContextSnapshot, EmbeddingDomains, HSCAEngine

POEM = ["The poem describes autumn leaves letting go of the branch.",
        "Every stanza lets something fall and calls it grace."]
TEACHING = ["Buddhist teachers speak of non-attachment as the end of suffering.",
            "Letting go of what we cling to brings peace of mind."]
FORGIVING = ["I felt so calm after I finally let go of my anger at him.", "Forgiving him made me happy again."]
PUPPY = ["We adopted a puppy from the shelter last month.", "He chews everything and sleeps on my bed."]
JOGGING = ["Walking the dog every morning keeps me fit.", "We jog five kilometres through the park together."]
LAWSUIT = ["The court dismissed the lawsuit because it was filed too late.",
           "The judge said the contract's deadline had passed years ago."]


@pytest.fixture(scope="module")
def meaning() -> EmbeddingDomains:
    return EmbeddingDomains(MiniLMEmbeddings())


def replay(engine: HSCAEngine, *beats: list[str]) -> list[set[str]]:
    """Ingest the beats, freeze the last, and return each beat's chunk ids."""
    ids = [{engine.ingest_turn(t).chunk_id for t in beat} for beat in beats]
    if engine.buffer:
        engine.take_snapshot()
    return ids


def bridges(engine: HSCAEngine) -> list[ContextSnapshot]:
    """The snapshots holding a chunk an earlier snapshot already holds."""
    seen: set[str] = set()
    found = []
    for snapshot in engine.get_macro_context():
        ids = {c.chunk_id for c in snapshot.chunks}
        if ids & seen:
            found.append(snapshot)
        seen |= ids
    return found


def test_a_later_beat_bridges_back_through_a_new_snapshot(meaning):
    engine = HSCAEngine(domain_model=meaning)
    poem, teaching = replay(engine, POEM, TEACHING)
    first = engine.get_macro_context()[0]
    assert {c.chunk_id for c in first.chunks} == poem and set(first.domain_summary) == {"poetry"}
    (bridge,) = bridges(engine)
    held = {c.chunk_id for c in bridge.chunks}
    assert held & poem and held & teaching and bridge.conversation_position == len(engine.get_macro_context()) - 1
    assert all({"poetry", "philosophical"} <= set(c.domain_tags) for c in bridge.chunks)
    assert bridge.domain_summary["philosophical"] > 0 and bridge.domain_summary["poetry"] > 0


def test_an_unrelated_later_beat_makes_no_bridge(meaning):
    engine = HSCAEngine(domain_model=meaning)
    replay(engine, POEM, LAWSUIT)
    assert bridges(engine) == [] and len(engine.get_macro_context()) == 2


def test_two_everyday_topics_make_no_bridge(meaning):
    """Pets then fitness, close in meaning: chat, not a bridge (neither side is a subject domain)."""
    engine = HSCAEngine(domain_model=meaning)
    replay(engine, PUPPY, JOGGING)
    tags = [set(c.domain_tags) for s in engine.get_macro_context() for c in s.chunks]
    assert {"pets"} in tags and any("fitness" in t for t in tags)
    assert bridges(engine) == []


def test_an_everyday_turn_still_bridges_back_to_a_subject(meaning):
    """Philosophy then feelings: one side is a subject domain, so the link stands."""
    engine = HSCAEngine(domain_model=meaning)
    teaching, forgiving = replay(engine, TEACHING, FORGIVING)
    (bridge,) = bridges(engine)
    held = {c.chunk_id for c in bridge.chunks}
    assert held & teaching and held & forgiving
    assert all({"philosophical", "emotions"} <= set(c.domain_tags) for c in bridge.chunks)


def test_keyword_lists_make_no_bridge():
    engine = HSCAEngine(domain_model=None)
    replay(engine, POEM, TEACHING)
    assert bridges(engine) == []


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(POEM + TEACHING + LAWSUIT + PUPPY + JOGGING), min_size=2, max_size=8))
def test_frozen_snapshots_are_never_edited(meaning, turns):
    engine = HSCAEngine(domain_model=meaning)
    for at, turn in enumerate(turns):
        before = [s.to_dict() for s in engine.get_macro_context()]
        engine.ingest_turn(turn)
        if engine.buffer and at % 3 == 2:
            engine.take_snapshot()
        assert [s.to_dict() for s in engine.get_macro_context()][: len(before)] == before
