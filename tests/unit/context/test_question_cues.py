"""Question cues: who the question names and whether it asks when move direct hits up, nothing else."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from redmem.context._candidates import Candidate
from redmem.context._neighbours import Turn
from redmem.context._question_cues import (
    CUES_SIGNAL,
    SPEAKER_WEIGHT,
    WHEN_WEIGHT,
    cue_bonus,
    question_cues,
    rescore_by_cues,
)
from redmem.context._retrieval import MATCH_SIGNAL
from redmem.model._dbkey import DbKey
from redmem.store._keys import KeySpace

SPACE = KeySpace("t", "m")


def test_a_named_speaker_gains_the_speaker_weight():
    cues = question_cues("What did Caroline research?")
    assert cue_bonus(cues, Turn("Caroline", "adoption agencies")) == SPEAKER_WEIGHT
    assert cue_bonus(cues, Turn("Melanie", "adoption agencies")) == 0.0
    assert cue_bonus(cues, Turn("", "adoption agencies")) == 0.0
    assert question_cues("what did ana lopez say").names("Ana Lopez")
    assert not question_cues("what did ana say").names("Ana Lopez")


def test_a_time_gains_only_when_the_question_asks_when():
    assert cue_bonus(question_cues("When did Bob move?"), Turn("", "We moved last May")) == WHEN_WEIGHT
    assert cue_bonus(question_cues("What year did Bob move?"), Turn("Bob", "in 2021")) == SPEAKER_WEIGHT + WHEN_WEIGHT
    assert cue_bonus(question_cues("Where did Bob move?"), Turn("", "We moved last May")) == 0.0
    assert cue_bonus(question_cues("When did Bob move?"), Turn("", "We moved to Lisbon")) == 0.0


def candidate(i, combined, match, push=None):
    signals = {} if match is None else {MATCH_SIGNAL: match}
    return Candidate(
        DbKey(SPACE, str(i)),
        record=i,
        pull=None if match is None else combined,
        push=push,
        signals=signals,
        combined=combined,
    )


def test_the_named_speakers_line_moves_above_a_better_fused_one():
    speakers = {0: "Melanie", 1: "Caroline"}
    ranked = rescore_by_cues(
        [candidate(0, 1.0, 0.9), candidate(1, 0.9, 0.8)],
        "What did Caroline paint?",
        lambda c: Turn(speakers[c.record], "a sunset"),
    )
    assert [c.record for c in ranked] == [1, 0]
    assert ranked[0].signals[CUES_SIGNAL] == SPEAKER_WEIGHT and ranked[0].combined == 0.9 + SPEAKER_WEIGHT


scores = st.floats(0.0, 1.0, allow_nan=False)


@given(st.lists(st.tuples(scores, scores, st.booleans(), st.booleans()), max_size=12), st.booleans())
def test_only_direct_hits_gain_never_fall_and_reorder_among_their_places(rows, asks_when):
    """Bonuses are >= 0 and go to direct hits only (match > 0), which are ordered by the new score
    in the places direct hits held; graph-only and push-only candidates keep their places."""
    found = [candidate(i, c, m if direct else 0.0) for i, (c, m, direct, _) in enumerate(rows)]
    found.append(candidate(len(found), 0.5, None, push=0.5))
    before = [(c.record, c.combined) for c in found]
    named = {i for i, row in enumerate(rows) if row[3]}
    question = ("When" if asks_when else "What") + " did Ana go?"
    ranked = rescore_by_cues(list(found), question, lambda c: Turn("Ana" if c.record in named else "Bo", "last week"))
    direct = [i for i, c in enumerate(ranked) if c.signals.get(MATCH_SIGNAL, 0.0) > 0.0]
    assert direct == [i for i, c in enumerate(found) if c.signals.get(MATCH_SIGNAL, 0.0) > 0.0]
    for i, (record, combined) in enumerate(before):
        c = next(c for c in ranked if c.record == record)
        assert c.combined >= combined
        if i not in direct:
            assert ranked[i].record == record and c.combined == combined and CUES_SIGNAL not in c.signals
    scores_in_place = [ranked[i].combined for i in direct]
    assert scores_in_place == sorted(scores_in_place, reverse=True)
