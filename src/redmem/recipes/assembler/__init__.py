"""The context assembler recipe: ``ContextAssembler`` and its ``AssemblerConfig``, retrieval quality
(metacognition) and adaptation, conversation and subconscious memory built on it, and
``models.py``: the ready-made memories (``DefaultMemory``, ``HybridMemory``, ``ConversationMemory``)."""

from ..._public import publish
from ._adaptive import AdaptiveAssembler
from ._config import AssemblerConfig
from ._context_assembler import AssemblyResult, ContextAssembler
from ._conversation import ConversationMemory, conversation_assembler, ingest_conversation
from ._memory import Memory
from ._models import DefaultMemory, HybridMemory
from ._quality import RetrievalQuality, assess_retrieval
from ._subconscious import SubconsciousMemory

__all__ = [
    "AdaptiveAssembler",
    "AssemblerConfig",
    "AssemblyResult",
    "ContextAssembler",
    "ConversationMemory",
    "conversation_assembler",
    "ingest_conversation",
    "DefaultMemory",
    "HybridMemory",
    "Memory",
    "RetrievalQuality",
    "assess_retrieval",
    "SubconsciousMemory",
]

publish(__name__, __all__)
