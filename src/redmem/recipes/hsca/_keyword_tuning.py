"""Layer-2 self-tuning: an agent's weight on each domain keyword, from what served its queries.

Spec section 4 tunes "the structural parameters of layers 1-3" from the agent's own history.
Layer 2's keyword lists (:data:`~.domains.DOMAIN_KEYWORDS`) are the same for everybody; an
agent's history shows how its conversations use each keyword. A recorded query has a *domain*:
the topical domain with the most keyword hits over all the chunks that served it (every hit
counting 1; none when the top two tie or nothing hits, and then the query gives no reading).
The downstream use says those chunks answered one question, so they share its domain; the
session's other chunks did not serve it. Each keyword hit is then a *reading* of its
(domain ``d``, stem ``s``), counted once per chunk and query:

- in a **served** chunk, it *agrees* when ``d`` is the query's domain and *disagrees* otherwise
  (the keyword named another domain for a chunk that served this one);
- in an **unserved** chunk, it *disagrees* when ``d`` is the query's domain (the keyword claimed
  the query's domain for a chunk the query passed over); a hit for any other domain is no
  reading: the history does not say what an unserved chunk is about.

The agent's weight on ``s`` for ``d``::

    w(d, s) = clip(2 * (agree + P) / (agree + disagree + 2 * P), LOW, HIGH)     P = KEYWORD_PRIOR

1 without readings, toward 2 (capped at :data:`KEYWORD_WEIGHT_BOUNDS` high) when the keyword
always agrees, toward 0 (floored at the low bound) when it always disagrees; ``P`` pseudo-readings
each way keep a keyword met a few times near 1, so the weights move with the evidence, and the
same readings give the same weights (the history read is the tuner's seeded sample).
:func:`~.domains.classify_domains` multiplies each hit by its weight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ._domains import KeywordWeights, classify_domains, domain_keyword_hits
from ._interface import DomainTag
from ._text import ParsedTurn

__all__ = ["keyword_readings", "keyword_weights", "served_domain_match", "query_domain", "Reading",
           "KEYWORD_PRIOR", "KEYWORD_WEIGHT_BOUNDS"]

#: Pseudo-readings each way: a keyword needs about this many contrary readings to move half way.
KEYWORD_PRIOR = 10
#: The least and the most weight a keyword may get for a domain.
KEYWORD_WEIGHT_BOUNDS = (0.25, 1.5)

#: One query's session: each chunk's parse and whether it served the query.
QueryChunks = Sequence[tuple[ParsedTurn, bool]]
#: Readings per (domain, stem): (agree, disagree).
Reading = tuple[Counter[tuple[str, str]], Counter[tuple[str, str]]]


def query_domain(served: Sequence[ParsedTurn]) -> DomainTag | None:
    """The topical domain with the most keyword hits over ``served`` (unit hits); None on a tie or no hit."""
    totals: Counter[DomainTag] = Counter()
    for turn in served:
        for domain, found in domain_keyword_hits(turn.terms).items():
            totals[domain] += sum(found.values())
    return _unique_best(totals)


def keyword_readings(queries: Sequence[QueryChunks]) -> Reading:
    """The agreeing and disagreeing readings of every (domain, stem) over ``queries`` (module docstring)."""
    agree: Counter[tuple[str, str]] = Counter()
    disagree: Counter[tuple[str, str]] = Counter()
    for chunks in queries:
        domain = query_domain([turn for turn, served in chunks if served])
        if domain is None:
            continue
        for turn, served in chunks:
            for d, found in domain_keyword_hits(turn.terms).items():
                if served or d == domain:
                    for stem in found:
                        (agree if served and d == domain else disagree)[(d.value, stem)] += 1
    return agree, disagree


def keyword_weights(readings: Reading) -> dict[str, dict[str, float]]:
    """The weight of every (domain, stem) read (module docstring), rounded to 4 places; those at 1 left out."""
    agree, disagree = readings
    low, high = KEYWORD_WEIGHT_BOUNDS
    weights: dict[str, dict[str, float]] = {}
    for domain, stem in sorted(set(agree) | set(disagree)):
        yes, no = agree[(domain, stem)], disagree[(domain, stem)]
        share = (yes + KEYWORD_PRIOR) / (yes + no + 2 * KEYWORD_PRIOR)
        weight = round(min(high, max(low, 2 * share)), 4)
        if weight != 1.0:
            weights.setdefault(domain, {})[stem] = weight
    return weights


def served_domain_match(queries: Sequence[QueryChunks], weights: KeywordWeights | None) -> float:
    """Share of the served chunks (of queries with a domain) whose first tag under ``weights`` is the query's domain."""
    matched = total = 0
    for chunks in queries:
        served = [turn for turn, was_served in chunks if was_served]
        domain = query_domain(served)
        if domain is None:
            continue
        total += len(served)
        matched += sum(1 for turn in served if classify_domains(turn, weights)[0] == domain.value)
    return matched / total if total else 0.0


def _unique_best(totals: Mapping[DomainTag, int]) -> DomainTag | None:
    """The domain of the highest positive total; None when there is none or the top two tie."""
    ranked = sorted(((n, d) for d, n in totals.items() if n > 0), key=lambda x: -x[0])
    if not ranked or (len(ranked) > 1 and ranked[1][0] == ranked[0][0]):
        return None
    return ranked[0][1]
