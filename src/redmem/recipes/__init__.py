"""Context engines built only from redmem's primitives and pipeline stages, one folder per recipe:
``assembler/`` (ContextAssembler, its config, metacognition, adaptation, conversation and
subconscious memory, and ``models.py``: the ready-made memories), ``policy/``, ``frames/``,
``hce/``, ``hsca/``. The module paths the docs gave before the folders keep working
(each old module re-exports the one that replaced it)."""

from .._public import publish
from ._retention import Retention, apply_retention, archived
from ._tenant_data import erase_tenant, export_tenant, import_tenant, tenant_key_count
from .assembler._adaptive import AdaptiveAssembler
from .assembler._config import AssemblerConfig
from .assembler._context_assembler import AssemblyResult, ContextAssembler
from .assembler._extractors import HeuristicExtractor, LLMExtractor
from .assembler._memory import Memory
from .assembler._models import DefaultMemory, HybridMemory
from .assembler._quality import RetrievalQuality, assess_retrieval
from .assembler._subconscious import SubconsciousMemory
from .policy._cache import PolicyCache

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
    "Retention",
    "apply_retention",
    "archived",
    "erase_tenant",
    "export_tenant",
    "import_tenant",
    "tenant_key_count",
]

publish(__name__, __all__)
