"""``Lifecycle``: what a model's writes do with restated and updated facts (set per model).

Defaults are the benchmark's calibrated values (docs/lifecycle.md, ``benchmarks/lifecycle.py``):
merge exact restatements and near duplicates whose cosine is at least ``merge_threshold`` and
whose names and numbers agree; supersede the current fact of the same subject and slot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..store._errors import ConfigurationError

__all__ = ["Lifecycle", "Judge", "DEFAULT_MERGE_THRESHOLD", "NEAR_CANDIDATES"]

#: Cosine at or above which two statements with the same names and numbers are one fact
#: (calibrated on the benchmark's paraphrases with the hashing and local providers).
DEFAULT_MERGE_THRESHOLD = 0.85
#: How many nearest current records a write compares itself with.
NEAR_CANDIDATES = 3

#: An optional judge: ``judge(new_text, old_text)`` answers "duplicate", "supersedes" or "unrelated".
Judge = Callable[[str, str], str]


@dataclass(frozen=True)
class Lifecycle:
    """Per-model settings of fact lifecycle, a class attribute of a :class:`LifecycleMixin` model.

    ``text_field``: the field holding the statement (compared for duplicates and slots).
    ``merge``: a restatement reinforces the stored record (``seen_count``, ``last_seen``,
    ``sources``) instead of adding a copy. ``supersede``: a newer fact of the same subject and
    slot closes the older one's window. ``auto_slot``: without an explicit ``slot``, infer one
    from the text's first name and its predicate (lives, works, uses, prefers ...).
    ``judge``: asked about the nearest current records no rule decided (an LLM call: opt-in).
    """

    text_field: str = "content"
    merge: bool = True
    merge_threshold: float = DEFAULT_MERGE_THRESHOLD
    supersede: bool = True
    auto_slot: bool = True
    judge: Judge | None = None
    judge_threshold: float = 0.5

    def __post_init__(self) -> None:
        for name in ("merge_threshold", "judge_threshold"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"Lifecycle.{name} must lie in [0, 1], got {value!r}")

    @property
    def active(self) -> bool:
        """Whether a write looks for duplicates or older facts at all."""
        return self.merge or self.supersede
