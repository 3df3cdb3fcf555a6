"""Pipeline stages shared by the recipes: candidates, fusion, packing, rendering, token counting,
explanations and the result every recipe returns."""

from .explain import Explanation
from .fusion import convex_fusion, reciprocal_rank_fusion
from .packing import Budget, Packed, pack
from .query_weights import query_adaptive_weights
from .record_fusion import fuse
from .rendering import FORMATS, compose, record_view, render_slice
from .result import ContextResult
from .token_estimate import estimate_tokens
from .tokens import TokenCounter, exact_counter, resolve_counter

__all__ = [
    "fuse",
    "query_adaptive_weights",
    "reciprocal_rank_fusion",
    "convex_fusion",
    "Budget",
    "Packed",
    "pack",
    "FORMATS",
    "compose",
    "record_view",
    "render_slice",
    "estimate_tokens",
    "TokenCounter",
    "exact_counter",
    "resolve_counter",
    "ContextResult",
    "Explanation",
]
