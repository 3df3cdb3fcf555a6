"""Fact lifecycle without an LLM: merge on write, supersede, validity time and ``as_of`` reads.

Lives above the model and field layers (it uses the embedding field's search and the
sentence heuristics of :mod:`redmem.text._sentences`) and below the recipes, which read it through ``where``
(:func:`~redmem.model._filters.compile_where` asks the model for its validity conditions), so no
recipe needs a change to skip superseded facts. See docs/lifecycle.md.
"""

from .._public import publish
from ._config import DEFAULT_MERGE_THRESHOLD, Judge, Lifecycle
from ._detect import SLOT_FAMILIES, anchors, infer_slot, text_digest
from ._index import LifecycleKeyKind
from ._judge import JUDGE_PROMPT, OpenAIJudge
from ._manual import history, restore, supersede
from ._mixin import AS_OF, LifecycleMixin
from ._timeline import ALL_TIMES, OPEN_END, visible_at
from ._write import Remembered, remember

__all__ = [
    "Lifecycle", "LifecycleMixin", "Judge", "OpenAIJudge", "JUDGE_PROMPT", "Remembered", "remember", "supersede", "restore",
    "history", "visible_at", "anchors", "infer_slot", "text_digest", "AS_OF", "ALL_TIMES", "OPEN_END",
    "DEFAULT_MERGE_THRESHOLD", "SLOT_FAMILIES", "LifecycleKeyKind",
]

publish(__name__, __all__)
