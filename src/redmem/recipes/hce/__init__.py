"""HCE: a chat middleware on Redis: focus buffer, entity graph, semantic tree, knapsack budgeting.

``HCEPipeline(session_id=..., max_focus=10, context_budget=1500)`` gives a chat function memory
(``@pipe.wrap_chat``); ``retrieve_context``, ``update``, ``build_prompt``, ``save`` / ``load``.
Every piece of state lives in Redis under the session's hash tag (see docs/recipes/hce.md).
"""

from ..._public import publish
from ...context._token_estimate import estimate_tokens
from ._budgeting import ContextCandidate, context_budgeting
from ._export import ExportError
from ._extractor import EntityExtractor, ExtractedEntity
from ._focus import FocusBuffer, FocusEntry
from ._graph import EntityGraph, spreading_activation
from ._kinds import EdgeType, NodeType
from ._models import HCEGroup, HCEInteraction, HCETopic
from ._pipeline import HCEPipeline, RetrievedContext
from ._summaries import TopicSummary, extractive_summary
from ._tree import SemanticTree, TreeHit, hierarchical_relevance_search

__all__ = [
    "HCEPipeline",
    "RetrievedContext",
    "FocusBuffer",
    "FocusEntry",
    "ContextCandidate",
    "estimate_tokens",
    "context_budgeting",
    "EntityGraph",
    "NodeType",
    "EdgeType",
    "spreading_activation",
    "EntityExtractor",
    "ExtractedEntity",
    "SemanticTree",
    "TreeHit",
    "hierarchical_relevance_search",
    "HCEInteraction",
    "HCETopic",
    "HCEGroup",
    "TopicSummary",
    "extractive_summary",
    "ExportError",
]

publish(__name__, __all__)
