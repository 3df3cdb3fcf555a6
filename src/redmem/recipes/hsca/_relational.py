"""Layer 1, relational weighting: how densely a chunk's words co-occur with its recurring words.

Over each paragraph's term stream, two terms co-occur when they lie within ``window`` tokens of
each other (a sliding window of ``window`` tokens, sentence boundaries included). A term is
*frequent* when it occurs at least twice in the scored text. For a term ``w`` of sentence
``s``, its support is the number of *other* sentences in which ``w`` co-occurs with a frequent
term other than itself::

    a(w, s) = min(1, |{s' != s : w co-occurs with a frequent h != w in s'}| / SUPPORT_SATURATION)
    sentence(s) = mean of a(w, s) over the distinct terms of s
    paragraph = mean of its sentences;  layer1 = mean of the paragraphs

so every score is in [0, 1]: 0 for words that never recur together (a keyword-stuffed text),
1 when every word is tied to the recurring vocabulary in two other sentences or more. This is
not TF-IDF: no corpus statistic enters, only the chunk's own structure.

Short chunks (fewer than :data:`SHORT_CHUNK_SENTENCES` sentences, or in a conversation fewer
than :data:`SHORT_CHUNK_TERMS` terms) carry too little structure
of their own, so their scoring is deferred to the conversation: the sentences of the context
(the engine's last ``max_buffer_chunks`` turns) are the "other sentences" and share the
frequency count, and a context sentence also supports a term of the chunk by holding it at all
(recurrence, not only co-occurrence: a reply takes up its conversation's words, seldom in the
same window); the score is the mean over the chunk's own sentences. Without context a short chunk scores the
flat :data:`SHORT_CHUNK_SCORE`. Either way it is marked short.

A long chunk in a conversation (a context given) is scored on its own structure, then weighed by
how far the conversation takes it up::

    tie = min(1, |terms(chunk) & terms(context)| / |terms(chunk)| / TIE_SATURATION)
    layer1 = own score * tie

A long block's words recur among themselves whatever it is about, so on its own structure an
aside pasted into a thread outweighs the thread's one-sentence turns; the tie is what ties it to
the conversation (issue 30: the real-text eval 1 cases, asides sharing 0-11% of their terms with
the thread, central turns 10-100%). Without context (a document scored alone, the stuffing and
adversarial evaluations) the tie is 1.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import fmean

from ...store._validation import positive_int
from ._text import ParsedTurn, Sentence

__all__ = ["Relational", "relational_weight", "SHORT_CHUNK_SENTENCES", "SHORT_CHUNK_TERMS", "SHORT_CHUNK_SCORE", "SUPPORT_SATURATION",
           "TIE_SATURATION", "conversation_tie"]

#: A chunk with fewer sentences than this is short (scored against its context).
SHORT_CHUNK_SENTENCES = 3
#: In a conversation (a context given), a chunk with fewer terms than this is short too, however
#: many sentences it has (a chat turn of three exclamations holds too few words to recur within itself).
SHORT_CHUNK_TERMS = 20
#: The layer-1 score of a short chunk with no context to score it against.
SHORT_CHUNK_SCORE = 0.2
#: Share of a long turn's terms the conversation must say for the turn to keep its whole weight
#: (0.25 on eval 1's real-text tuning half: 44 % -> 83 %; 0.1: 78 %, 0.5: 83 %; a floor of 0.2 or
#: 0.4 under the tie: 78 %, and no change on eval 5's tuning half).
TIE_SATURATION = 0.25
#: Other sentences of support at which a term's relational weight saturates at 1.
SUPPORT_SATURATION = 2


@dataclass(frozen=True)
class Relational:
    """Layer 1's result: the chunk's score, its sentences' and paragraphs' scores, its term weights.

    ``term_weights`` maps each term of the chunk to its mean support a(w, s) over its sentences.
    """

    score: float
    sentence_scores: tuple[float, ...]
    paragraph_scores: tuple[float, ...]
    short_chunk: bool
    term_weights: dict[str, float] = field(default_factory=dict)


def relational_weight(turn: ParsedTurn, window: int = 5, context: Sequence[ParsedTurn] = ()) -> Relational:
    """Layer 1 of ``turn`` (see the module docstring); ``context`` is used only for a short turn."""
    positive_int("window", window)
    sentences = turn.sentences
    if not sentences:
        return Relational(0.0, (), (), short_chunk=True)
    short = len(sentences) < SHORT_CHUNK_SENTENCES or (bool(context) and len(turn.terms) < SHORT_CHUNK_TERMS)
    paragraphs: list[tuple[Sentence, ...]] = list(turn.paragraphs)
    if short:
        context_paragraphs = [p for past in context for p in past.paragraphs]
        if not context_paragraphs:
            flat = tuple(SHORT_CHUNK_SCORE for _ in sentences)
            return Relational(SHORT_CHUNK_SCORE, flat, (SHORT_CHUNK_SCORE,), True,
                              dict.fromkeys(turn.terms, SHORT_CHUNK_SCORE))
        paragraphs = context_paragraphs + paragraphs
    supported = _supporting_sentences(paragraphs, window)
    first_own = sum(len(p) for p in paragraphs) - len(sentences)
    if short:
        _add_recurrence(supported, [s for p in paragraphs for s in p][:first_own])
    scores: list[float] = []
    per_term: defaultdict[str, list[float]] = defaultdict(list)
    for offset, sentence in enumerate(sentences):
        index = first_own + offset
        weights = {w: min(1.0, _others(supported[w], index) / SUPPORT_SATURATION) for w in set(sentence.terms)}
        for term, weight in weights.items():
            per_term[term].append(weight)
        scores.append(fmean(weights.values()) if weights else 0.0)
    paragraph_scores = _paragraph_means(turn, scores)
    tie = conversation_tie(turn, context) if context and not short else 1.0
    return Relational(fmean(paragraph_scores) * tie, tuple(scores), paragraph_scores, short,
                      {term: fmean(values) for term, values in per_term.items()})


def conversation_tie(turn: ParsedTurn, context: Sequence[ParsedTurn]) -> float:
    """How far the conversation takes up a long turn: ``min(1, share / TIE_SATURATION)`` where
    ``share`` is the fraction of the turn's distinct terms that the context turns say too."""
    own = set(turn.terms)
    if not own:
        return 0.0
    said = {t for past in context for t in past.terms}
    return min(1.0, len(own & said) / len(own) / TIE_SATURATION)


def _supporting_sentences(paragraphs: Sequence[tuple[Sentence, ...]], window: int) -> dict[str, set[int]]:
    """For each term, the indexes of the sentences where it co-occurs with a frequent other term."""
    frequency = Counter(t for p in paragraphs for s in p for t in s.terms)
    supported: defaultdict[str, set[int]] = defaultdict(set)
    index = 0
    for paragraph in paragraphs:
        stream = [(term, index + i) for i, s in enumerate(paragraph) for term in s.terms]
        index += len(paragraph)
        for i, (term, sentence) in enumerate(stream):
            for other, other_sentence in stream[i + 1 : i + window]:
                if other == term:
                    continue
                if frequency[other] >= 2:
                    supported[term].add(sentence)
                if frequency[term] >= 2:
                    supported[other].add(other_sentence)
    return supported


def _add_recurrence(supported: dict[str, set[int]], context: Sequence[Sentence]) -> None:
    """A short turn's terms are also supported by every context sentence that says them again:
    a reply ties into its conversation by the words it takes up, which rarely recur in the same
    window there (module docstring)."""
    for index, sentence in enumerate(context):
        for term in sentence.terms:
            supported.setdefault(term, set()).add(index)


def _others(sentences: set[int], index: int) -> int:
    """How many sentences other than ``index`` the set holds, without copying it (a set
    difference per term and sentence made layer 1 quadratic in sentences)."""
    return len(sentences) - (index in sentences)


def _paragraph_means(turn: ParsedTurn, scores: list[float]) -> tuple[float, ...]:
    """The mean sentence score of each paragraph of ``turn`` (scores in sentence order)."""
    means, start = [], 0
    for paragraph in turn.paragraphs:
        means.append(fmean(scores[start : start + len(paragraph)]))
        start += len(paragraph)
    return tuple(means)
