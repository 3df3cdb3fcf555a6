"""Retrieval quality: how well memory can answer a query, probed before or scored after retrieval.

Each metric is a pure function of plain values below; :func:`assess_retrieval` gathers the
values from Redis (a few round trips) and applies them. Its input is what it reads, not an
assembler: the model and its capabilities, the options ``max_items`` and
``surfacing_threshold`` (an :class:`~redmem.recipes.assembler._config.AssemblerConfig`), the
partition's key space and the named cues. For a candidate record:

- its **confidence** is its value of the model's first ConfidenceField (read from the field's
  per-partition index; ``initial_confidence`` when the record has no entry);
- its **score proxy** is its strength as a memory: the decayed score at ``now`` of the model's
  first DecayingSortedField (``base * decay``, confidence-modulated as the field defines it;
  0 when the record has no entry). A model without a DecayingSortedField uses the candidate's
  ``combined`` score instead: the re-rank score of ``assemble()`` (best of each path = 1), or
  in the probe the cue's keyword score divided by the cue's best;
- its **freshness** is the same decayed score with base 1: the fraction of its strength time
  has left it (``2 ** -(age / half_life)``, or ``max(days, 0.01) ** -rate`` times modulation).

Metrics (n = number of candidates, ``max_items`` and ``surfacing_threshold`` the config's):

    avg_confidence  = mean confidence of the candidates      (1.0 without a ConfidenceField)
    score_spread    = pstdev(proxies) / mean(proxies)         (0 when |mean| < 1e-9)
    fok(cue)        = 0.4 * familiarity(cue) + 0.4 * min(n_cue, max_items) / max_items
                      + 0.2 * |{c : 0 < proxy(c) < surfacing_threshold}| / n_cue
    fok_score       = mean of fok(cue) over the cues          (0 without cues)
    staleness_ratio = |{c : freshness(c) < STALENESS_LEVEL}| / n   (0 without a decay field)

``familiarity`` is the ExistenceFilter's answer for the cue's text: 1 may exist, 0 definitely
missing, 0.5 when the model has no filter. The FOK weights and the familiarity values are those
of popoto's ContextAssembler (``assess()`` / ``RetrievalQuality``); "feeling of knowing" and the
weak term (found, but faintly: partial access) follow the accessibility account of Koriat
(1993), "How do we know that we know?", Psychological Review 100(4).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ...context._candidates import Candidate
from ...context._retrieval import Capabilities, Fusion, Retrieval, keyword_hits, retrieve
from ...fields._bm25 import BM25Field
from ...fields._decay import DecayingSortedField
from ...model._dbkey import DbKey
from ...observation._predictions import percentile
from ...store._connection import server_errors
from ...store._errors import QueryArgumentTypeError
from ...store._keys import KeySpace
from ...store._validation import timestamp
from ._config import AssemblerConfig

if TYPE_CHECKING:
    from ...model._base import Model

__all__ = [
    "RetrievalQuality",
    "assess_retrieval",
    "named_cues",
    "familiarity",
    "feeling_of_knowing",
    "weak_fraction",
    "score_spread",
    "score_distribution",
    "staleness_ratio",
    "mean_confidence",
    "STALENESS_LEVEL",
    "STRING_CUE",
]

#: A candidate is stale when time has taken more than half its strength (freshness < 0.5).
STALENESS_LEVEL = 0.5
#: Name of the one cue of a query given as a plain string.
STRING_CUE = "query"
#: Familiarity of a cue when the model has no ExistenceFilter to ask.
UNKNOWN_FAMILIARITY = 0.5
FOK_FAMILIARITY, FOK_COVERAGE, FOK_TIP_OF_TONGUE = 0.4, 0.4, 0.2
_MEAN_EPSILON = 1e-9
_QUANTILES = (("min", 0.0), ("p25", 0.25), ("median", 0.5), ("p75", 0.75), ("max", 1.0))


@dataclass(frozen=True)
class RetrievalQuality:
    """The metrics of one retrieval (formulas in the module docstring).

    ``score_distribution`` holds min / p25 / median / p75 / max of the score proxies (linear
    interpolation between order statistics; all 0 without candidates). ``per_cue_fok`` maps
    each cue's name to its FOK; ``candidate_count`` is n, the distinct candidates scored.
    """

    avg_confidence: float
    score_spread: float
    fok_score: float
    staleness_ratio: float
    score_distribution: dict[str, float] = field(default_factory=dict)
    per_cue_fok: dict[str, float] = field(default_factory=dict)
    candidate_count: int = 0


# -- formulas ----------------------------------------------------------------------------------
def familiarity(may_exist: bool | None) -> float:
    """1.0 when the filter says the cue may exist, 0.0 when definitely missing, 0.5 with no filter."""
    if may_exist is None:
        return UNKNOWN_FAMILIARITY
    return 1.0 if may_exist else 0.0


def weak_fraction(proxies: list[float], threshold: float) -> float:
    """Fraction of ``proxies`` in the open interval (0, threshold): found, but weakly; 0 if none."""
    if not proxies:
        return 0.0
    return sum(1 for p in proxies if 0.0 < p < threshold) / len(proxies)


def feeling_of_knowing(familiar: float, found: int, weak: float, max_items: int) -> float:
    """``0.4 * familiar + 0.4 * min(found, max_items) / max_items + 0.2 * weak``, in [0, 1]."""
    coverage = min(found, max_items) / max_items if max_items > 0 else 0.0
    return FOK_FAMILIARITY * familiar + FOK_COVERAGE * coverage + FOK_TIP_OF_TONGUE * weak


def score_spread(proxies: list[float]) -> float:
    """Coefficient of variation ``pstdev / mean``; 0 without values or when |mean| < 1e-9."""
    if not proxies:
        return 0.0
    mean = statistics.fmean(proxies)
    if abs(mean) < _MEAN_EPSILON:
        return 0.0
    return statistics.pstdev(proxies) / mean


def score_distribution(proxies: list[float]) -> dict[str, float]:
    """``{"min", "p25", "median", "p75", "max"}`` of the proxies (all 0.0 when there are none)."""
    ordered = sorted(proxies)
    return {name: percentile(ordered, q) if ordered else 0.0 for name, q in _QUANTILES}


def staleness_ratio(freshness: list[float], level: float = STALENESS_LEVEL) -> float:
    """Fraction of candidates whose freshness is below ``level``; 0 without candidates."""
    if not freshness:
        return 0.0
    return sum(1 for f in freshness if f < level) / len(freshness)


def mean_confidence(confidences: list[float] | None) -> float:
    """Mean of the confidences; 1.0 when the model has none (None); 0.0 without candidates."""
    if confidences is None:
        return 1.0
    return statistics.fmean(confidences) if confidences else 0.0


def named_cues(query_cues: dict[str, Any] | str | None) -> dict[str, str]:
    """The cues as ``{name: text}``: a dict's non-blank values, a str as the cue ``"query"``."""
    if query_cues is None:
        return {}
    if isinstance(query_cues, str):
        return {STRING_CUE: query_cues} if query_cues.strip() else {}
    if not isinstance(query_cues, dict):
        raise QueryArgumentTypeError(f"query_cues must be a dict or a str, got {type(query_cues).__name__}")
    return {str(k): str(v) for k, v in query_cues.items() if v is not None and str(v).strip()}


# -- what one assessment reads from Redis --------------------------------------------------------
@dataclass
class _Strengths:
    """Per candidate key: confidence (None without a ConfidenceField), decayed score, freshness."""

    confidence: dict[DbKey, float] | None
    decay: dict[DbKey, float] | None
    freshness: dict[DbKey, float] | None


def _first(model: type[Model], kind: type) -> Any:
    return next(iter(model._meta.fields_of(kind)), None)


def _by_space(keys: Iterable[DbKey]) -> dict[KeySpace, list[DbKey]]:
    groups: dict[KeySpace, list[DbKey]] = {}
    for key in keys:
        groups.setdefault(key.keyspace, []).append(key)
    return groups


def _index_keys(conf: Any, decay: DecayingSortedField | None, space: KeySpace) -> list[str | None]:
    """Sorted sets to read per partition: confidence, decay t, decay base, modulating confidence
    (None: not to read; the modulating confidence is not read twice when it is the same)."""
    if decay is None:
        return [conf.index_key(space) if conf is not None else None, None, None, None]
    keys = decay.keys_in(space)
    own = conf.index_key(space) if conf is not None else None
    source = decay.confidence_source()
    modulating = source.index_key(space) if source is not None else None
    return [own, keys.updated, keys.base if decay.base_score_field else None,
            modulating if modulating != own else None]


def _read_scores(model: type[Model], keys: list[DbKey], conf: Any, decay: Any) -> list[dict[DbKey, float | None]]:
    """ZMSCORE of the four sorted sets of :func:`_index_keys` for ``keys``: one round trip."""
    found: list[dict[DbKey, float | None]] = [{}, {}, {}, {}]
    plan = []
    client = model._meta.client
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for space, group in _by_space(keys).items():
            for slot, index in enumerate(_index_keys(conf, decay, space)):
                if index is not None:
                    pipe.zmscore(index, [k.record_id for k in group])
                    plan.append((slot, group))
        replies = pipe.execute() if plan else []
    for (slot, group), reply in zip(plan, replies):
        found[slot].update(zip(group, reply))
    return found


def _strengths(model: type[Model], conf: Any, decay: DecayingSortedField | None, keys: list[DbKey], now: float) -> _Strengths:
    """Confidence, decayed score and freshness of each key (module docstring)."""
    if not keys or (conf is None and decay is None):
        empty: dict[DbKey, float] | None = None if decay is None else {}
        return _Strengths(None if conf is None else {}, empty, empty)
    confidence, updated, base, modulating = _read_scores(model, keys, conf, decay)
    modulating = modulating or confidence
    confidences: dict[DbKey, float] | None = None
    if conf is not None:
        confidences = {k: conf.initial_confidence if (c := confidence[k]) is None else c for k in keys}
    if decay is None:
        return _Strengths(confidences, None, None)
    scores: dict[DbKey, float] = {}
    fresh: dict[DbKey, float] = {}
    for key in keys:
        t = updated.get(key)
        if t is None:
            scores[key] = fresh[key] = 0.0
            continue
        b = base.get(key)
        scores[key] = decay.score(1.0 if b is None else b, t, modulating.get(key), now)
        fresh[key] = decay.score(1.0, t, modulating.get(key), now)
    return _Strengths(confidences, scores, fresh)


# -- the probe and the assessment ------------------------------------------------------------
def _familiarity(capabilities: Capabilities, space: KeySpace, cues: Mapping[str, str]) -> dict[str, float]:
    """Familiarity per cue: one ExistenceFilter round trip for all cues (none without a filter)."""
    existence = capabilities.existence
    if existence is None or not cues:
        return {name: familiarity(None) for name in cues}
    flags = existence.check(space, list(cues.values()))
    return {name: familiarity(flag) for name, flag in zip(cues, flags)}


def _normalised(space: KeySpace, ranked: list[tuple[str, float]], signal: str) -> list[Candidate]:
    top = max((score for _, score in ranked), default=0.0)
    scale = top if top > 0 else 1.0
    return [
        Candidate(key=DbKey(space, rid), pull=score, signals={signal: score}, combined=score / scale)
        for rid, score in ranked
    ]


def _keyword_probe(bm25: BM25Field, space: KeySpace, text: str, limit: int) -> list[Candidate]:
    """The small retrieval of one cue: its BM25 list fused alone by convex fusion, which divides each
    keyword score by the list's best: the candidate's ``combined`` score (module docstring)."""
    alone = Retrieval(space, {"keyword": keyword_hits(bm25, space, text, limit)}, Fusion("convex", {}, limit, limit))
    candidates = retrieve(bm25.model._meta.client, alone).candidates
    for candidate in candidates:
        candidate.combined = cast(float, candidate.pull)
    return candidates


def _probe(
    model: type[Model], capabilities: Capabilities, limit: int, space: KeySpace, cues: Mapping[str, str],
    familiar: dict[str, float], now: float,
) -> dict[str, list[Candidate]]:
    """Per cue, a small retrieval of ``limit`` records (no vectors, graph or push path).

    Keyword (BM25) search of the cue's text when the model has a BM25Field: one round trip per
    cue; else the top records of the first DecayingSortedField, one round trip shared by every
    cue; else nothing. A cue the ExistenceFilter calls definitely missing is not searched.
    """
    bm25 = capabilities.bm25
    decay = _first(model, DecayingSortedField)
    searched = [name for name in cues if familiar[name] > 0.0]
    found: dict[str, list[Candidate]] = {name: [] for name in cues}
    if bm25 is not None:
        for name in searched:
            found[name] = _keyword_probe(bm25, space, cues[name], limit)
    elif decay is not None and searched:
        shared = _normalised(space, decay.ranked(space, now, limit), "decay")
        found.update((name, list(shared)) for name in searched)
    return found


def _distinct(lists: Iterable[list[Candidate]]) -> list[Candidate]:
    seen: dict[DbKey, Candidate] = {}
    for candidates in lists:
        for candidate in candidates:
            previous = seen.get(candidate.key)
            if previous is None or candidate.combined > previous.combined:
                seen[candidate.key] = candidate
    return list(seen.values())


def assess_retrieval(
    model: type[Model], capabilities: Capabilities, config: AssemblerConfig, space: KeySpace,
    cues: Mapping[str, str], *, candidates: list[Candidate] | None = None, now: float | None = None,
) -> RetrievalQuality:
    """Score how well the memory of one partition (``space``, of ``model``) can answer ``cues``.

    ``cues`` are named as :func:`named_cues` gives them; ``capabilities`` are the model's
    (:meth:`~redmem.context._retrieval.Capabilities.of`); ``config`` gives ``max_items`` and
    ``surfacing_threshold``. Without ``candidates`` this is the cheap pre-retrieval probe: per
    cue an ExistenceFilter check (one round trip for all cues) and a small retrieval (see
    :func:`_probe`), then one round trip to read confidences and decay entries:
    ``2 + number of familiar cues`` round trips with a BM25Field, at most 3 without. No record
    is loaded, nothing is written. With ``candidates`` (e.g. the merged candidates of
    ``assemble()``) every cue is scored against that one list: two round trips. ``now`` (epoch
    seconds, default the current time) is the clock of the decayed scores.
    :meth:`ContextAssembler.assess <redmem.recipes.assembler._context_assembler.ContextAssembler.assess>`
    takes the cues and the tenant as ``assemble()`` does and calls this.
    """
    at = timestamp("now", now)
    familiar = _familiarity(capabilities, space, cues)
    if candidates is None:
        per_cue = _probe(model, capabilities, config.max_items, space, cues, familiar, at)
        pool = _distinct(per_cue.values())
    else:
        pool = _distinct([candidates])
        per_cue = {name: pool for name in cues}
    conf = capabilities.confidence[0] if capabilities.confidence else None
    decay = _first(model, DecayingSortedField)
    strengths = _strengths(model, conf, decay, [c.key for c in pool], at)
    return _quality(config, per_cue, familiar, pool, strengths)


def _quality(
    config: AssemblerConfig, per_cue: dict[str, list[Candidate]], familiar: dict[str, float],
    pool: list[Candidate], strengths: _Strengths,
) -> RetrievalQuality:
    def proxy(candidate: Candidate) -> float:
        return candidate.combined if strengths.decay is None else strengths.decay[candidate.key]

    threshold = config.surfacing_threshold
    fok = {
        name: feeling_of_knowing(
            familiar[name], len(found), weak_fraction([proxy(c) for c in found], threshold), config.max_items,
        )
        for name, found in per_cue.items()
    }
    proxies = [proxy(c) for c in pool]
    confidences = None if strengths.confidence is None else [strengths.confidence[c.key] for c in pool]
    freshness = [] if strengths.freshness is None else [strengths.freshness[c.key] for c in pool]
    return RetrievalQuality(
        avg_confidence=mean_confidence(confidences),
        score_spread=score_spread(proxies),
        fok_score=statistics.fmean(fok.values()) if fok else 0.0,
        staleness_ratio=staleness_ratio(freshness),
        score_distribution=score_distribution(proxies),
        per_cue_fok=fok,
        candidate_count=len(pool),
    )
