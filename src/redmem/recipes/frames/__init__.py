"""Frames: SELF / ATTENTION / TASK context frames over an agent's memory blocks.

``FrameMemory(agent_id=...)`` learns blocks, connects and contradicts them, keeps the agent's
active-hours clock, and builds frames: ``frame()`` (rendered, with reinforcement) and ``recall()``
(scored blocks, no writes).
"""

from .definitions import (
    ATTENTION_FRAME,
    BUILTIN_FRAMES,
    SELF_FRAME,
    TASK_FRAME,
    CachePolicy,
    FrameDefinition,
    FrameFilters,
    ScoringWeights,
)
from .engine import FrameMemory
from .model import Block
from .prefix_index import PrefixIndexField
from .scoring import FrameResult, ScoredBlock

__all__ = [
    "FrameMemory",
    "FrameDefinition",
    "FrameFilters",
    "CachePolicy",
    "ScoringWeights",
    "ScoredBlock",
    "FrameResult",
    "Block",
    "PrefixIndexField",
    "BUILTIN_FRAMES",
    "SELF_FRAME",
    "ATTENTION_FRAME",
    "TASK_FRAME",
]
