"""Layer 3, the deterministic nuance flags: hedged, absolute, rhetorical question, instructional, tone.

- ``hedged``: a qualifier (``may``, ``might``, ``perhaps``, ``in some cases``, ...).
- ``absolute``: a universal claim (``always``, ``never``, ``all``, ``everyone``, ...).
- ``rhetorical_question``: a question built as an assertion: opening with a negated auxiliary
  (``Isn't it ...?``, ``Don't you ...?``), or ``who cares / who knows / who would``, ``what's
  the point``, ``why bother``, ``how could anyone``.
- ``instructional``: a sentence opening with an imperative verb (``Run ...``, ``Please add
  ...``), or ``you should / you must / you need to / make sure``, or a numbered step.
- emotional tone from the VADER lexicon (the ``vaderSentiment`` package): the mean compound
  score of the first :data:`TONE_SENTENCES` sentences, ``positive`` from +0.05, ``negative``
  from -0.05, else ``neutral``; ``urgent`` as well when an urgency word is present (``urgent``,
  ``asap``, ``immediately``, ``emergency``, ...).

Metaphor, sarcasm, analogy and narrative thread need a model (:mod:`.nuance_model`).
"""

from __future__ import annotations

import re
from functools import cache
from statistics import fmean

from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from ._interface import NuanceFlag
from ._text import ParsedTurn

__all__ = ["deterministic_flags", "tone_flags", "TONE_SENTENCES", "TONE_THRESHOLD"]

#: Sentences read for the emotional tone (VADER's cost grows faster than the text).
TONE_SENTENCES = 64
#: |mean compound| from which the tone is positive or negative (VADER's own convention).
TONE_THRESHOLD = 0.05

_HEDGED = re.compile(
    r"\b(may|might|could|perhaps|possibly|probably|likely|unlikely|arguably|seems?|seemingly|apparently|"
    r"suggests?|somewhat|maybe|in some cases|to some extent|it appears|i think|i guess|not sure|tends? to)\b",
    re.IGNORECASE)
_ABSOLUTE = re.compile(
    r"\b(always|never|all|every|everyone|everybody|everything|none|nobody|nothing|no one|certainly|"
    r"undoubtedly|without exception|invariably|entirely|completely|impossible)\b", re.IGNORECASE)
_RHETORICAL = re.compile(
    r"^(isn't|aren't|wasn't|weren't|don't|doesn't|didn't|can't|couldn't|won't|wouldn't|shouldn't|haven't|"
    r"hasn't)\b|\bwho (cares|knows|would|could)\b|\bwhat's the point\b|\bwhat is the point\b|\bwhy bother\b|"
    r"\bhow (could|can) anyone\b", re.IGNORECASE)
_IMPERATIVE_VERBS = frozenset(
    ["add", "apply", "avoid", "call", "check", "choose", "click", "configure", "copy", "create", "delete", "do", "don't", "download", "enable", "ensure", "follow", "go", "install", "keep", "let", "list", "make", "note", "open", "pick", "place", "press", "put", "read", "remember", "remove", "replace", "run", "save", "select", "send", "set", "start", "stop", "take", "try", "turn", "type", "update", "use", "wait", "write"])
_INSTRUCTION_PHRASES = re.compile(
    r"\b(you should|you must|you need to|you have to|make sure|be sure to)\b|^(step \d+|\d+[.)]\s)",
    re.IGNORECASE)
_URGENT = re.compile(
    r"\b(urgent|urgently|asap|immediately|right now|emergency|hurry|critical|at once|deadline)\b", re.IGNORECASE)


@cache
def _sentiment() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


def deterministic_flags(turn: ParsedTurn) -> list[str]:
    """The pattern flags of ``turn`` in a fixed order, then its tone flags."""
    text = turn.text
    flags = []
    if _HEDGED.search(text):
        flags.append(NuanceFlag.HEDGED.value)
    if _ABSOLUTE.search(text):
        flags.append(NuanceFlag.ABSOLUTE.value)
    if any(s.text.endswith("?") and _RHETORICAL.search(s.text) for s in turn.sentences):
        flags.append(NuanceFlag.RHETORICAL_QUESTION.value)
    if any(_is_instruction(s.text, s.words) for s in turn.sentences):
        flags.append(NuanceFlag.INSTRUCTIONAL.value)
    return flags + tone_flags(turn)


def _is_instruction(sentence: str, words: tuple[str, ...]) -> bool:
    if _INSTRUCTION_PHRASES.search(sentence):
        return True
    lead = [w.lower() for w in words[:2]]
    verb = lead[1] if lead[:1] == ["please"] and len(lead) > 1 else (lead[0] if lead else "")
    return verb in _IMPERATIVE_VERBS and not sentence.endswith("?")


def tone_flags(turn: ParsedTurn) -> list[str]:
    """One of positive / negative / neutral (none for empty text), and ``urgent`` when it applies."""
    sentences = turn.sentences[:TONE_SENTENCES]
    if not sentences:
        return []
    analyser = _sentiment()
    compound = fmean(analyser.polarity_scores(s.text)["compound"] for s in sentences)
    if compound >= TONE_THRESHOLD:
        flags = [NuanceFlag.EMOTIONAL_TONE_POSITIVE.value]
    elif compound <= -TONE_THRESHOLD:
        flags = [NuanceFlag.EMOTIONAL_TONE_NEGATIVE.value]
    else:
        flags = [NuanceFlag.EMOTIONAL_TONE_NEUTRAL.value]
    if any(_URGENT.search(s.text) for s in sentences):
        flags.append(NuanceFlag.EMOTIONAL_TONE_URGENT.value)
    return flags
