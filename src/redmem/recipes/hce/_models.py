"""The HCE pipeline's records: interactions (the leaves of the semantic tree, nodes of the entity
graph) and topics, partitioned by session, so one session's keys share one hash tag.

| model | field | primitive | role |
|---|---|---|---|
| ``HCEInteraction`` | ``session_id`` | KeyField, the partition | the session (user) the interaction belongs to |
| | ``interaction_id`` | KeyField | :func:`interaction_id`: sorts newest first |
| | ``user``, ``assistant`` | StringField | the turn pair |
| | ``text`` | StringField | :func:`interaction_text`, what the keyword index reads |
| | ``text_bm25`` | BM25Field | the keyword index of ``text`` (the shared retrieval's keyword list) |
| | ``topic_id`` | StringField | its parent in the semantic tree |
| | ``timestamp`` | FloatField | when it was stored (epoch seconds) |
| | ``tokens`` | DictField | the exact token count of `` <text>\n`` by encoding name, counted when stored |
| | ``entities`` | ListField | the entity keys it mentions |
| | ``embedding`` | EmbeddingField | the vector of :func:`interaction_text` (assigned by the pipeline) |
| | ``graph`` | CoOccurrenceField | the entity graph: interactions and entities |
| | ``valid_from``, ``valid_to``, ... | LifecycleMixin | its validity (``valid_from`` = ``timestamp``): a read skips it once superseded |
| | ``entities_seen`` | ExistenceFilter | every entity key ever mentioned (:func:`entity_term`) |
| ``HCETopic`` | ``session_id``, ``topic_id`` | KeyField | the topic node of the tree |
| | ``label`` | StringField | the first words of the interaction that opened it |
| | ``embedding`` | EmbeddingField | that interaction's vector (or its members' mean direction) |
| ``HCEGroup`` | ``session_id``, ``group_id`` | KeyField | a parent topic of a nested tree (``SemanticTree(nest_threshold=...)``) |
| | ``label`` | StringField | the label of the topic that opened it |
| | ``embedding`` | EmbeddingField | the mean direction of its topics' vectors when they joined |
"""

from __future__ import annotations

import hashlib
import secrets
import time

from ...fields._bloom import ExistenceFilter
from ...fields._bm25 import BM25Field
from ...fields._cooccurrence import CoOccurrenceField
from ...fields._embedding import EmbeddingField
from ...lifecycle import Lifecycle, LifecycleMixin
from ...model._base import Model
from ...model._batch import SaveBatch
from ...model._fields import DictField, FloatField, ListField, StringField
from ...model._indexed import KeyField
from ...model._persistence import queue_fields_save_many

__all__ = ["HCEInteraction", "HCETopic", "HCEGroup", "interaction_id", "interaction_text", "entity_term", "MAX_EDGES"]

#: The most edges a graph node keeps (a hub entity keeps its newest mentions).
MAX_EDGES = 500
#: Microseconds since the epoch are subtracted from this so that ids sort newest first.
_ID_CEILING = 10**16


def interaction_id(now: float | None = None) -> str:
    """A fresh id that sorts before every older one: ``(10^16 - microseconds)`` in 16 digits, then
    6 random hex digits (two processes in the same microsecond do not collide).

    Graph ties are broken by node id, so a hub entity's pruning and propagation fan-out keep its
    most recent mentions.
    """
    micros = int((time.time() if now is None else now) * 1_000_000)
    return f"{_ID_CEILING - micros:016d}{secrets.token_hex(3)}"


def interaction_text(user: str, assistant: str) -> str:
    """The text an interaction is embedded and shown as."""
    return f"user: {user}\nassistant: {assistant}"


def entity_term(key: str) -> str:
    """The existence-filter term of an entity key: ``e_`` + 16 hex digits of its BLAKE2b digest,
    an identifier the analyser keeps whole (never stemmed, split or dropped as a stop word)."""
    return "e_" + hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()


def _entity_terms(interaction: HCEInteraction) -> list[str]:
    return [entity_term(key) for key in interaction.entities or []]


class HCEInteraction(LifecycleMixin, Model):
    """One user/assistant turn pair of a session (see the module docs for the fields).

    A lifecycle model whose writes neither merge nor supersede by themselves: an interaction is
    stored as said, valid from when it was stored; :func:`redmem.lifecycle.supersede` closes
    one, and every HCE read then skips it unless asked ``as_of`` a time it was valid.
    """

    lifecycle = Lifecycle(text_field="text", merge=False, supersede=False)

    session_id = KeyField(partition_by="session_id")
    interaction_id = KeyField()
    user = StringField(null=False)
    assistant = StringField(null=False)
    text = StringField(default="")
    text_bm25 = BM25Field(source="text")
    topic_id = StringField(null=False)
    timestamp = FloatField(null=False)
    tokens = DictField(default=dict)
    entities = ListField(default=list)
    embedding = EmbeddingField()
    graph = CoOccurrenceField(max_edges=MAX_EDGES)
    entities_seen = ExistenceFilter(fingerprint_fn=_entity_terms, error_rate=0.001)

    @property
    def content(self) -> str:
        return interaction_text(self.user, self.assistant)

    @classmethod
    def queue_save_many(cls, batches: list[SaveBatch]) -> None:
        """New interactions' field writes merged per field (the keyword index: one script per
        chunk), as a plain model's: no write of this lifecycle detects anything under WATCH, so
        the lifecycle version needs no bump."""
        queue_fields_save_many(batches)


class HCETopic(Model):
    """A topic node of a session's semantic tree: its label and the vector interactions join by."""

    session_id = KeyField(partition_by="session_id")
    topic_id = KeyField()
    label = StringField(null=False)
    embedding = EmbeddingField()


class HCEGroup(Model):
    """A parent topic of a nested semantic tree: topics join it as interactions join a topic."""

    session_id = KeyField(partition_by="session_id")
    group_id = KeyField()
    label = StringField(null=False)
    embedding = EmbeddingField()
