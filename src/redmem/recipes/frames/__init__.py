"""Frames: SELF / ATTENTION / TASK context frames over an agent's memory blocks.

``FrameMemory(agent_id=...)`` learns blocks, connects and contradicts them, keeps the agent's
active-hours clock, and builds frames: ``frame()`` (rendered, with reinforcement) and ``recall()``
(scored blocks, no writes); ``aframe`` / ``arecall`` are their awaitable twins (docs/asyncio.md).
The seed's names (``get_frame_definition``, ``FrameCache``, ``render_blocks``, the ``*_WEIGHTS``)
import from here too; ``OpenAIContradictionJudge`` and ``heuristic_judge`` are the fact lifecycle's
``OpenAIJudge`` and this recipe's ``rules_judge`` (one judging machinery, :mod:`redmem.lifecycle`).
"""

from ..._public import publish
from ._cache import FrameCache
from ._definitions import (
    ATTENTION_FRAME,
    ATTENTION_WEIGHTS,
    BUILTIN_FRAMES,
    SELF_FRAME,
    SELF_WEIGHTS,
    TASK_FRAME,
    TASK_WEIGHTS,
    CachePolicy,
    FrameDefinition,
    FrameFilters,
    ScoringWeights,
    get_frame_definition,
)
from ._engine import FrameMemory
from ._models import Block
from ._prefix_index import PrefixIndexField
from ._rendering import render_blocks
from ._scoring import FrameResult, ScoredBlock
from ._wiring import LearnWiring, OpenAIContradictionJudge, heuristic_judge, rules_judge

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
    "SELF_WEIGHTS",
    "ATTENTION_WEIGHTS",
    "TASK_WEIGHTS",
    "get_frame_definition",
    "FrameCache",
    "render_blocks",
    "LearnWiring",
    "OpenAIContradictionJudge",
    "heuristic_judge",
    "rules_judge",
]

publish(__name__, __all__)
