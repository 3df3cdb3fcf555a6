"""Layer 1, relational weighting: how densely a chunk's words co-occur with its recurring words.

Within each sentence's term stream, two terms co-occur when they lie within ``window`` tokens of
each other (a sliding window of ``window`` tokens that does not cross a sentence boundary). A
term is *frequent* when it occurs at least twice in the scored text. For a term ``w`` of
sentence ``s``, its support is the number of *other* sentences in which ``w`` co-occurs with a
frequent term other than itself::

    a(w, s) = min(1, |{s' != s : w co-occurs with a frequent h != w in s'}| / SUPPORT_SATURATION)
    sentence(s) = mean of a(w, s) over the distinct terms of s
    paragraph = mean of its sentences;  layer1 = mean of the paragraphs

so every score is in [0, 1]: 0 for words that never recur together (a keyword-stuffed text),
1 when every word is tied to the recurring vocabulary in two other sentences or more. This is
not TF-IDF: no corpus statistic enters, only the chunk's own structure.

Repetition is not structure (issue 30, eval 4): a sentence that repeats one of the
:data:`~.originality.DUPLICATE_LOOKBACK` before it (term-set Jaccard >= :data:`REPEATED`) is
the same sentence for this count: its terms add nothing
to the frequencies, and it and the sentence it repeats are one sentence of support (so neither
supports the other). This holds within the chunk (and within its context): a reply that takes up
most of the turn before it is the conversation's recurrence, not stuffing. And the window stops at the sentence's end: a word closing one sentence
is not tied to the words opening the next. Together they take the support out of the scattered
form of stuffing, one-off clauses each carrying a query word and cycled until the text is long
enough: across sentence ends the query words met each other, and the cycled clauses made
their own words frequent (eval 4's real-text tuning half 33 % -> 100 %, the stuffing AUC 0.92
-> 0.96, its scattered form 0.86 -> 1.0).

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

A turn of :data:`TIED_WORDS` words or more that is short only by its sentences (one or two long
sentences: a licence clause, a chat message of two run-on sentences) is as long as a paragraph
for the conversation: it keeps its score against the context, weighed by the same tie
(``layer1 = context score * tie``). Without it such a turn pasted into a thread was scored as a
reply, by the few words it takes up, and outranked the thread's own replies (issue 30, eval 3:
six of the eighteen asides of eval 1's real tuning half; the tuned tie saturation could not
reach them).

A long block's words recur among themselves whatever it is about, so on its own structure an
aside pasted into a thread outweighs the thread's one-sentence turns; the tie is what ties it to
the conversation (issue 30: the real-text eval 1 cases, asides sharing 0-11% of their terms with
the thread, central turns 10-100%). Without context (a document scored alone, the stuffing and
adversarial evaluations) the tie is 1.

Two of these constants are an agent's to tune (:mod:`.tuning`): the tie's saturation
(``tie_saturation``, default :data:`TIE_SATURATION`) and the **short-turn prior**
(``short_prior``, default 0): a short turn scored against its conversation keeps that share of
the flat :data:`SHORT_CHUNK_SCORE`::

    short turn in context:  layer1 = (1 - short_prior) * context score + short_prior * SHORT_CHUNK_SCORE

With the prior at 0 (the default) a reply that takes up none of the conversation's words scores
0, as before; an agent whose history says its short replies serve even when they bring new
words moves it up. :func:`conversation_weight` recombines a :class:`Relational` under other
values of the two, without scoring the turn again (the tuner's search).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import fmean

from ...store._validation import positive_int
from ._originality import DUPLICATE_LOOKBACK
from ._text import ParsedTurn, Sentence

__all__ = ["Relational", "relational_weight", "SHORT_CHUNK_SENTENCES", "SHORT_CHUNK_TERMS", "SHORT_CHUNK_SCORE", "SUPPORT_SATURATION",
           "TIE_SATURATION", "TIED_WORDS", "conversation_tie", "conversation_weight", "uptake",
           "TIE_SATURATION_BOUNDS", "REPEATED"]

#: A chunk with fewer sentences than this is short (scored against its context).
SHORT_CHUNK_SENTENCES = 3
#: In a conversation (a context given), a chunk with fewer terms than this is short too, however
#: many sentences it has (a chat turn of three exclamations holds too few words to recur within itself).
SHORT_CHUNK_TERMS = 20
#: The layer-1 score of a short chunk with no context to score it against.
SHORT_CHUNK_SCORE = 0.2
#: Words from which a turn short only by its sentences is weighed by its tie to the conversation
#: (module docstring). Chosen on eval 1's real tuning half by the layer-1 AUC (central over aside)
#: the tuned conversation terms reach (``benchmarks/hsca_eval3_ceiling.py``): 0.951 without,
#: 0.931 at 40 words, 0.958 at 50, 0.951 at 60.
TIED_WORDS = 50
#: Share of a long turn's terms the conversation must say for the turn to keep its whole weight
#: (0.25 on eval 1's real-text tuning half: 44 % -> 83 %; 0.1: 78 %, 0.5: 83 %; a floor of 0.2 or
#: 0.4 under the tie: 78 %, and no change on eval 5's tuning half).
TIE_SATURATION = 0.25
#: The least and the most ``tie_saturation`` an engine takes (the least keeps the division finite).
TIE_SATURATION_BOUNDS = (0.05, 1.0)
#: Term-set Jaccard from which a sentence repeats an earlier one for layer 1 (a sentence said
#: again, near verbatim; related sentences of one paragraph share less: the originality discount's
#: looser :data:`~.originality.NEAR_DUPLICATE` already weighs them).
REPEATED = 0.8
#: Other sentences of support at which a term's relational weight saturates at 1.
SUPPORT_SATURATION = 2


@dataclass(frozen=True)
class Relational:
    """Layer 1's result: the chunk's score, its sentences' and paragraphs' scores, its term weights.

    ``term_weights`` maps each term of the chunk to its mean support a(w, s) over its sentences.
    ``structure`` is the score before the conversation's terms (the mean of the paragraphs; a
    short turn's score against its context), ``uptake`` the share of a tied turn's terms its
    context says (None when no tie applies: a short turn under :data:`TIED_WORDS` words, or no context), ``in_context`` whether
    a context was given: what :func:`conversation_weight` needs to recombine the score.
    """

    score: float
    sentence_scores: tuple[float, ...]
    paragraph_scores: tuple[float, ...]
    short_chunk: bool
    term_weights: dict[str, float] = field(default_factory=dict)
    structure: float = 0.0
    uptake: float | None = None
    in_context: bool = False


def conversation_weight(relational: Relational, tie_saturation: float = TIE_SATURATION,
                        short_prior: float = 0.0) -> float:
    """Layer 1 of a scored turn under ``tie_saturation`` and ``short_prior`` (module docstring):
    a tied turn's structure (a long turn, or one short only by its sentences from
    :data:`TIED_WORDS` words: its context score) times ``min(1, uptake / tie_saturation)``, any
    other short turn in context its context score blended with :data:`SHORT_CHUNK_SCORE` by
    ``short_prior``, else the structure."""
    if relational.uptake is not None:
        return relational.structure * min(1.0, relational.uptake / tie_saturation)
    if relational.short_chunk and relational.in_context:
        return (1.0 - short_prior) * relational.structure + short_prior * SHORT_CHUNK_SCORE
    return relational.structure


def relational_weight(turn: ParsedTurn, window: int = 5, context: Sequence[ParsedTurn] = (), *,
                      tie_saturation: float = TIE_SATURATION, short_prior: float = 0.0) -> Relational:
    """Layer 1 of ``turn`` (see the module docstring): a short turn scored against ``context``, a
    long one weighed by its tie to it (``tie_saturation``), a short one's ``short_prior``."""
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
                              dict.fromkeys(turn.terms, SHORT_CHUNK_SCORE), SHORT_CHUNK_SCORE)
        paragraphs = context_paragraphs + paragraphs
    every = [s for p in paragraphs for s in p]
    first_own = len(every) - len(sentences)
    canonical = _canonical(every[:first_own]) + [first_own + i for i in _canonical(sentences)]
    supported = _supporting_sentences(every, window, canonical)
    if short:
        _add_recurrence(supported, every[:first_own], canonical)
    scores: list[float] = []
    per_term: defaultdict[str, list[float]] = defaultdict(list)
    for offset, sentence in enumerate(sentences):
        index = canonical[first_own + offset]
        weights = {w: min(1.0, _others(supported[w], index) / SUPPORT_SATURATION) for w in set(sentence.terms)}
        for term, weight in weights.items():
            per_term[term].append(weight)
        scores.append(fmean(weights.values()) if weights else 0.0)
    paragraph_scores = _paragraph_means(turn, scores)
    found = Relational(0.0, tuple(scores), paragraph_scores, short,
                       {term: fmean(values) for term, values in per_term.items()},
                       fmean(paragraph_scores), uptake(turn, context) if context and tied(turn, short) else None,
                       bool(context))
    return replace(found, score=conversation_weight(found, tie_saturation, short_prior))


def tied(turn: ParsedTurn, short: bool) -> bool:
    """Whether a turn in a conversation is weighed by its tie: a long one, or one short only by its
    sentences that has :data:`TIED_WORDS` words or more (module docstring)."""
    return not short or (len(turn.terms) >= SHORT_CHUNK_TERMS and len(turn.words) >= TIED_WORDS)


def uptake(turn: ParsedTurn, context: Sequence[ParsedTurn]) -> float:
    """The fraction of the turn's distinct terms that the context turns say too (0 for no terms)."""
    own = set(turn.terms)
    if not own:
        return 0.0
    said = {t for past in context for t in past.terms}
    return len(own & said) / len(own)


def conversation_tie(turn: ParsedTurn, context: Sequence[ParsedTurn], tie_saturation: float = TIE_SATURATION) -> float:
    """How far the conversation takes up a long turn: ``min(1, uptake / tie_saturation)``."""
    return min(1.0, uptake(turn, context) / tie_saturation)


def _canonical(sentences: Sequence[Sentence]) -> list[int]:
    """Each sentence's index, or the index of the earlier sentence (of the
    :data:`~.originality.DUPLICATE_LOOKBACK` before it) it repeats (term-set Jaccard >=
    :data:`REPEATED`), that one's own canonical index."""
    canonical: list[int] = []
    seen: list[tuple[int, frozenset[str]]] = []
    for index, sentence in enumerate(sentences):
        terms = frozenset(sentence.terms)
        earlier = next((canonical[j] for j, s in reversed(seen[-DUPLICATE_LOOKBACK:])
                        if terms and len(terms & s) / len(terms | s) >= REPEATED), index)
        canonical.append(earlier)
        seen.append((index, terms))
    return canonical


def _supporting_sentences(sentences: Sequence[Sentence], window: int, canonical: Sequence[int]) -> dict[str, set[int]]:
    """For each term, the (canonical) indexes of the sentences where it co-occurs with a frequent
    other term within one sentence; a near-duplicate sentence adds nothing to the frequencies."""
    frequency = Counter(t for i, s in enumerate(sentences) if canonical[i] == i for t in s.terms)
    supported: defaultdict[str, set[int]] = defaultdict(set)
    for index, sentence in enumerate(sentences):
        terms, at = sentence.terms, canonical[index]
        for i, term in enumerate(terms):
            for other in terms[i + 1 : i + window]:
                if other == term:
                    continue
                if frequency[other] >= 2:
                    supported[term].add(at)
                if frequency[term] >= 2:
                    supported[other].add(at)
    return supported


def _add_recurrence(supported: dict[str, set[int]], context: Sequence[Sentence], canonical: Sequence[int]) -> None:
    """A short turn's terms are also supported by every context sentence that says them again:
    a reply ties into its conversation by the words it takes up, which rarely recur in the same
    window there (module docstring)."""
    for index, sentence in enumerate(context):
        for term in sentence.terms:
            supported.setdefault(term, set()).add(canonical[index])


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
