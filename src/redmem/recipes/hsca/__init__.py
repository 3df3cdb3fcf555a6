"""HSCA: hierarchical semantic compression with adaptive context windowing.

Each turn is scored by four layers (relational weight, domain and coherence, nuance flags, the
adaptive window); coherent beats freeze into :class:`ContextSnapshot` s kept in order per session
in Redis, and the macro context answers questions about how the conversation moved;
:class:`AgentMacro` reads an agent's sessions together (cross-session aggregation, read-only).
"""

from ..._public import publish
from ._agent import AgentBeat, AgentMacro, ConceptAppearance, SessionProfile
from ._beats import Beat
from ._domain_model import EmbeddingDomains
from ._engine import HSCAEngine
from ._history import ServedQuery
from ._interface import ContextSnapshot, DomainTag, NuanceFlag, WeightedChunk
from ._macro import DomainStep, RelevantBeat
from ._models import ServedRecord, SnapshotPassage, SnapshotRecord, TunedParameters
from ._nuance_model import NuanceModel
from ._store import SessionStore
from ._tuning import HSCAParameters, TuningResult, tune

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

publish(__name__, __all__)
