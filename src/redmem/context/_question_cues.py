"""Question cues: a second look at the fused candidates, with what the question itself says.

Fusion ranks a memory by how well its words and its vector match the question, and a memory's
keyword text holds its neighbours' lines as well (:mod:`redmem.context._neighbours`), so the
turns around an answer rank beside it. Two cues of the question separate them, read from the
question's words and each candidate's own turn, already loaded: no model, no I/O.

- **Who.** A question that names a person ("What did Caroline research?") is mostly answered by
  what that person said: a candidate whose speaker is named in the question gains
  :data:`SPEAKER_WEIGHT`. The speaker is the model's ``speaker`` field, else the ``Name: `` that
  opens the memory text (:func:`~redmem.context._neighbours.record_turn`).
- **When.** A question asking when ("When did ...", "What year ...", "How long ago ...") is
  answered by a turn that says a time ("yesterday", "last week", "in May", "2022"): a candidate
  whose own text holds a time expression (:data:`TIME_WORDS`) gains :data:`WHEN_WEIGHT`.

Only candidates a search found directly (keyword or vector match > 0) gain, and they are
reordered among the places they held: a memory reached through the graph alone has no evidence
of its own and keeps its place below every direct hit. With the
merge's score ``combined = pull / max pull`` in [0, 1]::

    combined'(d) = combined(d) + SPEAKER_WEIGHT * [speaker(d) named in q]
                               + WHEN_WEIGHT * [q asks when and text(d) says a time]

and the candidates are ordered by ``combined'`` (ties keep the fused order); a bonus above 0 is
kept as the candidate's :data:`CUES_SIGNAL`. The weights were chosen on LoCoMo's dev conversations
(1-3) with HybridMemory; docs/benchmarks.md has the figures, held-out beside them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._candidates import Candidate
from ._neighbours import Turn
from ._retrieval import MATCH_SIGNAL

__all__ = [
    "QuestionCues",
    "question_cues",
    "cue_bonus",
    "rescore_by_cues",
    "SPEAKER_WEIGHT",
    "WHEN_WEIGHT",
    "CUES_SIGNAL",
    "TIME_WORDS",
    "ASKS_WHEN",
]

#: What a candidate whose speaker the question names gains.
SPEAKER_WEIGHT = 0.2
#: What a candidate saying a time gains when the question asks when.
WHEN_WEIGHT = 0.1
#: The signal holding a candidate's bonus.
CUES_SIGNAL = "cues"
#: A question asking for a time.
ASKS_WHEN = re.compile(r"^\W*(?:when\b|what (?:year|month|date|day|time)\b|how long ago\b)", re.IGNORECASE)
#: Words that say a time: relative days and periods, month and weekday names, seasons, years.
TIME_WORDS = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|next|ago|since|recently|weekend|weeks?|months?|years?|"
    r"morning|evening|night|summer|winter|spring|autumn|fall|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class QuestionCues:
    """What a question says besides its terms: the words it holds (case-folded), whether it asks when."""

    words: frozenset[str]
    asks_when: bool

    def names(self, speaker: str) -> bool:
        """Whether the question names ``speaker``: every word of the speaker's name is in it."""
        words = _WORD.findall(speaker.casefold())
        return bool(words) and all(word in self.words for word in words)


def question_cues(question: str) -> QuestionCues:
    """The cues of one question."""
    return QuestionCues(frozenset(_WORD.findall(question.casefold())), bool(ASKS_WHEN.search(question)))


def cue_bonus(cues: QuestionCues, turn: Turn) -> float:
    """``SPEAKER_WEIGHT`` if the question names the turn's speaker, plus ``WHEN_WEIGHT`` if it asks
    when and the turn's text says a time."""
    bonus = SPEAKER_WEIGHT if cues.names(turn.speaker) else 0.0
    if cues.asks_when and TIME_WORDS.search(turn.text):
        bonus += WHEN_WEIGHT
    return bonus


def rescore_by_cues(
    candidates: Sequence[Candidate], question: str, turn_of: Callable[[Candidate], Turn]
) -> list[Candidate]:
    """The candidates with the direct pull hits (match > 0) reordered by ``combined + cue_bonus``
    (module docstring) among the places they held, each one's ``combined`` raised by its bonus,
    kept as its ``cues`` signal when above 0; every other candidate (graph-only, composite-only, push-only)
    unchanged and in its place. Ties keep the fused order."""
    cues = question_cues(question)
    places = [i for i, c in enumerate(candidates) if c.pull is not None and c.signals.get(MATCH_SIGNAL, 0.0) > 0.0]
    for i in places:
        bonus = cue_bonus(cues, turn_of(candidates[i]))
        if bonus > 0.0:
            candidates[i].signals[CUES_SIGNAL] = bonus
            candidates[i].combined += bonus
    ranked = list(candidates)
    for place, i in zip(places, sorted(places, key=lambda i: (-candidates[i].combined, i))):
        ranked[place] = candidates[i]
    return ranked
