"""The context assembler recipe: ``ContextAssembler`` and its ``AssemblerConfig``, retrieval quality
(metacognition) and adaptation, conversation and subconscious memory built on it, and
``models.py``: the ready-made memories (``DefaultMemory``, ``HybridMemory``, ``ConversationMemory``)."""

from .adaptive import AdaptiveAssembler
from .config import AssemblerConfig
from .context_assembler import AssemblyResult, ContextAssembler
from .conversation import ConversationMemory, conversation_assembler, ingest_conversation
from .memory import Memory
from .models import DefaultMemory, HybridMemory
from .quality import RetrievalQuality, assess_retrieval
from .subconscious import SubconsciousMemory

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
