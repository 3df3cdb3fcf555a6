"""Context engines built only from redmem's primitives and pipeline stages, one folder per recipe:
``assembler/`` (ContextAssembler, its config, metacognition, adaptation, conversation and
subconscious memory, and ``models.py``: the ready-made memories), ``policy/``, ``frames/``,
``hce/``, ``hsca/``. The module paths the docs gave before the folders keep working
(each old module re-exports the one that replaced it)."""

from .assembler.adaptive import AdaptiveAssembler
from .assembler.config import AssemblerConfig
from .assembler.context_assembler import AssemblyResult, ContextAssembler
from .assembler.extractors import HeuristicExtractor, LLMExtractor
from .assembler.memory import Memory
from .assembler.models import DefaultMemory, HybridMemory
from .assembler.quality import RetrievalQuality, assess_retrieval
from .assembler.subconscious import SubconsciousMemory
from .policy.cache import PolicyCache

__all__ = [
    "AdaptiveAssembler",
    "AssemblerConfig",
    "AssemblyResult",
    "ContextAssembler",
    "DefaultMemory",
    "HybridMemory",
    "Memory",
    "HeuristicExtractor",
    "LLMExtractor",
    "PolicyCache",
    "RetrievalQuality",
    "assess_retrieval",
    "SubconsciousMemory",
]

