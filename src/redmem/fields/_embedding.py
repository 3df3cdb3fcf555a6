"""EmbeddingField: a vector per record, kept in Redis, searched by exact cosine in-process.

Where it lives in Redis (``<base>`` = ``<prefix>:<Model>:{<partition>}``, ``<f>`` the field name):

- ``<base>:v:<f>`` hash: record id -> the vector in the field's ``dtype`` (float16 unless told),
  led by a digest of the text (or vector) it came from, so re-saving a record whose text did
  not change does not embed it again (:mod:`~redmem.embeddings._codec`);
- ``<base>:v:<f>:ver`` hash ``{epoch, n, floor, run}``: n counts the partition's vector changes,
  epoch names the current life of the vector set (it starts again when the set is emptied, and
  when a write lands on another server process than the last one, ``run`` being that process's
  ``run_id``), floor is the newest change dropped from the log;
- ``<base>:v:<f>:log`` sorted set: record id -> the n of its last change (removals included),
  the newest max(128, vectors / 8) only: a reader further behind reloads the whole set.

Saving embeds the source text before the record's MULTI/EXEC is queued (in ``before_save``, or
under the record's WATCH in ``prepare`` when only the stored digest can tell whether the text
changed), so a provider failure writes nothing. The vector and its version bump are one Lua
call (``vector_write.lua``) inside the record's batch.

``Model.query.filter(<partition>).semantic_search(text, limit=10)`` finds the records whose
vectors are nearest a query: :meth:`EmbeddingField.searcher` embeds the query and
:mod:`~redmem.fields._embedding_search` (the search side) ranks the partition's vectors by exact
cosine in-process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextvars import copy_context
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ..embeddings import _hnsw_prescan as hnsw_prescan
from ..embeddings._base import EmbeddingProvider, as_matrix, embed_in_batches
from ..embeddings._codec import DTYPES, digest, encode_stored, encode_vector, stored_digest
from ..embeddings._matrix import PRESCANS
from ..model._field import Field
from ..model._filters import Where, compile_where
from ..model._hits import HitList
from ..model._model_class import ModelClass
from ..model._query import Query
from ..model.query_methods import QueryMethod
from ..store._aio import async_variant
from ..store._connection import settings
from ..store._errors import ConfigurationError, ModelException, QueryArgumentError, QueryException
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import queue_script
from ..store._validation import non_negative_int, positive_int, utf8_text
from ._embedding_search import VectorSearch, matrices, search_records
from .search_protocol import run_search

if TYPE_CHECKING:
    from ..model._batch import SaveBatch

__all__ = [
    "EmbeddingField", "embed_many", "semantic_search", "embedded_text_digest", "VECTOR_KIND", "matrices",
    "written_vector_search",
]

#: Key kind of the per-partition vector keys: ``<base>:v:<field>[:ver|:log]``.
VECTOR_KIND = KeyKind.VECTOR
#: The change log keeps the newest max(LOG_KEEP, vectors / LOG_FRACTION) entries: a reader further
#: behind reloads the set, which costs at most LOG_FRACTION vector reads per change it missed.
LOG_KEEP = 128
LOG_FRACTION = 8
_REMOVE = object()


def embedded_text_digest(text: str) -> bytes:
    """BLAKE2b-64 of ``t:`` + the UTF-8 text: what the stored vector was embedded from."""
    return digest(b"t:", text.encode("utf-8"))


def _vector_digest(vector: np.ndarray) -> bytes:
    return digest(b"v:", encode_vector(vector))


@dataclass
class _Embedded:
    """An instance's vector for this field: ``vector`` embedded from (or given for) ``digest``."""

    vector: np.ndarray | None
    digest: bytes | None
    text: str | None = None  # set while the vector is still to be computed
    explicit: bool = False


class EmbeddingField(Field[Any]):
    """A vector per record: embedded from the ``source`` field's text, or assigned directly.

    Args:
        source: name of the text field to embed on save; None: vectors are assigned
            (``record.embedding = [...]``) and a record saved without one keeps its stored vector.
        provider: an :class:`~redmem.embeddings._base.EmbeddingProvider`; None: the one set with
            ``redmem.configure(embedding_provider=...)``, read when needed.
        dimensions: the vector length, for a field without a provider (assigned vectors only).
        dtype: how vectors are stored in Redis: "float16" (2 bytes a dimension), "float32" (4)
            or "int8" (1, plus 4 for a scale). Search is exact over the vectors as stored.
        prescan: how a partition of 8,192 vectors or more is pre-scanned before the float32
            scoring of its shortlist: "exact" (int8 codes with error bounds: the exact top-k) or
            "binary" (opt-in, approximate: the 20 x k rows nearest in sign bits are scored; a
            true neighbour can be missed, the scores are exact; for dense embeddings of a model,
            not sparse vectors) or "hnsw" (opt-in, approximate: the 128 rows (or 2 x k) an HNSW
            graph finds are scored; needs ``redmem[hnsw]``; the graph is built in the background and
            the exact pre-scan serves until it is ready; see docs/primitives/embeddings.md).
            Filtered searches stay exact.

    Reading the attribute gives the vector this instance computed or was given (a float32
    array), else None. Wrong dimensions raise ValidationError; no provider raises
    ConfigurationError when one is needed.
    """

    stored = False
    python_type = bytes

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.semantic_search(text)``: the records whose vectors are nearest a text;
        ``query.prepare_vectors()``: load the partition's vectors (and build its HNSW graph) ahead of searches."""
        return {"semantic_search": semantic_search, "prepare_vectors": prepare_vectors}

    def __init__(
        self,
        source: str | None = None,
        provider: Any = None,
        *,
        dimensions: int | None = None,
        dtype: str = "float16",
        partition_by: str | tuple[str, ...] | None = None,
        prescan: str = "exact",
    ) -> None:
        super().__init__(partition_by=partition_by)
        if dtype not in DTYPES:
            raise ModelException(f"dtype must be one of {list(DTYPES)}, not {dtype!r}")
        if prescan not in PRESCANS:
            raise ModelException(f"prescan must be one of {list(PRESCANS)}, not {prescan!r}")
        if prescan == "hnsw" and not hnsw_prescan.usearch_available():
            raise ModelException(hnsw_prescan.MISSING)
        if provider is not None and not isinstance(provider, EmbeddingProvider):
            raise ModelException(f"provider {provider!r} lacks embed(), dimensions or max_batch_size")
        positive_int("dimensions", dimensions, none=True, error=ModelException)
        self.source = source
        self.dtype = dtype
        self.prescan = prescan
        self._provider = provider
        self._dimensions = dimensions

    # -- the attribute -------------------------------------------------------------------------
    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self
        state = self._state(instance)
        return None if state is None else state.vector

    def __set__(self, instance: Any, value: Any) -> None:
        if value is None:
            instance.__dict__.pop(self._slot, None)
            return
        vector = as_matrix(value, self._dimensions, 1, self.label)[0]
        instance.__dict__[self._slot] = _Embedded(vector, _vector_digest(vector), explicit=True)

    @property
    def _slot(self) -> str:
        return f"_embedding_{self.name}"

    def _state(self, instance: Any) -> _Embedded | None:
        state: _Embedded | None = instance.__dict__.get(self._slot)
        return state

    # -- provider and dimensions ---------------------------------------------------------------
    @property
    def provider(self) -> Any:
        """This field's provider, else its model's default (Meta or configure); ConfigurationError when none."""
        provider = self._default_provider()
        if provider is None:
            raise ConfigurationError(
                f"{self.label} has no embedding provider: pass EmbeddingField(provider=...) "
                "or call redmem.configure(embedding_provider=...)"
            )
        return provider

    def _default_provider(self) -> Any:
        """The field's own provider, else its model's default (its Meta's, else the configured one)."""
        if self._provider:
            return self._provider
        return self.model._meta.embedding_provider if self.model is not None else settings().embedding_provider

    @property
    def dimensions(self) -> int:
        """The length every vector of this field must have."""
        if self._dimensions is not None:
            return self._dimensions
        dimensions: int = self.provider.dimensions
        return dimensions

    def embed_texts(self, texts: Sequence[str], input_type: Literal["document", "query"] = "document") -> np.ndarray:
        """Vectors of ``texts`` from the provider, in batches of its ``max_batch_size``."""
        return embed_in_batches(self.provider, list(texts), input_type)

    # -- keys ----------------------------------------------------------------------------------
    def keys(self, keyspace: KeySpace) -> list[str]:
        """The vectors hash, version hash and change log of a partition."""
        base = keyspace.key(VECTOR_KIND, self.name)
        return [base, f"{base}:ver", f"{base}:log"]

    def known_dimensions(self) -> int | None:
        """The dimensions the field or its provider states (None when neither can say)."""
        known = self._default_provider()
        return self._dimensions or (known.dimensions if known is not None else None)

    # -- taking part in saves ------------------------------------------------------------------
    def _source_text(self, instance: Any) -> str | None:
        if self.source not in instance._meta.fields:
            raise ModelException(f"{self.label}: source {self.source!r} is not a field of the model")
        text = getattr(instance, cast(str, self.source))  # called for fields with a source
        if not isinstance(text, str) or not text.strip():
            return None
        return utf8_text(f"{type(instance).__name__}.{self.source}", text)

    def before_save(self, instance: Any, creating: bool) -> None:
        """Check an assigned vector, or embed the source text when it is known to need it."""
        state = self._state(instance)
        if self.source is None:  # assigned vectors: checked against the dimensions when they are known
            if state is not None:
                state.vector = as_matrix(state.vector, self.known_dimensions(), 1, self.label)[0]
            return
        text = self._source_text(instance)
        digest = None if text is None else embedded_text_digest(text)
        if text is None:
            state = _Embedded(None, None)
        elif state is not None and (state.explicit or state.digest == digest):
            vector = state.vector
            if vector is not None and (state.explicit or vector.shape != (self.dimensions,)):
                vector = as_matrix(vector, self.dimensions, 1, self.label)[0]  # checked when it was embedded
            state = _Embedded(vector, digest, None if vector is not None else text)
        elif creating or state is not None:  # a new record, or the text changed since it was embedded
            state = _Embedded(self.embed_texts([text])[0], digest)
        else:  # a loaded record: the stored digest tells whether the text changed (see prepare)
            state = _Embedded(None, digest, text)
        instance.__dict__[self._slot] = state

    def before_save_many(self, instances: list[Any], creating: bool) -> None:
        """Embed every instance's text first, in provider-sized batches (:meth:`embed_many`), even a
        stored record's unchanged one: a bulk save computes every vector before its first write."""
        self.embed_many(instances)
        super().before_save_many(instances, creating)

    def prepare(self, reader: Any, batch: SaveBatch) -> Any:
        """What to write: a (vector, digest) pair, the removal marker, or None (nothing)."""
        state = self._state(batch.instance)
        if state is None and self.source is not None:  # not through save(): a reindex of a stored record
            text = self._source_text(batch.instance)
            state = _Embedded(None, None if text is None else embedded_text_digest(text), text)
            batch.instance.__dict__[self._slot] = state
        if state is None:
            return None
        if state.digest is None:
            return _REMOVE if batch.old is not None else None
        if batch.old is not None:
            stored = reader.hget(self.keys(batch.keyspace)[0], batch.record_id)
            if stored is not None and stored_digest(stored) == state.digest:
                return None
        if state.vector is None:
            state.vector, state.text = self.embed_texts([cast(str, state.text)])[0], None  # text until embedded
        return state.vector, state.digest

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        self._write(batch, self._stored_value(batch))

    def on_save_many(self, batches: list[SaveBatch]) -> None:
        """Write the vectors of a chunk of records (of one partition) in one script call."""
        self._write(batches[0], [x for batch in batches for x in self._stored_value(batch)])

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        self._write(batch, [batch.record_id, b""])

    def _stored_value(self, batch: SaveBatch) -> list[Any]:
        """``[record id, stored vector]`` to write (``b""``: remove it), or ``[]`` for nothing."""
        action = batch.prepared.get(self.name)
        if action is None:
            return []
        if action is _REMOVE:
            return [batch.record_id, b""]
        vector, origin = action
        return [batch.record_id, encode_stored(vector, self.dtype, origin)]

    def _write(self, batch: SaveBatch, changes: list[Any]) -> None:
        """Queue ``vector_write.lua`` for ``changes`` (record id, stored vector or ``b""``, ..), if any."""
        if changes:
            batch.script("vector_write", self.keys(batch.keyspace), [LOG_KEEP, LOG_FRACTION, *changes])

    def queue_vectors(self, pipe: Any, keyspace: KeySpace, vectors: Mapping[str, np.ndarray]) -> None:
        """Queue new vectors of stored records of ``keyspace`` (record id -> vector) on ``pipe``,
        as a save of each record with that vector assigned would: one ``vector_write.lua`` call."""
        changes = [x for record_id, vector in vectors.items()
                   for x in (record_id, encode_stored(vector, self.dtype, _vector_digest(vector)))]
        if changes:
            queue_script(pipe, "vector_write", self.keys(keyspace), [LOG_KEEP, LOG_FRACTION, *changes])

    # -- bulk ----------------------------------------------------------------------------------
    def embed_many(self, instances: Iterable[Any]) -> int:
        """Embed the source text of every instance that needs it, in provider-sized batches.

        The following ``save()`` of each instance then calls no provider. Returns how many texts
        were embedded.
        """
        if self.source is None:
            return 0
        pending: dict[str, list[Any]] = {}
        for instance in instances:
            text = self._source_text(instance)
            state = self._state(instance)
            if text is None or (state is not None and state.explicit):
                continue
            if state is None or state.vector is None or state.digest != embedded_text_digest(text):
                pending.setdefault(text, []).append(instance)
        texts = list(pending)
        for text, vector in zip(texts, self.embed_texts(texts)):
            for instance in pending[text]:
                instance.__dict__[self._slot] = _Embedded(vector, embedded_text_digest(text))
        return len(texts)

    # -- searching -----------------------------------------------------------------------------
    def searcher(self, space: KeySpace, text: Any, limit: int = 10, where: Where | None = None) -> VectorSearch:
        """The search of partition ``space`` for ``text`` (embedded as a query by the search's work,
        overlapping the round trip it shares, or a vector already, checked now), to share a round
        trip with other searches: (record id, cosine) pairs, best first; with
        ``where``, the exact top ``limit`` of the records that pass it (their ids are listed in
        the same request, then only their rows are scored)."""
        limit = non_negative_int(f"{self.label}: limit", limit, error=QueryArgumentError)
        among = None if where is None else where.ids_call(space)
        client, keys = self.model._meta.client, self.keys(space)
        if isinstance(text, str):  # embedded by the search's work, in the caller's context, overlapping its round trip
            embed = partial(copy_context().run, _query_vector, self, text) if limit > 0 and text.strip() else None
            return VectorSearch(client, keys, None, None, limit, among, self.prescan, embed)
        vector = as_matrix(text, self.known_dimensions(), 1, "query vector")[0] if limit > 0 else None
        return VectorSearch(client, keys, vector, None if vector is None else self.known_dimensions(), limit, among,
                            self.prescan)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aembed_many = async_variant(embed_many)


def embedding_fields(model: ModelClass) -> list[EmbeddingField]:
    """The model's embedding fields, in declaration order."""
    return list(model._meta.fields_of(EmbeddingField))


def embed_many(instances: Iterable[Any]) -> int:
    """Embed, in batches, every embedding field of every instance that needs it; returns texts embedded."""
    by_model: dict[type, list[Any]] = {}
    for instance in instances:
        by_model.setdefault(type(instance), []).append(instance)
    return sum(field.embed_many(group) for model, group in by_model.items() for field in embedding_fields(model))


# -- search ------------------------------------------------------------------------------------
def _search_field(model: ModelClass, name: str | None) -> EmbeddingField:
    fields = [f for f in embedding_fields(model) if name is None or f.name == name]
    if not fields:
        raise QueryException(f"{model.__name__} has no EmbeddingField" + (f" {name!r}" if name else ""))
    if len(fields) > 1:
        raise QueryException(f"{model.__name__} has EmbeddingFields {[f.name for f in fields]}: pass field=")
    return fields[0]


def _partition_field(query: Query, name: str | None, method: str) -> EmbeddingField:
    """The embedding field a query method of ``query`` uses; QueryException when the query
    filters on more than its partition."""
    model = query.model
    if any(field not in model._meta.partition_fields for field, _, _ in query.conditions):
        raise QueryException(f"{method} filters on the partition only")
    return _search_field(model, name)


def written_vector_search(field: EmbeddingField, space: KeySpace, vector: np.ndarray, limit: int) -> VectorSearch:
    """``field.searcher(space, vector, limit)`` for the vector of a record being written, which
    :meth:`~EmbeddingField.before_save` checked as the searcher checks a given vector (so it is
    not checked again): the records nearest a new one, for the fact lifecycle's detection."""
    return VectorSearch(field.model._meta.client, field.keys(space), vector, field.known_dimensions(), limit,
                        prescan=field.prescan)


def _query_vector(field: EmbeddingField, text: str) -> np.ndarray:
    """The query embedding of ``text``; its length, the provider's, is the stored vectors' dimensions
    (a given vector's is only checked against what the field states)."""
    vector: np.ndarray = field.embed_texts([text], "query")[0]
    return vector


def semantic_search(query: Query, text: Any, limit: int = 10, field: str | None = None) -> HitList[Any]:
    """The ``limit`` records of the query's partition whose vectors are nearest ``text``.

    ``text`` is embedded with the field's provider (``input_type="query"``), or is a vector
    already. Exact cosine over the partition's cached matrix, cosine > 0 only, best first, equal
    scores by record id, as a :class:`~redmem.model._hits.HitList` (signal ``vector``); each record
    also carries its cosine as ``_vector_score``. The query may filter on the partition only.
    Round trips: 1, plus 1 when records changed elsewhere enter the top
    ``limit`` (and 1 per further 5,000 vectors while a matrix catches up or reloads).
    """
    limit = non_negative_int("semantic_search: limit", limit, error=QueryArgumentError)
    embedding = _partition_field(query, field, "semantic_search")
    space = query.partition()
    search = embedding.searcher(space, text, limit, compile_where(query.model, None))  # a lifecycle model: current only
    return HitList() if search.empty else search_records(query, space, search)


def prepare_vectors(query: Query, timeout: float | None = None, field: str | None = None) -> bool:
    """Bring this process's copy of the partition's vectors up to date (loading it on first use)
    and, for a field with ``prescan="hnsw"``, build its graph, waiting up to ``timeout`` seconds;
    whether the graph is ready (always True for the other pre-scans).

    For a process that serves searches to call once at start, so its first searches neither load
    the vectors nor fall back to the exact pre-scan while the graph is built. Round trips: 1 per
    ~5,000 vectors loaded, then none while the graph is built.
    """
    embedding = _partition_field(query, field, "prepare_vectors")
    search = embedding.searcher(query.partition(), None, 0)
    run_search(search.client, search)
    return embedding.prescan != "hnsw" or search.matrix.wait_for_graph(timeout)
