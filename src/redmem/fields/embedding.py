"""EmbeddingField: a vector per record, kept in Redis, searched by exact cosine in-process.

Where it lives in Redis (``<base>`` = ``<prefix>:<Model>:{<partition>}``, ``<f>`` the field name):

- ``<base>:v:<f>`` hash: record id -> the vector in the field's ``dtype`` (float16 unless told),
  led by a digest of the text (or vector) it came from, so re-saving a record whose text did
  not change does not embed it again (:mod:`~redmem.embeddings.codec`);
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

``Model.query.filter(<partition>).semantic_search(text, limit=10)`` keeps each partition's
vectors as a float32 numpy matrix in the process (:class:`~redmem.embeddings.matrix.VectorMatrix`)
and ranks by exact cosine over the stored vectors, keeping cosine > 0. One pipelined round trip
reads the changes since the cached version (``vector_changes.lua``) together with the hashes of
the cached top-k; a second one loads the records that the changes brought into the top-k, if any.

The cached matrix assumes the server's history only grows. A server that rolled back (restarted
from an older snapshot, or failed over to a lagging replica) breaks that, so the matrix reloads
the partition when the server's n is below the cached version (the rollback is seen before any
new write), or when the epoch changed (the first write after a restart or failover starts a new
one: the rollback may have been followed by more writes than it undid). Both checks ride in the
search's existing round trip; the write pays one ``INFO server`` inside its script.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ..embeddings.base import EmbeddingProvider, as_matrix, embed_in_batches
from ..embeddings.codec import DTYPES, digest, encode_stored, encode_vector, stored_digest
from ..embeddings.matrix import MatrixCache, Ranking, VectorMatrix
from ..model.dbkey import DbKey
from ..model.field import Field
from ..model.persistence import instance_from_stored
from ..model.query import Query, query_method
from ..store.connection import server_errors, settings
from ..store.errors import ConfigurationError, ModelException, QueryArgumentError, QueryException
from ..store.keys import KeySpace
from ..store.scripts import ScriptCall, run_script
from ..store.validation import non_negative_int, positive_int, utf8_text
from .search_protocol import Hits

if TYPE_CHECKING:
    from ..model.base import Model
    from ..model.batch import SaveBatch

__all__ = ["EmbeddingField", "embed_many", "semantic_search", "text_digest", "VECTOR_KIND", "matrices"]

#: Key kind of the per-partition vector keys: ``<base>:v:<field>[:ver|:log]``.
VECTOR_KIND = "v"
#: Changes (vectors) read per ``vector_changes.lua`` call while a matrix catches up.
CHANGES_PER_CALL = 5000
#: The change log keeps the newest max(LOG_KEEP, vectors / LOG_FRACTION) entries: a reader further
#: behind reloads the set, which costs at most LOG_FRACTION vector reads per change it missed.
LOG_KEEP = 128
LOG_FRACTION = 8
#: The process-wide matrices, per client and partition.
matrices = MatrixCache()
_REMOVE = object()


def text_digest(text: str) -> bytes:
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
        provider: an :class:`~redmem.embeddings.base.EmbeddingProvider`; None: the one set with
            ``redmem.configure(embedding_provider=...)``, read when needed.
        dimensions: the vector length, for a field without a provider (assigned vectors only).
        dtype: how vectors are stored in Redis: "float16" (2 bytes a dimension), "float32" (4)
            or "int8" (1, plus 4 for a scale). Search is exact over the vectors as stored.

    Reading the attribute gives the vector this instance computed or was given (a float32
    array), else None. Wrong dimensions raise ValidationError; no provider raises
    ConfigurationError when one is needed.
    """

    stored = False
    python_type = bytes

    def __init__(
        self,
        source: str | None = None,
        provider: Any = None,
        *,
        dimensions: int | None = None,
        dtype: str = "float16",
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(partition_by=partition_by)
        if dtype not in DTYPES:
            raise ModelException(f"dtype must be one of {list(DTYPES)}, not {dtype!r}")
        if provider is not None and not isinstance(provider, EmbeddingProvider):
            raise ModelException(f"provider {provider!r} lacks embed(), dimensions or max_batch_size")
        positive_int("dimensions", dimensions, none=True, error=ModelException)
        self.source = source
        self.dtype = dtype
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
        """This field's provider, else the configured default; ConfigurationError when neither."""
        provider = self._provider or settings().embedding_provider
        if provider is None:
            raise ConfigurationError(
                f"{self.label} has no embedding provider: pass EmbeddingField(provider=...) "
                "or call redmem.configure(embedding_provider=...)"
            )
        return provider

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
        known = self._provider or settings().embedding_provider
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
        if self.source is None:
            if state is not None:
                state.vector = as_matrix(state.vector, self.dimensions, 1, self.label)[0]
            return
        text = self._source_text(instance)
        digest = None if text is None else text_digest(text)
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
            state = _Embedded(None, None if text is None else text_digest(text), text)
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
            if state is None or state.vector is None or state.digest != text_digest(text):
                pending.setdefault(text, []).append(instance)
        texts = list(pending)
        for text, vector in zip(texts, self.embed_texts(texts)):
            for instance in pending[text]:
                instance.__dict__[self._slot] = _Embedded(vector, text_digest(text))
        return len(texts)

    # -- searching -----------------------------------------------------------------------------
    def searcher(self, space: KeySpace, text: Any, limit: int = 10) -> VectorSearch:
        """The search of partition ``space`` for ``text`` (embedded as a query, or a vector already),
        to share a round trip with other searches: (record id, cosine) pairs, best first."""
        limit = non_negative_int(f"{self.label}: limit", limit, error=QueryArgumentError)
        vector = _query_vector(self, text) if limit > 0 else None
        return VectorSearch(self.model._meta.client, self.keys(space), vector, _stored_dimensions(self, text, vector),
                            limit)


def embedding_fields(model: type[Model]) -> list[EmbeddingField]:
    """The model's embedding fields, in declaration order."""
    return [f for f in model._meta.fields.values() if isinstance(f, EmbeddingField)]


def embed_many(instances: Iterable[Any]) -> int:
    """Embed, in batches, every embedding field of every instance that needs it; returns texts embedded."""
    by_model: dict[type, list[Any]] = {}
    for instance in instances:
        by_model.setdefault(type(instance), []).append(instance)
    return sum(field.embed_many(group) for model, group in by_model.items() for field in embedding_fields(model))


# -- search ------------------------------------------------------------------------------------
def _search_field(model: type[Model], name: str | None) -> EmbeddingField:
    fields = [f for f in embedding_fields(model) if name is None or f.name == name]
    if not fields:
        raise QueryException(f"{model.__name__} has no EmbeddingField" + (f" {name!r}" if name else ""))
    if len(fields) > 1:
        raise QueryException(f"{model.__name__} has EmbeddingFields {[f.name for f in fields]}: pass field=")
    return fields[0]


def _query_vector(field: EmbeddingField, text: Any) -> np.ndarray | None:
    if isinstance(text, str):
        return field.embed_texts([text], "query")[0] if text.strip() else None
    vector: np.ndarray = as_matrix(text, field.known_dimensions(), 1, "query vector")[0]
    return vector


def _stored_dimensions(field: EmbeddingField, text: Any, vector: np.ndarray | None) -> int | None:
    """The dimensions the partition's vectors have, when known: a text's vector came from the
    provider, so its length is theirs; a given vector's is only checked against what the field states."""
    if vector is None:
        return None
    return len(vector) if isinstance(text, str) else field.known_dimensions()


class VectorSearch:
    """One semantic search of a partition, a :class:`~redmem.fields.search_protocol.LocalSearch`
    of (record id, cosine) pairs, best first.

    ``keys`` are the partition's vectors hash, version hash and change log; ``vector`` the
    query (None: nothing to search for); ``dimensions`` those of the stored vectors when known.
    :meth:`calls` locks the partition's matrix and reads its version; :meth:`work` ranks the
    matrix as of that version while the server answers; :meth:`finish` catches up with the
    changes made elsewhere (more round trips only while a reload pages in) and releases the
    matrix, as :meth:`abandon` does when the replies never come.
    """

    def __init__(self, client: Any, keys: list[str], vector: np.ndarray | None, dimensions: int | None,
                 limit: int) -> None:
        self.client, self.vector, self.dimensions, self.limit = client, vector, dimensions, limit
        self.change_keys = [keys[1], keys[2], keys[0]]
        self.matrix = matrices.get(client, keys[0])
        self.ranking: Ranking | None = None
        self._locked = False

    @property
    def empty(self) -> bool:
        """True when there is nothing to search for (blank text or limit 0)."""
        return self.vector is None

    def calls(self) -> list[ScriptCall]:
        """Lock the matrix; the one call reads the changes since its version."""
        self.matrix.lock.acquire()
        self._locked = True
        return [ScriptCall("vector_changes", self.change_keys, _changes_args(self.matrix))]

    def work(self) -> Ranking:
        """Rank the locked matrix as it was when :meth:`calls` read its version (once)."""
        if self.ranking is None:
            self.ranking = self.matrix.rank(cast(np.ndarray, self.vector), self.limit)  # not empty: a vector
        return self.ranking

    def finish(self, replies: list[Any]) -> Hits:
        """The hits once the matrix has caught up with the changes in ``replies``; the matrix is released."""
        try:
            self.work()
            with server_errors(self.client):
                return self._catch_up(replies[0])
        finally:
            self._release()

    def abandon(self) -> None:
        """Release the matrix when the pipeline never ran."""
        self._release()
        self.ranking = None

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            self.matrix.lock.release()

    def _catch_up(self, reply: list[Any]) -> Hits:
        """The hits once the matrix has caught up with the partition's changes."""
        matrix = self.matrix
        generation, changed = matrix.generation, set[str]()
        current = _apply_changes(matrix, reply, changed, self.dimensions)
        while not current:
            reply = run_script("vector_changes", self.change_keys, _changes_args(matrix), self.client)
            current = _apply_changes(matrix, reply, changed, self.dimensions)
        return _current_hits(matrix, self.work(), generation, changed)


def search_records(query: Query, space: KeySpace, search: VectorSearch) -> list[Any]:
    """The records of a (not empty) search's hits, best first, each with ``_vector_score``.

    One pipeline sends the search's call with a read of the cached top-k's hashes; the hits that
    changes elsewhere brought in are read in one more. Read effects follow unless the query was
    made with ``no_track()``.
    """
    client = search.client
    try:
        calls = search.calls()
        cached = [record_id for record_id, _ in search.work().hits]
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for call in calls:
                call.queue(pipe)
            for record_id in cached:
                pipe.hgetall(space.record(record_id))
            replies = pipe.execute()
    except BaseException:
        search.abandon()
        raise
    hits = search.finish(replies[: len(calls)])
    fetched = dict(zip(cached, replies[len(calls):]))
    missing = [record_id for record_id, _ in hits if record_id not in fetched]
    if missing:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for record_id in missing:
                pipe.hgetall(space.record(record_id))
            fetched.update(zip(missing, pipe.execute()))
    records = _hydrate(query.model, space, hits, fetched)
    if query.tracking and records:
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            query.model.queue_read_effects(pipe, [record._saved_key for record in records])
            pipe.execute()
    return records


def _apply_changes(matrix: VectorMatrix, reply: list[Any], changed: set[str], dimensions: int | None) -> bool:
    """Apply one ``vector_changes.lua`` reply, adding the ids it changed to ``changed``; True
    when the matrix is now at the partition's version.

    A reload starts the matrix afresh; once its last page is in, the matrix is at the version
    of its first page, and the changes logged since then are read next.
    """
    epoch, version, mode, position = reply[0], int(reply[1]), reply[2], reply[3]
    pairs = reply[4:]
    ids = [pairs[i].decode() for i in range(0, len(pairs), 2)]
    if mode == b"reload":
        matrix.reset(epoch)
        matrix.loading = (version, b"0")
    matrix.apply(zip(ids, pairs[1::2]), dimensions)
    changed.update(ids)
    if mode == b"log":
        matrix.version = int(position)
    elif position != b"0":
        matrix.loading = (cast(tuple[int, bytes], matrix.loading)[0], position)  # a load is under way
        return False
    else:
        matrix.version, matrix.loading = cast(tuple[int, bytes], matrix.loading)[0], None
    return matrix.version == version


def _changes_args(matrix: VectorMatrix) -> list[Any]:
    cursor = matrix.loading[1] if matrix.loading is not None else ""
    return [matrix.epoch or "", matrix.version, CHANGES_PER_CALL, cursor]


def _current_hits(matrix: VectorMatrix, ranking: Ranking, generation: int, changed: set[str]) -> Hits:
    """The ranking's hits, brought up to date with the changes just applied."""
    if matrix.generation != generation:
        return matrix.search(ranking.query, ranking.limit)
    return matrix.rerank(ranking, changed) if changed else ranking.hits


def _hydrate(model: type[Model], space: KeySpace, hits: Hits, fetched: dict[str, Any]) -> list[Any]:
    records = []
    for record_id, score in hits:
        raw = fetched.get(record_id)
        if raw:
            record = instance_from_stored(model, DbKey(space, record_id), raw)
            record._vector_score = score
            records.append(record)
    return records


@query_method
def semantic_search(query: Query, text: Any, limit: int = 10, field: str | None = None) -> list[Any]:
    """The ``limit`` records of the query's partition whose vectors are nearest ``text``.

    ``text`` is embedded with the field's provider (``input_type="query"``), or is a vector
    already. Exact cosine over the partition's cached matrix, cosine > 0 only, best first, equal
    scores by record id; each record gets ``_vector_score``. The query may filter on the
    partition only. Round trips: 1, plus 1 when records changed elsewhere enter the top
    ``limit`` (and 1 per further 5,000 vectors while a matrix catches up or reloads).
    """
    model = query.model
    limit = non_negative_int("semantic_search: limit", limit, error=QueryArgumentError)
    embedding = _search_field(model, field)
    if any(name not in model._meta.partition_fields for name, _, _ in query.conditions):
        raise QueryException("semantic_search filters on the partition only")
    space = query.partition()
    search = embedding.searcher(space, text, limit)
    return [] if search.empty else search_records(query, space, search)
