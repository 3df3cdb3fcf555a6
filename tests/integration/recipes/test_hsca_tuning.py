"""HSCA self-tuning: served queries recorded per agent in Redis, bounded seeded tuning, the tuned
parameters stored per agent and used by HSCAEngine.for_agent; flag weights scale layer 1."""

from __future__ import annotations

import dataclasses

import pytest

from redmem.recipes.hsca import Beat, HSCAEngine, HSCAParameters, ServedRecord, SessionStore, tune
from redmem.recipes.hsca._history import served_history
from redmem.recipes.hsca._scoring import weighted_layer1
from redmem.recipes.hsca._tuning import FLAG_WEIGHT_GRID, THRESHOLD_GRID, WINDOW_BOUNDS, load_parameters
from redmem.recipes.hsca._window import build_snapshot
from redmem.store._errors import ValidationError

CENTRAL = [
    "The patient came in with a high fever and a cough.",
    "Her fever rose again overnight, so the doctor ordered blood tests.",
    "The blood tests showed an infection, and the doctor started antibiotics.",
    "After two days of antibiotics the fever broke and the cough eased.",
]
ASIDE = ("Unrelated, but I spent the whole weekend rebuilding my home network. The old router kept dropping "
         "the connection. I bought a new router and broke the printer setup. The smart lights blinked all night. "
         "By Sunday evening everything worked, except the doorbell camera.")


def interact(agent: str, session: str) -> HSCAEngine:
    engine = HSCAEngine.for_agent(agent, session_id=session)
    chunks = [engine.ingest_turn(t) for t in [CENTRAL[0], ASIDE, *CENTRAL[1:]]]
    if engine.buffer:
        engine.take_snapshot()
    engine.record_served("fever doctor", [c.chunk_id for i, c in enumerate(chunks) if i != 1])
    return engine


def test_flag_weights_scale_layer_one_capped_at_one():
    assert weighted_layer1(0.4, ["short_chunk", "hedged"], None) == 0.4
    assert weighted_layer1(0.4, ["short_chunk", "hedged"], {"short_chunk": 1.5, "hedged": 0.5}) == pytest.approx(0.3)
    assert weighted_layer1(0.9, ["short_chunk"], {"short_chunk": 1.5}) == 1.0
    plain = HSCAEngine().score_layers(CENTRAL[0])
    weighted = HSCAEngine(flag_weights={"short_chunk": 0.5}).score_layers(CENTRAL[0])
    assert weighted.layer1_score == pytest.approx(plain.layer1_score * 0.5)
    with pytest.raises(ValidationError):
        HSCAEngine(flag_weights={"hedged": -1.0})


def test_served_queries_are_recorded_per_agent(db):
    interact("agent-a", "s-1")
    interact("agent-a", "s-2")
    interact("agent-b", "s-1")
    assert [q.session_id for q in served_history("agent-a")] == ["s-1", "s-2"]
    assert len(served_history("agent-b")) == 1 and len(served_history("agent-b")[0].served) == 4
    assert ServedRecord.query.filter(agent_id="agent-a").count() == 2
    with pytest.raises(ValidationError):
        HSCAEngine().record_served("q", ["c"])
    with pytest.raises(ValidationError):
        HSCAEngine(agent_id="a", session_id="s").record_served("q", [])


def test_no_history_gives_the_defaults(db):
    assert load_parameters("nobody") == HSCAParameters()
    result = tune("nobody")
    assert result.parameters == HSCAParameters() and result.queries == 0


def test_tuning_is_bounded_reproducible_stored_and_used_by_a_new_engine(db):
    for i in range(6):
        interact("agent-t", f"s-{i}")
    first = tune("agent-t", seed=3, store=False)
    again = tune("agent-t", seed=3)
    assert first == again  # same history and seed: same parameters
    tuned = again.parameters
    assert WINDOW_BOUNDS[0] <= tuned.cooccurrence_window <= WINDOW_BOUNDS[1]
    assert min(THRESHOLD_GRID) <= tuned.snapshot_coherence_threshold <= max(THRESHOLD_GRID)
    assert all(min(FLAG_WEIGHT_GRID) <= w <= max(FLAG_WEIGHT_GRID) for w in tuned.flag_weights.values())
    assert tuned.history == 6 and again.ranking_auc[1] >= again.ranking_auc[0] - 1e-9
    assert load_parameters("agent-t") == tuned and load_parameters("agent-other") == HSCAParameters()
    engine = HSCAEngine.for_agent("agent-t")
    assert (engine.cooccurrence_window, engine.snapshot_coherence_threshold, engine.flag_weights) == (
        tuned.cooccurrence_window, tuned.snapshot_coherence_threshold, dict(tuned.flag_weights))


def test_a_short_history_moves_the_parameters_less_than_a_long_one(db):
    for i in range(3):
        interact("short", f"s-{i}")
    for i in range(30):
        interact("long", f"s-{i}")
    short, long = tune("short", seed=1).parameters, tune("long", seed=1).parameters

    def moved(p: HSCAParameters) -> float:
        return sum(abs(w - 1.0) for w in p.flag_weights.values()) + abs(p.snapshot_coherence_threshold - 0.72)

    assert moved(short) <= moved(long)


def test_a_bridge_snapshot_repeating_chunks_does_not_change_the_tuning(db):
    """A bridge snapshot holds copies of turns already in the session (same chunk ids): the tuner
    reads each turn once, in conversation order, so the copies change nothing it computes."""
    for i in range(4):
        interact("plain", f"s-{i}")
        engine = interact("bridged", f"s-{i}")
        copies = [dataclasses.replace(c) for c in engine.get_macro_context()[0].chunks]
        store = SessionStore("bridged", f"s-{i}")
        store.append(Beat(build_snapshot(copies, store.next_position(), 20), {}))
    plain, bridged = tune("plain", seed=2, store=False), tune("bridged", seed=2, store=False)
    assert (bridged.ranking_auc, bridged.beat_f1, bridged.domain_match) == (
        plain.ranking_auc, plain.beat_f1, plain.domain_match)
    assert bridged.parameters == plain.parameters


REPLIES = [
    "The patient came in with a high fever and a cough.",
    "Nurses checked twice before midnight.",
    "Grandmother knitted scarves meanwhile.",
    "Visitors brought oranges and magazines.",
]
TIED_ASIDE = ("The patient in the next bed spent the weekend rebuilding a home network. The old router kept "
              "dropping the connection. A new router broke the printer setup. The smart lights blinked all night. "
              "By Sunday evening everything worked, except the doorbell camera.")


def test_an_agent_whose_replies_serve_without_taking_up_words_tunes_layer_one_toward_them(db):
    """Served replies that bring only new words score 0 by default, below a long aside the
    conversation barely takes up; the tuner finds the short-turn prior and tie saturation that
    rank them above it, and a new engine of the agent weighs such a reply above 0."""
    for i in range(40):
        engine = HSCAEngine.for_agent("replies", session_id=f"s-{i}", domain_model=None)
        chunks = [engine.ingest_turn(t) for t in [REPLIES[0], TIED_ASIDE, *REPLIES[1:]]]
        if engine.buffer:
            engine.take_snapshot()
        engine.record_served("who visited", [c.chunk_id for j, c in enumerate(chunks) if j != 1])
    result = tune("replies", seed=5)
    tuned = result.parameters
    assert tuned.short_prior > 0 and tuned.tie_saturation >= HSCAParameters().tie_saturation
    assert result.ranking_auc[1] > result.ranking_auc[0]
    engine = HSCAEngine.for_agent("replies", domain_model=None)
    assert (engine.tie_saturation, engine.short_prior) == (tuned.tie_saturation, tuned.short_prior)
    untuned = HSCAEngine(domain_model=None)
    untuned.ingest_turn(REPLIES[0])
    engine.ingest_turn(REPLIES[0])
    assert untuned.ingest_turn(REPLIES[1]).layer1_score == 0.0 < engine.ingest_turn(REPLIES[1]).layer1_score


def test_only_the_chunks_shown_count_as_negatives(db):
    """A record with the chunks shown: the tuner ranks the served chunks against the shown ones
    that did not serve, and a chunk never shown is no negative (issue 30, eval 3)."""
    engine = HSCAEngine.for_agent("shown", session_id="s-1", domain_model=None)
    chunks = [engine.ingest_turn(t) for t in [CENTRAL[0], ASIDE, *CENTRAL[1:]]]
    if engine.buffer:
        engine.take_snapshot()
    weight = {c.chunk_id: c.layer1_score for s in engine.get_macro_context() for c in s.chunks}
    served, aside = chunks[0].chunk_id, chunks[1].chunk_id
    engine.record_served("fever", [served], shown_chunk_ids=[served, aside])
    assert served_history("shown")[0].shown == (served, aside)
    expected = 1.0 if weight[served] > weight[aside] else 0.5 if weight[served] == weight[aside] else 0.0
    unshown = [weight[c.chunk_id] for c in chunks[2:]]
    everything = sum((weight[served] > w) + 0.5 * (weight[served] == w) for w in [weight[aside], *unshown]) / 4
    assert expected != everything  # the unshown turns would change the reading
    assert tune("shown", store=False).ranking_auc[0] == pytest.approx(expected)
    with pytest.raises(ValidationError):
        engine.record_served("fever", [served], shown_chunk_ids=[aside])


def test_a_history_of_up_to_a_thousand_queries_is_read_whole(db):
    """The tuner moves n / (n + 200) of the way with n queries read: reading 400 of eval 3's 1,000
    served queries it moved 0.67 of the way, and on eval 3's tuning half that cost 0.027 of AUC
    (issue 30, round l), so a history up to 1,000 queries is read whole, not sampled down to 400."""
    engine = interact("agent-long", "s-1")
    served = [c.chunk_id for s in engine.get_macro_context() for c in s.chunks if c.text != ASIDE]
    for _ in range(400):
        engine.record_served("fever doctor", served)
    result = tune("agent-long", seed=3, store=False)
    assert result.queries == 401 and result.parameters.history == 401
