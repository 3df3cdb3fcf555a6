"""HSCA backward bridging: a later beat close in meaning to an earlier, frozen one is linked to it
through a new bridge snapshot carrying both domains; the frozen snapshot is never edited."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem.embeddings import MiniLMEmbeddings
from redmem.recipes.hsca import ContextSnapshot, EmbeddingDomains, HSCAEngine, WeightedChunk
from redmem.recipes.hsca._bridging import _own_domain, bridge_links, side_cosine, with_evidence
from redmem.recipes.hsca._scoring import ScoredTurn, score_turn
from redmem.recipes.hsca._text import parse_turn

POEM = [
    "The poem describes autumn leaves letting go of the branch.",
    "Every stanza lets something fall and calls it grace.",
]
TEACHING = [
    "Buddhist teachers speak of non-attachment as the end of suffering.",
    "Letting go of what we cling to brings peace of mind.",
]
FORGIVING = ["I felt so calm after I finally let go of my anger at him.", "Forgiving him made me happy again."]
PUPPY = ["We adopted a puppy from the shelter last month.", "He chews everything and sleeps on my bed."]
JOGGING = ["Walking the dog every morning keeps me fit.", "We jog five kilometres through the park together."]
LAWSUIT = [
    "The court dismissed the lawsuit because it was filed too late.",
    "The judge said the contract's deadline had passed years ago.",
]


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


def scored(chunk_id: str, weight: float) -> ScoredTurn:
    text = f"Turn {chunk_id} about the harbour."
    chunk = WeightedChunk(chunk_id, text, weight, ["historical"], 0.5, [], None)
    return ScoredTurn(chunk, parse_turn(text), {})


weights = st.sampled_from([0.0, 0.0, 0.1, 0.2])


@given(
    st.lists(weights, min_size=1, max_size=4),
    st.lists(weights, min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=4),
)
def test_a_bridge_of_weightless_turns_brings_the_heaviest_turn_of_each_beat(old_weights, new_weights, pairs):
    """A bridge snapshot weighs its chunks' layer-1 total: when every linked turn weighs 0, each
    linked turn's beat lends its heaviest weighted turn, so the bridge is never weightless while
    the beats hold weight; a bridge with weight already is left as it is."""
    old_beat = [scored(f"o{i}", w) for i, w in enumerate(old_weights)]
    new_beat = [scored(f"n{i}", w) for i, w in enumerate(new_weights)]
    indices = dict.fromkeys((i % len(old_beat), j % len(new_beat)) for i, j in pairs)
    links = [(old_beat[i], new_beat[j]) for i, j in indices]
    beat_of = {t.chunk.chunk_id: old_beat for t in old_beat} | {t.chunk.chunk_id: new_beat for t in new_beat}
    out = with_evidence(links, beat_of)
    assert out[: len(links)] == links and len({(a.chunk.chunk_id, b.chunk.chunk_id) for a, b in out}) == len(out)
    linked_weight = sum(t.chunk.layer1_score for pair in links for t in pair)
    if linked_weight > 0:
        assert out == links
    else:
        held = {t.chunk.chunk_id for pair in out for t in pair}
        lent = held - {t.chunk.chunk_id for pair in links for t in pair}
        assert all(
            t.chunk.layer1_score == max(u.chunk.layer1_score for u in b) > 0
            for b in (old_beat, new_beat)
            for t in b
            if t.chunk.chunk_id in lent
        )
        for beat in (old_beat, new_beat):
            heaviest = max(beat, key=lambda t: t.chunk.layer1_score)
            assert heaviest.chunk.layer1_score == 0 or heaviest.chunk.chunk_id in held
        assert all(a in old_beat and b in new_beat for a, b in out)


class Table:
    """An embedder that looks each text up in a table of vectors (words of no domain's keyword list)."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


#: Two domains on two axes; an earlier beat on the legal axis; a later poetry beat whose first
#: turn leans towards it (cosine 0.41 >= the bridge cosine 0.3) and whose second leans away, so
#: the later beat as a whole is far from it (mean vector at cosine -0.13).
GATE_VECTORS = {
    "Courts weigh ledgers.": [1.0, 0.0, 0.0],
    "Verses sing softly.": [0.0, 1.0, 0.0],
    "Alpha bravo charlie.": [1.0, 0.0, 0.0],
    "Delta echo foxtrot.": [1.0, 0.05, 0.0],
    "Golf hotel india.": [0.4, 0.9, 0.0],
    "Juliet kilo lima.": [-0.6, 0.5, 0.6],
}


def gate_model() -> EmbeddingDomains:
    return EmbeddingDomains(
        Table(GATE_VECTORS), prototypes={"legal": ["Courts weigh ledgers."], "poetry": ["Verses sing softly."]}
    )


def test_one_close_pair_in_a_beat_far_from_the_earlier_side_makes_no_link():
    """One turn pair at the bridge cosine is chance when the two sides' meanings are far apart
    (issue 30, round j: eval 5's controls took A's domain from a single turn pair); the same
    pair links when its beat as a whole is near the earlier side."""
    model = gate_model()
    earlier = [score_turn(t, 5, domain_model=model) for t in ("Alpha bravo charlie.", "Delta echo foxtrot.")]
    close, away = (score_turn(t, 5, domain_model=model) for t in ("Golf hotel india.", "Juliet kilo lima."))
    assert close.chunk.domain_tags[0] == away.chunk.domain_tags[0] == "poetry"
    assert float(model.vector(close.parsed.text) @ model.vector(earlier[0].parsed.text)) >= model.bridge
    assert side_cosine([close, away], earlier, model) < model.bridge <= side_cosine([close], earlier, model)
    assert bridge_links([close, away], earlier, model) == []
    assert bridge_links([close], earlier, model) == [(earlier[0], close), (earlier[1], close)]


POOL = ["Alpha bravo charlie.", "Delta echo foxtrot.", "Golf hotel india.", "Juliet kilo lima."]
axis = st.floats(-1.0, 1.0, allow_nan=False).map(lambda x: round(x, 2))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(axis, axis, axis).filter(lambda v: sum(x * x for x in v) > 0.01), min_size=4, max_size=4),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
    st.lists(st.integers(0, 3), min_size=1, max_size=3),
)
def test_every_link_has_both_its_turns_and_both_sides_at_the_bridge_cosine(vectors, old_at, new_at):
    """Whatever the vectors: a link's two turns reach the bridge cosine, and so do the mean
    vectors of the later beat and of the earlier turns of the linked turn's own domain."""
    table = {**dict(zip(POOL, (list(v) for v in vectors), strict=True)),
             "Courts weigh ledgers.": [1.0, 0.0, 0.0], "Verses sing softly.": [0.0, 1.0, 0.0]}
    model = EmbeddingDomains(
        Table(table), prototypes={"legal": ["Courts weigh ledgers."], "poetry": ["Verses sing softly."]}
    )
    earlier = [score_turn(POOL[i], 5, domain_model=model) for i in old_at]
    later = [score_turn(POOL[i], 5, domain_model=model) for i in new_at]
    for old, new in bridge_links(later, earlier, model):
        assert float(model.vector(old.parsed.text) @ model.vector(new.parsed.text)) >= model.bridge
        same = [t for t in earlier if _own_domain(t.chunk) == _own_domain(old.chunk)]
        assert side_cosine(later, same, model) >= model.bridge
