"""Context engines built only from redmem's primitives and pipeline stages."""

from .adaptive import AdaptiveAssembler
from .assembler_config import AssemblerConfig
from .context_assembler import AssemblyResult, ContextAssembler
from .default_memory import DefaultMemory, HybridMemory
from .extractors import HeuristicExtractor, LLMExtractor
from .policy_cache import PolicyCache
from .quality import RetrievalQuality, assess_retrieval
from .subconscious import SubconsciousMemory

__all__ = [
    "AdaptiveAssembler",
    "AssemblerConfig",
    "AssemblyResult",
    "ContextAssembler",
    "DefaultMemory",
    "HybridMemory",
    "HeuristicExtractor",
    "LLMExtractor",
    "PolicyCache",
    "RetrievalQuality",
    "assess_retrieval",
    "SubconsciousMemory",
]
