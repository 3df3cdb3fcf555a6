"""The assembler's default second look at its candidates: the speaker a question names, and a time
for a question asking when, move a direct hit up; ``question_cues=False`` ranks as fusion did."""

from __future__ import annotations

import pytest

from redmem import ContextAssembler, DefaultMemory
from redmem.store._errors import ValidationError

TURNS = [
    "Melanie: Caroline, painting the lake is what I painted",
    "Caroline: I painted the lake at home yesterday",
    "Melanie: we went to the lake with the kids",
    "Melanie: we went to the lake last summer",
]


def contents(question, **options):
    """The contents the assembler ranks (newer-first off: only the cues move anything)."""
    assembler = ContextAssembler(DefaultMemory, newer_first=False, **options)
    return [r.content for r in assembler.assemble(question, agent_id="a").records]


@pytest.fixture
def turns(db):
    DefaultMemory.save_many([DefaultMemory(agent_id="a", content=text) for text in TURNS])


def test_the_speaker_the_question_names_comes_first(turns):
    question = "What did Caroline paint at the lake?"
    assert contents(question, question_cues=False)[:2] == TURNS[:2]
    assert contents(question)[:2] == [TURNS[1], TURNS[0]]


def test_a_question_asking_when_puts_the_turn_saying_a_time_first(turns):
    fused = contents("When did they go to the lake?", question_cues=False)
    cued = contents("When did they go to the lake?")
    assert fused.index(TURNS[3]) > fused.index(TURNS[2])
    assert cued.index(TURNS[3]) < cued.index(TURNS[2])
    assert contents("Where did they go to the lake?") == contents("Where did they go to the lake?", question_cues=False)


def test_the_explanation_names_the_cue(turns):
    explanation = (
        ContextAssembler(DefaultMemory).assemble("What did Caroline paint at the lake?", agent_id="a").explain()
    )
    cues = next(b for b in explanation.items[0].boosts if b.name == "cues")
    assert cues.contribution > 0 and "names its speaker" in cues.note
    top = explanation.items[0]
    assert top.fused / top.normaliser + cues.contribution == pytest.approx(top.score)


def test_question_cues_is_a_boolean_option():
    with pytest.raises(ValidationError, match="question_cues"):
        ContextAssembler(DefaultMemory, question_cues="yes")
