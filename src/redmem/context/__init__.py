"""Pipeline stages shared by the recipes: candidates, fusion, packing, rendering, token counting,
explanations and the result every recipe returns."""

from .._public import publish
from ._explain import Explanation
from ._fusion import convex_fusion, reciprocal_rank_fusion
from ._packing import Budget, Packed, pack
from ._query_weights import query_adaptive_weights
from ._record_fusion import fuse
from ._rendering import FORMATS, Renderer, compose, pack_slices, record_view, render_slice
from ._result import ContextResult
from ._retrieval import Capabilities, Fusion, Retrieval, keyword_hits, retrieve
from ._token_estimate import estimate_tokens
from ._tokens import TokenCounter, default_counter, exact_counter, resolve_counter, seed_tiktoken_cache

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
    "Capabilities",
    "Fusion",
    "Retrieval",
    "keyword_hits",
    "retrieve",
    "Renderer",
    "pack_slices",
    "default_counter",
    "seed_tiktoken_cache",
]

publish(__name__, __all__)
