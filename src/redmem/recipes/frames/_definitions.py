"""Frame definitions: what a frame retrieves (weights, filters, guarantees) and how it is shown.

A frame scores its candidates with five weights that sum to 1:

    score = w_sim*similarity + w_conf*confidence + w_rec*recency + w_cent*centrality + w_reinf*reinforcement

Built-in frames (weights sim/conf/rec/cent/reinf, budget, cache):

| frame | weights | filters | guarantees | template | budget | cache |
|---|---|---|---|---|---|---|
| self | .10/.30/.05/.25/.30 | tags ``self/%`` | ``self/constitutional`` | self | 600 | 3600 s |
| attention | .35/.15/.25/.15/.10 | none | none | attention | 2000 | none |
| task | .20 each | none | ``self/goal`` | task | 800 | none |

Custom frames are stored in Redis as JSON (:func:`definition_to_json` / :func:`definition_from_json`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ...store._errors import ValidationError
from ...store._validation import finite_number, non_negative_int, positive_int, utf8_text

__all__ = [
    "ScoringWeights",
    "FrameFilters",
    "CachePolicy",
    "FrameDefinition",
    "SELF_WEIGHTS",
    "ATTENTION_WEIGHTS",
    "TASK_WEIGHTS",
    "SELF_FRAME",
    "ATTENTION_FRAME",
    "TASK_FRAME",
    "BUILTIN_FRAMES",
    "CACHE_EVENTS",
    "get_frame_definition",
    "TEMPLATES",
    "DEFAULT_SEARCH_WINDOW_HOURS",
    "check_tag_pattern",
    "check_tag",
    "definition_to_json",
    "definition_from_json",
]

#: Blocks last reinforced more than this many active hours ago are outside a frame's window.
DEFAULT_SEARCH_WINDOW_HOURS = 200.0
#: Templates a frame can render with (see :mod:`redmem.recipes.frames._templates`).
TEMPLATES = ("self", "attention", "task")
#: How far the weights may sum away from 1.
WEIGHT_TOLERANCE = 1e-4
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_TAG_FORBIDDEN = re.compile(r"[\s%\x00-\x1f\x7f]")


def check_tag(tag: Any) -> str:
    """``tag`` if it is a non-empty str without whitespace, control characters or ``%`` (the wildcard)."""
    if not isinstance(tag, str) or not tag or _TAG_FORBIDDEN.search(tag):
        raise ValidationError(f"a tag is a non-empty str without whitespace, control characters or '%', got {tag!r}")
    return utf8_text("a tag", tag)


def check_tag_pattern(pattern: Any) -> str:
    """A tag pattern: an exact tag, or a prefix ending in one ``%`` (``self/%``; ``%`` alone: any tag)."""
    if not isinstance(pattern, str) or not pattern:
        raise ValidationError(f"a tag pattern is a non-empty str, got {pattern!r}")
    stem = pattern[:-1] if pattern.endswith("%") else pattern
    if stem and _TAG_FORBIDDEN.search(stem):
        raise ValidationError(f"a tag pattern may hold '%' only at its end (a prefix), got {pattern!r}")
    return utf8_text("a tag pattern", pattern)


@dataclass(frozen=True)
class ScoringWeights:
    """The five weights of the composite score; each >= 0, together 1 (within 1e-4)."""

    similarity: float
    confidence: float
    recency: float
    centrality: float
    reinforcement: float

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            finite_number(f"weight {name}", value, low=0.0)
        total = math.fsum(asdict(self).values())
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise ValidationError(f"scoring weights must sum to 1, got {total:.6f}")

    def without_similarity(self) -> ScoringWeights:
        """The weights of a queryless frame: similarity dropped, the other four rescaled to sum 1
        (all four equal when they were all 0)."""
        rest = self.confidence + self.recency + self.centrality + self.reinforcement
        if rest <= 0:
            return ScoringWeights(0.0, 0.25, 0.25, 0.25, 0.25)
        return ScoringWeights(0.0, self.confidence / rest, self.recency / rest, self.centrality / rest,
                              self.reinforcement / rest)


SELF_WEIGHTS = ScoringWeights(0.10, 0.30, 0.05, 0.25, 0.30)
ATTENTION_WEIGHTS = ScoringWeights(0.35, 0.15, 0.25, 0.15, 0.10)
TASK_WEIGHTS = ScoringWeights(0.20, 0.20, 0.20, 0.20, 0.20)


@dataclass(frozen=True)
class FrameFilters:
    """The pre-filter: blocks carrying a tag matching one of ``tag_patterns`` (None: any block),
    of one of ``categories`` (None: any), last reinforced less than ``search_window_hours``
    active hours ago (strictly)."""

    tag_patterns: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    search_window_hours: float = DEFAULT_SEARCH_WINDOW_HOURS

    def __post_init__(self) -> None:
        if self.tag_patterns is not None:
            object.__setattr__(self, "tag_patterns", tuple(check_tag_pattern(p) for p in _sequence(
                "tag_patterns", self.tag_patterns)))
        if self.categories is not None:
            object.__setattr__(self, "categories", tuple(check_tag(c) for c in _sequence(
                "categories", self.categories)))
        finite_number("search_window_hours", self.search_window_hours, low=0.0)


#: The events that drop a cached frame; redmem applies every one of them to every cached frame.
CACHE_EVENTS = ("self_block_change", "curate_complete", "session_end")


@dataclass(frozen=True)
class CachePolicy:
    """A frame's result is reused for ``ttl_seconds``, until a block tagged ``self/...`` changes or
    the session ends. ``invalidate_on`` is the seed's spelling of those events, checked against
    :data:`CACHE_EVENTS` (all of which always apply: the cache is versioned, not per-event)."""

    ttl_seconds: int = 3600
    invalidate_on: tuple[str, ...] = ("self_block_change",)

    def __post_init__(self) -> None:
        positive_int("ttl_seconds", self.ttl_seconds)
        events = _sequence("invalidate_on", self.invalidate_on)
        unknown = [e for e in events if e not in CACHE_EVENTS]
        if unknown:
            raise ValidationError(f"unknown cache events {unknown!r}; use some of {list(CACHE_EVENTS)}")
        object.__setattr__(self, "invalidate_on", events)


@dataclass(frozen=True)
class FrameDefinition:
    """One frame: its name, scoring weights, pre-filter, guaranteed tag patterns, template, token
    budget and cache policy (None: never cached). ``source`` is ``builtin`` or ``user``."""

    name: str
    weights: ScoringWeights
    filters: FrameFilters = field(default_factory=FrameFilters)
    guarantees: tuple[str, ...] = ()
    template: str = "attention"
    token_budget: int = 2000
    cache: CachePolicy | None = None
    source: str = "user"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValidationError(f"a frame name is 1-64 of a-z 0-9 _ - (starting with a letter or digit), got {self.name!r}")
        if not isinstance(self.weights, ScoringWeights):
            raise ValidationError(f"weights must be ScoringWeights, got {self.weights!r}")
        if not isinstance(self.filters, FrameFilters):
            raise ValidationError(f"filters must be FrameFilters, got {self.filters!r}")
        object.__setattr__(self, "guarantees", tuple(check_tag_pattern(p) for p in _sequence(
            "guarantees", self.guarantees)))
        if self.template not in TEMPLATES:
            raise ValidationError(f"unknown template {self.template!r}; use one of {list(TEMPLATES)}")
        non_negative_int("token_budget", self.token_budget)
        if self.cache is not None and not isinstance(self.cache, CachePolicy):
            raise ValidationError(f"cache must be a CachePolicy or None, got {self.cache!r}")
        if self.source not in ("builtin", "user"):
            raise ValidationError(f"source must be 'builtin' or 'user', got {self.source!r}")


def _sequence(name: str, value: Any) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ValidationError(f"{name} must be a list or tuple, got {value!r}")
    return tuple(value)


SELF_FRAME = FrameDefinition(
    "self", SELF_WEIGHTS, FrameFilters(tag_patterns=("self/%",)), ("self/constitutional",), "self", 600,
    CachePolicy(3600, ("self_block_change", "curate_complete")), "builtin",
)
ATTENTION_FRAME = FrameDefinition("attention", ATTENTION_WEIGHTS, FrameFilters(), (), "attention", 2000, None, "builtin")
TASK_FRAME = FrameDefinition("task", TASK_WEIGHTS, FrameFilters(), ("self/goal",), "task", 800, None, "builtin")
BUILTIN_FRAMES: dict[str, FrameDefinition] = {f.name: f for f in (SELF_FRAME, ATTENTION_FRAME, TASK_FRAME)}


def get_frame_definition(name: str) -> FrameDefinition:
    """The built-in frame ``name`` (the seed's registry); ValidationError for any other name.
    A custom frame lives in Redis: :meth:`FrameMemory.frame_definition` finds both."""
    if not isinstance(name, str) or name not in BUILTIN_FRAMES:
        raise ValidationError(f"unknown built-in frame {name!r}; built-in frames are {sorted(BUILTIN_FRAMES)}")
    return BUILTIN_FRAMES[name]


def definition_to_json(definition: FrameDefinition) -> str:
    """The definition as JSON (the form a custom frame is stored in)."""
    return json.dumps(asdict(definition), sort_keys=True)


def definition_from_json(text: str | bytes) -> FrameDefinition:
    """Inverse of :func:`definition_to_json` (checked like a new definition); ValidationError for
    text that is not a stored definition (garbage written to the definitions hash by hand)."""
    try:
        return _definition_of(json.loads(text))
    except ValidationError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValidationError(f"not a stored frame definition ({type(exc).__name__}: {exc}): {text!r}"[:300]) from None


def _definition_of(data: Any) -> FrameDefinition:
    filters = data["filters"]
    return replace(
        FrameDefinition(data["name"], ScoringWeights(**data["weights"])),
        filters=FrameFilters(
            None if filters["tag_patterns"] is None else tuple(filters["tag_patterns"]),
            None if filters["categories"] is None else tuple(filters["categories"]),
            filters["search_window_hours"],
        ),
        guarantees=tuple(data["guarantees"]), template=data["template"], token_budget=data["token_budget"],
        cache=None if data["cache"] is None else CachePolicy(**data["cache"]), source=data["source"],
    )
