"""HSCA layer 4 and the data: round trips, and the snapshot arithmetic against the module interface's stub.

``StubEngine`` below is the interface's reference arithmetic (should_snapshot / take_snapshot) as
written. redmem agrees with it except for the deviations each ``test_deviation_*`` pins.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem.recipes.hsca import ContextSnapshot, HSCAEngine, WeightedChunk
from redmem.recipes.hsca._window import aggregate_coherence, build_snapshot, domain_break, snapshot_due, topic_label
from redmem.store._errors import ValidationError


class StubEngine:
    """The interface's should_snapshot / take_snapshot, verbatim but for the class around them."""

    def __init__(self, threshold: float = 0.72, max_chunks: int = 20) -> None:
        self.snapshot_coherence_threshold, self.max_buffer_chunks = threshold, max_chunks
        self._buffer: list[WeightedChunk] = []
        self._snapshots: list[ContextSnapshot] = []

    def should_snapshot(self) -> bool:
        if len(self._buffer) == 0:
            return False
        if len(self._buffer) >= self.max_buffer_chunks:
            return True
        total_weight = sum(c.layer1_score for c in self._buffer)
        if total_weight == 0:
            return False
        weighted_coherence = sum(c.coherence_score * c.layer1_score for c in self._buffer) / total_weight
        return weighted_coherence >= self.snapshot_coherence_threshold

    def take_snapshot(self) -> ContextSnapshot:
        forced = len(self._buffer) >= self.max_buffer_chunks
        total_weight = sum(c.layer1_score for c in self._buffer) or 1.0
        macro_weight = total_weight / len(self._buffer)
        domain_acc: dict[str, float] = {}
        for chunk in self._buffer:
            for tag in chunk.domain_tags:
                domain_acc[tag] = domain_acc.get(tag, 0.0) + chunk.layer1_score
        domain_summary = {k: v / total_weight for k, v in domain_acc.items()}
        snapshot = ContextSnapshot(snapshot_id=str(uuid.uuid4()), chunks=list(self._buffer),
                                   macro_weight=min(macro_weight, 1.0), domain_summary=domain_summary,
                                   conversation_position=len(self._snapshots), forced=forced)
        self._buffer.clear()
        self._snapshots.append(snapshot)
        return snapshot


unit = st.floats(0.0, 1.0, allow_nan=False)
tags = st.lists(st.sampled_from(["physics", "legal", "narrative", "cross_domain", "unclassified"]),
                min_size=1, max_size=3, unique=True)
chunks = st.builds(lambda i, l1, c, t, f: WeightedChunk(f"c{i}", f"text {i}", l1, t, c, f, None, 1.0 + i),
                   st.integers(0, 10**6), unit, unit, tags,
                   st.lists(st.sampled_from(["hedged", "absolute", "metaphor_model"]), max_size=2))


@settings(max_examples=80, deadline=None)
@given(st.lists(chunks, min_size=1, max_size=25), unit, st.integers(1, 20))
def test_snapshot_arithmetic_matches_the_stub(buffer, threshold, max_chunks):
    stub = StubEngine(threshold, max_chunks)
    stub._buffer = list(buffer)
    assert snapshot_due(buffer, threshold, max_chunks, min_beat=1) == stub.should_snapshot()
    ours = build_snapshot([dataclasses.replace(c) for c in buffer], 0, max_chunks)
    theirs = stub.take_snapshot()
    assert ours.forced == theirs.forced and ours.conversation_position == theirs.conversation_position
    if sum(c.layer1_score for c in buffer) > 0:
        assert ours.domain_summary == pytest.approx(theirs.domain_summary)
        assert ours.macro_weight == pytest.approx(theirs.macro_weight)


@settings(max_examples=60, deadline=None)
@given(st.lists(chunks, min_size=0, max_size=5), unit, st.integers(0, 10**6), st.booleans())
def test_to_dict_from_dict_round_trips(buffer, macro, position, forced):
    for chunk in buffer:
        chunk.layer1_score, chunk.coherence_score = round(chunk.layer1_score, 4), round(chunk.coherence_score, 4)
        assert WeightedChunk.from_dict(chunk.to_dict()) == chunk
    snapshot = ContextSnapshot("s", buffer, round(macro, 4), {"physics": round(macro, 4)}, position, forced, 2.0)
    assert ContextSnapshot.from_dict(snapshot.to_dict()) == snapshot
    assert ContextSnapshot.from_dict(ContextSnapshot.from_dict(snapshot.to_dict()).to_dict()).to_dict() == snapshot.to_dict()


def test_from_dict_defaults_the_optional_keys():
    chunk = WeightedChunk.from_dict({"chunk_id": "c", "text": "t", "layer1_score": 0.5, "coherence_score": 0.4})
    assert (chunk.domain_tags, chunk.nuance_flags, chunk.parent_id, chunk.created_at) == (["unclassified"], [], None, 0.0)
    snapshot = ContextSnapshot.from_dict({"snapshot_id": "s", "macro_weight": 0.1})
    assert (snapshot.chunks, snapshot.domain_summary, snapshot.conversation_position, snapshot.forced) == ([], {}, 0, False)


def chunk(l1: float, coherence: float, tag: str = "physics") -> WeightedChunk:
    return WeightedChunk(str(uuid.uuid4()), "t", l1, [tag], coherence, [], None)


def test_deviation_a_threshold_snapshot_needs_a_minimum_beat_of_two_chunks():
    one = [chunk(0.9, 0.95)]
    stub = StubEngine()
    stub._buffer = list(one)
    assert stub.should_snapshot()  # the stub makes every coherent turn a beat of its own
    assert not snapshot_due(one, 0.72, 20)
    assert snapshot_due(one + [chunk(0.5, 0.8)], 0.72, 20)
    assert snapshot_due(one, 0.72, 20, min_beat=1)  # min_beat_chunks=1 restores the stub


def test_deviation_none_the_threshold_is_reached_at_equality_and_a_full_buffer_is_forced():
    # the prose says "exceeds"; the stub's >= is kept, for the threshold and for the full buffer
    assert aggregate_coherence([chunk(0.5, 0.72), chunk(0.5, 0.72)]) == pytest.approx(0.72)
    assert snapshot_due([chunk(0.5, 0.72), chunk(0.5, 0.72)], 0.72, 20)
    full = [chunk(0.5, 0.1) for _ in range(20)]
    assert snapshot_due(full, 0.72, 20) and build_snapshot(full, 0, 20).forced
    assert not build_snapshot(full[:19], 0, 20).forced


def test_deviation_parent_id_is_set_to_the_snapshot_id():
    buffer = [chunk(0.5, 0.9), chunk(0.4, 0.9)]
    snapshot = build_snapshot(buffer, 3, 20)
    assert {c.parent_id for c in buffer} == {c.parent_id for c in snapshot.chunks} == {snapshot.snapshot_id}


def test_deviation_an_empty_buffer_is_a_validation_error_not_a_zero_division():
    stub = StubEngine()
    with pytest.raises(ZeroDivisionError):
        stub.take_snapshot()
    with pytest.raises(ValidationError):
        build_snapshot([], 0, 20)
    with pytest.raises(ValidationError):
        HSCAEngine().take_snapshot()


def test_deviation_a_weightless_buffer_shares_its_domains_by_chunk_count_not_zero():
    buffer = [chunk(0.0, 0.9, "physics"), chunk(0.0, 0.9, "physics"), chunk(0.0, 0.9, "legal")]
    stub = StubEngine()
    stub._buffer = [dataclasses.replace(c) for c in buffer]
    assert stub.take_snapshot().domain_summary == {"physics": 0.0, "legal": 0.0}
    assert build_snapshot(buffer, 0, 20).domain_summary == pytest.approx({"physics": 2 / 3, "legal": 1 / 3})


def test_deviation_a_weightless_buffer_has_macro_weight_zero_not_one_over_n():
    buffer = [chunk(0.0, 0.9), chunk(0.0, 0.9), chunk(0.0, 0.9), chunk(0.0, 0.9)]
    stub = StubEngine()
    stub._buffer = list(buffer)
    assert stub.take_snapshot().macro_weight == 0.25
    assert build_snapshot(buffer, 0, 20).macro_weight == 0.0


def test_deviation_text_is_dropped_from_snapshots_on_request():
    buffer = [WeightedChunk("c1", "keep me", 0.5, ["legal"], 0.9, [], None)]
    assert build_snapshot(buffer, 0, 20).chunks[0].text == "keep me"
    dropped = build_snapshot(buffer, 0, 20, keep_text=False)
    assert dropped.chunks[0].text == "" and buffer[0].text == "keep me"
    assert dropped.weight_map() == {"c1": 0.5}


def test_the_engine_keeps_the_interface_defaults_and_takes_snapshots_as_it_ingests():
    engine = HSCAEngine()
    assert (engine.snapshot_coherence_threshold, engine.max_buffer_chunks, engine.cooccurrence_window) == (0.72, 20, 5)
    turns = ["Redis stores data in memory. Memory access makes Redis fast. Fast data access is why teams pick Redis.",
             "So how does Redis persist data to disk? Does the memory data survive a restart?"]
    first = engine.ingest_turn(turns[0])
    assert first.parent_id is None and engine.buffer == [first]
    second = engine.ingest_turn(turns[1])
    [snapshot] = engine.get_macro_context()
    assert first.parent_id == second.parent_id == snapshot.snapshot_id and engine.buffer == []
    assert snapshot.conversation_position == 0 and not snapshot.forced


def test_a_buffer_that_never_coheres_is_forced_at_max_buffer_chunks():
    engine = HSCAEngine(max_buffer_chunks=4)
    for _ in range(9):
        engine.ingest_turn("asdf qwer zxcv")
    assert [(s.conversation_position, s.forced, len(s.chunks)) for s in engine.get_macro_context()] == [
        (0, True, 4), (1, True, 4)]
    assert len(engine.buffer) == 1


@pytest.mark.parametrize("options", [
    {"snapshot_coherence_threshold": 1.5}, {"snapshot_coherence_threshold": "high"}, {"max_buffer_chunks": 0},
    {"cooccurrence_window": -1}, {"min_beat_chunks": 0}, {"agent_id": "a"}, {"session_id": "s"},
])
def test_bad_engine_options_are_validation_errors(options):
    with pytest.raises(ValidationError):
        HSCAEngine(**options)


def tagged(tags: list[str], layer1: float = 0.5) -> WeightedChunk:
    return WeightedChunk(str(uuid.uuid4()), "text", layer1, tags, 0.9, [], None)


def test_a_beat_ends_where_the_topic_changes_and_chat_joins_the_beat_it_arrives_in():
    legal, medical = tagged(["legal"]), tagged(["medical"])
    assert topic_label(tagged(["legal", "medical", "cross_domain"])) == "cross_domain"
    assert topic_label(tagged(["conversational"])) is None and topic_label(tagged(["unclassified"])) is None
    assert domain_break([legal, legal], medical) and not domain_break([legal, medical, legal], legal)
    assert domain_break([legal], tagged(["legal", "medical", "cross_domain"]))
    assert not domain_break([legal], tagged(["conversational"])) and not domain_break([tagged(["unclassified"])], medical)
    # the buffer's label carries most of its layer-1 weight (by count when it has none)
    assert not domain_break([tagged(["legal"], 0.9), tagged(["medical"], 0.1), tagged(["medical"], 0.1)], legal)
    assert domain_break([tagged(["legal"], 0.0), tagged(["medical"], 0.0), tagged(["medical"], 0.0)], legal)


def test_a_turn_that_still_carries_the_beats_domain_continues_the_beat():
    """A turn whose first tag differs but whose tags include the beat's domain (a sentence of a
    language reference tagged mathematics, then technical_prose) is still the beat's topic; a
    turn without it, or a cross-domain one, ends the beat."""
    technical = tagged(["technical_prose"])
    assert not domain_break([technical, technical], tagged(["mathematics", "technical_prose"]))
    assert domain_break([technical], tagged(["mathematics"]))
    assert domain_break([technical], tagged(["technical_prose", "legal", "cross_domain"]))


def test_a_turn_labelled_with_an_everyday_topic_ends_a_subject_beat_it_is_also_tagged_with():
    """By meaning an everyday-topic turn holds no subject of its own: a subject tag after its
    everyday label was taken from the context, so it does not keep the subject's beat open."""
    philosophical = tagged(["philosophical", "poetry"])
    assert domain_break([philosophical], tagged(["emotions", "poetry", "philosophical"]))
    assert not domain_break([philosophical], tagged(["poetry", "philosophical"]))


def test_the_engine_snapshots_the_buffer_before_a_turn_that_changes_the_domain():
    engine = HSCAEngine(domain_model=None, max_buffer_chunks=10, snapshot_coherence_threshold=1.0)
    legal = ["The court ruled that the lease contract bound the tenant.",
             "The tenant appealed the court ruling on the lease contract."]
    medical = "The doctor gave the patient a new medication for the fever."
    for turn in legal:
        engine.ingest_turn(turn)
    assert engine.get_macro_context() == [] and len(engine.buffer) == 2
    chunk = engine.ingest_turn(medical)
    [beat] = engine.get_macro_context()
    assert [c.text for c in beat.chunks] == legal and engine.buffer == [chunk]
