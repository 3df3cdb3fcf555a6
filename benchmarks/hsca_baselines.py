"""Trivial baselines for the HSCA evaluations: what each eval gives without HSCA's mechanisms.

Every baseline reads the same frozen cases as the engine and answers the same question:

- **uniform**: every turn weighs 1 (no relational weight, no window), domains by the keyword lists;
- **word_count**: every turn weighs its number of words;
- **tfidf**: every turn weighs the mean TF-IDF of its terms, the conversation's turns as documents;
- **keyword_labels**: each turn labelled alone by the keyword lists (no window, no beat), the
  majority label / the per-turn label sequence;
- **fixed**: one output whatever the input (the most frequent label of the tuning half; for eval
  2 the sequence ``[A, B, A]`` with A and B given; for eval 5 "always a bridge");
- **constant**: a scorer returning 0 for every text (eval 4).

``weighted_topic`` and ``turn_label`` mirror the engine's arithmetic (:mod:`redmem.recipes.hsca._window`)
with the baseline's weights in place of layer 1, so only the weighting differs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

from redmem.recipes.hsca._domains import classify_domains
from redmem.recipes.hsca._text import parse_turn
from redmem.text._analyzer import default_analyzer

NOT_TOPICAL = {"conversational", "cross_domain", "unclassified"}
#: A baseline's per-turn weights, from the conversation's turns.
Weighting = Callable[[Sequence[str]], list[float]]


def tags(text: str) -> list[str]:
    """The keyword lists' domain tags of ``text`` alone."""
    return classify_domains(parse_turn(text))


def uniform(turns: Sequence[str]) -> list[float]:
    return [1.0] * len(turns)


def word_count(turns: Sequence[str]) -> list[float]:
    return [float(len(t.split())) for t in turns]


def tfidf(turns: Sequence[str]) -> list[float]:
    """Mean over a turn's terms of tf * (ln((1 + N) / (1 + df)) + 1), the turns as documents."""
    analyse = default_analyzer()
    docs = [Counter(analyse.tokens(t)) for t in turns]
    df = Counter(term for d in docs for term in d)
    n = len(docs)
    return [sum(c * (math.log((1 + n) / (1 + df[t])) + 1) for t, c in d.items()) / max(1, sum(d.values()))
            for d in docs]


WEIGHTINGS: dict[str, Weighting] = {"uniform": uniform, "word_count": word_count, "tfidf": tfidf}


def heaviest(summary: dict[str, float]) -> str:
    topical = {d: w for d, w in summary.items() if d not in NOT_TOPICAL}
    return min(topical, key=lambda d: (-topical[d], d)) if topical else "unclassified"


def weighted_topic(turns: Sequence[str], weights: Sequence[float]) -> str:
    """The heaviest topical domain when each turn's tags carry the turn's weight."""
    summary: Counter[str] = Counter()
    for text, weight in zip(turns, weights, strict=True):
        for tag in tags(text):
            summary[tag] += weight
    return heaviest(dict(summary))


def majority_label(turns: Sequence[str]) -> str:
    """The most frequent per-turn label (each turn's own heaviest keyword domain)."""
    labels = Counter(turn_label(t) for t in turns)
    labels.pop("unclassified", None)
    return min(labels, key=lambda d: (-labels[d], d)) if labels else "unclassified"


def turn_label(text: str) -> str:
    """A turn's label alone: ``cross_domain`` when its keywords say so, else its first topical tag."""
    found = tags(text)
    if "cross_domain" in found:
        return "cross_domain"
    topical = [t for t in found if t not in NOT_TOPICAL]
    return topical[0] if topical else "unclassified"


def constant(texts: Sequence[str]) -> list[float]:
    """A scorer that says nothing: 0 for every text."""
    return [0.0] * len(texts)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores mapped onto [0, 1] by the set's own range (all 0 when they are equal): a baseline
    with no absolute scale meets eval 4's absolute bar on its relative one."""
    low, high = min(scores), max(scores)
    return [(s - low) / (high - low) if high > low else 0.0 for s in scores]
