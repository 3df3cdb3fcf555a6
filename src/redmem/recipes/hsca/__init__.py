"""HSCA: hierarchical semantic compression with adaptive context windowing.

Each turn is scored by four layers (relational weight, domain and coherence, nuance flags, the
adaptive window); coherent beats freeze into :class:`ContextSnapshot` s kept in order per session
in Redis, and the macro context answers questions about how the conversation moved;
:class:`AgentMacro` reads an agent's sessions together (cross-session aggregation, read-only).
"""

from .agent import AgentBeat, AgentMacro, ConceptAppearance, SessionProfile
from .beats import Beat
from .domain_model import EmbeddingDomains
from .engine import HSCAEngine
from .history import ServedQuery
from .interface import ContextSnapshot, DomainTag, NuanceFlag, WeightedChunk
from .macro import DomainStep, RelevantBeat
from .models import ServedRecord, SnapshotPassage, SnapshotRecord, TunedParameters
from .nuance_model import NuanceModel
from .store import SessionStore
from .tuning import HSCAParameters, TuningResult, tune

__all__ = [
    "HSCAEngine",
    "DomainTag",
    "NuanceFlag",
    "WeightedChunk",
    "ContextSnapshot",
    "Beat",
    "AgentMacro",
    "SessionProfile",
    "ConceptAppearance",
    "AgentBeat",
    "DomainStep",
    "RelevantBeat",
    "NuanceModel",
    "EmbeddingDomains",
    "SessionStore",
    "SnapshotRecord",
    "SnapshotPassage",
    "ServedQuery",
    "ServedRecord",
    "HSCAParameters",
    "TunedParameters",
    "TuningResult",
    "tune",
]
