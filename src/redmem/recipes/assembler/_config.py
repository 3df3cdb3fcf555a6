"""AssemblerConfig: the options of a ContextAssembler, one frozen value checked when it is made.

``ContextAssembler(model, config=AssemblerConfig(max_items=5, ...))`` and
``ContextAssembler(model, max_items=5, ...)`` are the same assembler. A variant of a config is
``dataclasses.replace(config, max_items=8)`` (checked again).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from ...context._duplicates import DUPLICATE_COSINE
from ...context._floor import DEFAULT_MIN_RELEVANCE
from ...context._oversize import check_oversize
from ...context._packing import Budget
from ...context._rendering import check_format, check_render_fields
from ...context._retrieval import check_fusion
from ...context._tokens import TokenCounter, resolve_counter
from ...store._connection import settings
from ...store._errors import ValidationError
from ...store._validation import boolean, finite_number, non_negative_int, positive_int, text_or_none

__all__ = [
    "AssemblerConfig", "DEFAULT_MAX_ITEMS", "DEFAULT_SURFACING_THRESHOLD", "DEFAULT_PROPAGATION_DEPTH",
]

DEFAULT_MAX_ITEMS = 10
DEFAULT_SURFACING_THRESHOLD = 0.5
DEFAULT_PROPAGATION_DEPTH = 2


@dataclass(frozen=True)
class AssemblerConfig:
    """The options of a :class:`~redmem.recipes.assembler._context_assembler.ContextAssembler` (each one is
    described in the ContextAssembler guide).

    Checked when made, in field order, each error naming the option and what it accepts;
    values are kept normalised (``surfacing_threshold`` a float, ``token_counter`` the counter
    it resolves to: None is the counter of ``redmem.configure(token_counter=...)`` at that
    moment, else the exact cl100k_base count). ``max_items`` and ``max_tokens`` must be >= 1.
    ``max_tokens`` bounds the counted tokens of ``formatted``, the text sent;
    ``oversize`` says what becomes of a memory bigger than the whole budget: ``"truncate"`` (the
    default: cut to the room the memories that fit leave, ending in "…[truncated]"), ``"skip"``,
    or ``"admit"`` (the seed's rule: the first record is admitted whatever its size, so the
    budget may be exceeded); see :mod:`redmem.context._oversize`. What
    depends on the model is checked when an assembler takes the config: ``score_weights``
    names, the fields ``retrieval_mode`` needs, ``render_fields`` names, the content format's
    text field.

    ``max_proactive`` None stands for ``max(1, max_items // 5)`` (:attr:`proactive_limit`).
    ``duplicate_cosine``: two memories whose vectors (when the vector search ran) have at
    least this cosine are near duplicates, and only the better-ranked one is kept; None keeps
    near duplicates (exact ones, the same text after normalisation, always collapse).

    ``min_relevance``: the relevance floor, a number in [0, 1] or None (no floor): a memory
    whose match with the query (:func:`~redmem.context._retrieval.match_scores`) is below it is
    left out even when ``max_items`` allows more (:mod:`redmem.context._floor`).
    ``newer_first``: of two memories where the newer updates the older one's fact, the newer
    ranks first (:mod:`redmem.context._recency`); it reads ``time_field`` (a field holding a
    datetime or an ISO 8601 text), else a ``said_at`` or ``valid_from`` field (when the memory
    was stated), falling back per memory to the model's first DatetimeField (when it was written).
    ``question_cues``: after fusion, a direct hit whose speaker the question names, or that says a
    time when the question asks when, moves up (:mod:`redmem.context._question_cues`); False ranks
    by the fused score alone.
    ``fusion`` defaults to convex score fusion with every list weighing 1, the measured best
    (the seed's ``"rrf"`` is one option away).
    """

    score_weights: dict[Any, float] | None = None
    max_items: int = DEFAULT_MAX_ITEMS
    max_tokens: int | None = None
    surfacing_threshold: float = DEFAULT_SURFACING_THRESHOLD
    propagation_depth: int = DEFAULT_PROPAGATION_DEPTH
    output_format: str = "structured"
    token_counter: TokenCounter | str | None = None
    retrieval_mode: str = "auto"
    render_fields: list[str] | None = None
    max_proactive: int | None = None
    fusion: str = "convex"
    fusion_weights: dict[str, float] | None = None
    duplicate_cosine: float | None = DUPLICATE_COSINE
    min_relevance: float | None = DEFAULT_MIN_RELEVANCE
    newer_first: bool = True
    question_cues: bool = True
    time_field: str | None = None
    oversize: str = "truncate"

    def __post_init__(self) -> None:
        counter = self.token_counter if self.token_counter is not None else settings().token_counter
        checked = {
            "max_items": positive_int("max_items", self.max_items),
            "max_tokens": positive_int("max_tokens", self.max_tokens, none=True),
            "surfacing_threshold": finite_number("surfacing_threshold", self.surfacing_threshold),
            "propagation_depth": non_negative_int("propagation_depth", self.propagation_depth),
            "output_format": check_format(self.output_format),
            "token_counter": resolve_counter(counter, stacklevel=4),  # warns at the line making the config
            "render_fields": check_render_fields(self.render_fields),
            "max_proactive": non_negative_int("max_proactive", self.max_proactive, none=True),
            "duplicate_cosine": _check_cosine(self.duplicate_cosine),
            "fusion_weights": check_fusion(self.fusion, self.fusion_weights),
            "min_relevance": finite_number("min_relevance", self.min_relevance, low=0.0, high=1.0, none=True),
            "newer_first": boolean("newer_first", self.newer_first),
            "question_cues": boolean("question_cues", self.question_cues),
            "time_field": text_or_none("time_field", self.time_field),
            "oversize": check_oversize(self.oversize),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    @property
    def counter(self) -> TokenCounter:
        """The token counter: :attr:`token_counter` as resolved when the config was made."""
        return cast(TokenCounter, self.token_counter)

    @property
    def proactive_limit(self) -> int:
        """``max_proactive``, or ``max(1, max_items // 5)`` when it is None."""
        return max(1, self.max_items // 5) if self.max_proactive is None else self.max_proactive

    @property
    def budget(self) -> Budget:
        """The packing budget: ``max_items`` records, ``max_tokens`` tokens."""
        return Budget(max_items=self.max_items, max_tokens=self.max_tokens)


def _check_cosine(value: float | None) -> float | None:
    """``duplicate_cosine`` as given: None, or a number in (0, 1] (ValidationError otherwise)."""
    cosine = finite_number("duplicate_cosine", value, low=0.0, high=1.0, none=True)
    if cosine == 0.0:
        raise ValidationError(f"duplicate_cosine must be a number in (0, 1] or None, got {value!r}")
    return cosine
