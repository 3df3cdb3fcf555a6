"""BM25Field: a per-partition inverted index over one text field, and ``keyword_search``.

Scores are Okapi BM25 with the non-negative idf (formulas in :mod:`redmem.fields._bm25_math`,
defaults k1 = 1.2, b = 0.75, the usual ones); ties go by record id ascending.

Every record of the partition is a document (a record whose text is None or has no terms has
length 0). The index lives in Redis beside the records and is rewritten inside each record's
save/delete batch by one Lua call (``bm25_write.lua``, one per chunk for ``save_many``), so N,
the total length and every df stay exact. Postings are impact-ordered: one sorted set per term,
member = the record's docno (a short number given when it is first indexed), score = ``tf_norm``
at the term list's reference average length, scaled by
:func:`~redmem.fields._bm25_math.impact_unit` and rounded up to an integer (compact and fast in
Redis, exact ``tf`` on the way back). Each write also logs the changed records under a version
counter, so a search (``cache_postings``, the default) is one ``bm25_sync.lua`` call that
brings the process's copy of the query terms' lists up to date, then an exact ranking of every
posting of those lists in-process (:mod:`redmem.fields._bm25_postings`). With
``cache_postings=False`` (or ``exhaustive``) the search ranks inside Redis instead, one Lua call
(``bm25_search.lua``): Fagin's threshold algorithm walks the lists best-first and stops once the
exact bound of :func:`~redmem.fields._bm25_math.impact_bound` shows that no unread posting can
reach the top ``limit`` -- whatever avgdl has drifted to since the postings were written. Once
the top is full the walk reads the list whose next page lowers its bound most per posting (the
order of reads never changes the answer) and closes a list at the least impact that could still
bring an unseen record into the top (MaxScore's cut inside an impact-ordered list: an unseen
record below it scores under the ``limit``-th, one not in it gets nothing from it). A
newly seen record is scored exactly only if it can still reach the top: its upper bound (the
impact bounds of the lists looked up so far, best list first, plus the current bound of the
others) is checked against the ``limit``-th score after each lookup, MaxScore-style. Either way
one pipelined round trip then loads the records.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..model._field import Field
from ..model._filters import Where, compile_where
from ..model._hits import HitList
from ..model._query import Query
from ..model.query_methods import QueryMethod
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, QueryArgumentError, ValidationError
from ..store._keys import KeyKind, KeySpace, escape
from ..store._scripts import ScriptCall
from ..store._validation import is_finite_number, non_negative_int, positive_int
from ..text._analyzer import Analyzer, default_analyzer
from ._bm25_math import impact_unit
from ._bm25_postings import SyncReply, copies
from ._search import hydrate, partition_of, pick_field
from .search_protocol import run_search

if TYPE_CHECKING:
    from ..model._batch import SaveBatch

__all__ = ["BM25Field", "BM25Keys", "BM25Search", "CachedBM25Search", "SearchResult", "keyword_search"]

#: A list is re-scored at the current avgdl when it has doubled since its last check and avgdl
#: moved by more than this fraction (amortised O(1) extra work per posting written).
REBASE_DRIFT = 0.05
#: Postings read by the first step on a list; each further step on it reads twice as many.
FIRST_PAGE = 16
#: Relative slack of the stopping test, far above the rounding error of the bound.
STOP_SLACK = 1e-9
#: Compact JSON of entries (one encoder: ``json.dumps`` with options builds one per call).
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
#: The change log keeps the newest max(LOG_KEEP, records / LOG_FRACTION) entries: a reader further
#: behind reloads the lists it asks for.
LOG_KEEP = 1024
LOG_FRACTION = 64
#: Sync attempts of one in-process search before it asks the server to rank instead (only
#: concurrent searches of one copy in several threads, or a writer that does not log, need more than one).
SYNC_ATTEMPTS = 3
#: Version of the stored layout, part of the index keys: 2 = docno members, integer impacts.
STORAGE_FORMAT = 2


@dataclass(frozen=True)
class BM25Keys:
    """The keys of one BM25 index in one partition (all ``<base>:b:<field>:<version>:...``)."""

    lengths: str  # hash docno -> "<document length> <record id>"
    entries: str  # hash record id -> JSON [docno, dl, term, tf, term, tf, ..]
    totals: str  # hash "total" -> sum of document lengths, "next" -> the last docno given
    references: str  # hash term -> "<reference avgdl> <list size at the last check> <list size>"
    postings: str  # prefix of the per-term zsets: ``<postings>:<escaped term>``
    version: str  # hash {epoch, n, floor, run} of the change log
    log: str  # zset "<docno>[ <JSON list of the terms of its previous entry>]" -> version n of the change

    def posting(self, term: str) -> str:
        return f"{self.postings}:{_escaped(term)}"


@dataclass(frozen=True)
class SearchResult:
    """What one search returned: (record id, score) best first, and what it cost inside Redis."""

    ranked: list[tuple[str, float]]
    mode: str  # "cached" (in-process copy), "bounded" (threshold algorithm in Redis), "exhaustive" or
    # "listed" (a filter few records pass: those records scored from their entries)
    postings_read: int  # postings read inside Redis (cached: the lists sent to the copy)
    records_scored: int  # records scored exactly (cached: every record holding a query term)


class BM25Field(Field[Any]):
    """Okapi BM25 over the terms of the ``source`` text field, searchable per partition.

    Args:
        source: the stored str field whose text is indexed.
        k1: term-frequency saturation, > 0.
        b: length normalisation, in [0, 1].
        analyzer: the :class:`~redmem.text.Analyzer` turning text into terms (default: the shared one).
        cache_postings: rank in-process over a copy of the query terms' lists kept exact by the
            index's change log (default), or (False) rank inside Redis with ``bm25_search.lua``
            (nothing held in the process: for short-lived processes, or many partitions each
            searched rarely). Same answers either way.
        cache_filtered: also rank a search with a ``where`` filter over the copy (the filter's
            ids listed in the same round trip); off by default: a cold copy first loads each
            query word's whole list (a common word's list holds most of the partition), which
            costs far more than the search inside Redis until the copy holds it. Same answers.
        partition_by: the model's partition field(s), as for any field.

    The index keys carry a short version derived from source, k1, b, the analyser options and
    :data:`STORAGE_FORMAT`: a changed declaration starts a new, empty index, filled by
    ``redmem reindex``.
    """

    stored = False

    def __init__(
        self,
        source: str = "content",
        k1: float = 1.2,
        b: float = 0.75,
        analyzer: Analyzer | None = None,
        *,
        cache_postings: bool = True,
        cache_filtered: bool = False,
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(str, partition_by=partition_by)
        if not is_finite_number(k1) or k1 <= 0:
            raise ModelException(f"BM25Field k1 must be a finite number > 0, got {k1!r}")
        if not is_finite_number(b) or not 0 <= b <= 1:
            raise ModelException(f"BM25Field b must be in [0, 1], got {b!r}")
        if analyzer is not None and not isinstance(analyzer, Analyzer):
            raise ModelException(f"BM25Field analyzer must be a redmem.text.Analyzer, got {type(analyzer).__name__}")
        self.source, self.k1, self.b = source, float(k1), float(b)
        self.cache_postings, self.cache_filtered = bool(cache_postings), bool(cache_filtered)
        self.analyzer = analyzer or default_analyzer()
        self.version = _version(source, self.k1, self.b, self.analyzer)
        self.unit = impact_unit(self.k1)
        self._write_options = (repr(self.k1), repr(self.b), repr(REBASE_DRIFT), int(self.unit))

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.keyword_search(text)``: the records that best match a text by BM25."""
        return {"keyword_search": keyword_search}

    def bind(self, model: Any, name: str) -> None:
        super().bind(model, name)
        field = getattr(model, self.source, None)
        if not isinstance(field, Field) or not field.stored or field.python_type is not str:
            raise ModelException(f"{self.label}: source {self.source!r} must name a stored str field")

    # -- analysis --------------------------------------------------------------------------------
    def term_counts(self, text: str | None) -> Counter[str]:
        """How often each term occurs in ``text`` (None: no terms)."""
        return Counter(self.analyzer.tokens(text)) if text else Counter()

    def keys_in(self, space: KeySpace) -> BM25Keys:
        parts = ("len", "doc", "sum", "ref", "p", "v", "log")
        return BM25Keys(*(space.key(KeyKind.BM25, self.name, self.version, part) for part in parts))

    # -- saves -------------------------------------------------------------------------------
    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        """Replace the record's postings and length; the stored text tells which lists it was in."""
        self._queue_saves(batch, [(batch, old)])

    def on_save_many(self, batches: list[SaveBatch]) -> None:
        """Replace the postings and lengths of a chunk of records: one script call for all of them."""
        self._queue_saves(batches[0], [(batch, batch.old) for batch in batches])

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        self._queue_write(batch, [batch.record_id, ""], {term: [] for term in self._indexed_terms(batch, old)})

    def reindex_read(self, pipe: Any, batch: SaveBatch) -> None:
        """Queue the read of the record's stored entry; its reply becomes ``batch.prepared[name]``.

        ``redmem.fields.reindex`` calls this, so a reindex also clears postings the stored text
        no longer explains (text changed by code that did not declare this field).
        """
        pipe.hget(self.keys_in(batch.keyspace).entries, batch.record_id)

    def _queue_saves(self, batch: SaveBatch, saves: list[tuple[SaveBatch, dict[str, Any] | None]]) -> None:
        """One ``bm25_write`` call, queued on ``batch``'s transaction, for ``saves`` (of one partition)."""
        records: list[str] = []
        joining: dict[str, list[int]] = {}  # term -> [record position, tf, ..] of the new entries
        for position, (record, old) in enumerate(saves, 1):
            counts = self.term_counts(getattr(record.instance, self.source))
            records += (record.record_id, _entry(counts))
            for term, tf in counts.items():
                joining.setdefault(term, []).extend((position, tf))
            for term in self._indexed_terms(record, old):
                joining.setdefault(term, [])
        self._queue_write(batch, records, joining)

    def _indexed_terms(self, batch: SaveBatch, old: dict[str, Any] | None) -> set[str]:
        stored = batch.prepared.get(self.name)
        if old is None and not stored:
            return set()
        terms = set(self.term_counts((old or {}).get(self.source)))
        if stored:
            terms.update(json.loads(stored)[2::2])
        return terms

    def _queue_write(self, batch: SaveBatch, records: list[str], joining: dict[str, list[int]]) -> None:
        """Queue ``bm25_write`` for ``records`` (id, entry, id, entry, ..) over the lists of ``joining``'s terms.

        ``joining`` maps each term whose list the write may touch to the ``[record position, tf, ..]``
        of the new entries that join it (positions 1-based in ``records``, ascending).
        """
        keys, terms = self.keys_in(batch.keyspace), sorted(joining)
        plan = _JSON.encode([x for term in terms for x in (term, joining[term])])
        batch.script(
            "bm25_write",
            [keys.lengths, keys.entries, keys.totals, keys.references, keys.version, keys.log,
             *map(keys.posting, terms)],
            [*self._write_options, LOG_KEEP, LOG_FRACTION, len(records) // 2, plan, *records],
        )

    # -- searches ----------------------------------------------------------------------------
    def search(
        self, space: KeySpace, text: str, limit: int = 10, exhaustive: bool = False, where: Where | None = None,
        postings_budget: int | None = None,
    ) -> SearchResult:
        """The top ``limit`` (record id, score) of partition ``space`` for ``text``: one Lua call.

        ``exhaustive`` scores every posting of the query terms instead of stopping early; the
        answer is the same (it is the reference the bounded search is checked against).
        ``where`` (:func:`~redmem.model._filters.compile_where`): the top ``limit`` of the records
        that pass it. ``postings_budget``: see :meth:`server_searcher`.
        """
        return run_search(self.model._meta.client, self.searcher(space, text, limit, exhaustive, where,
                                                                 postings_budget))

    def searcher(
        self, space: KeySpace, text: str, limit: int = 10, exhaustive: bool = False, where: Where | None = None,
        postings_budget: int | None = None,
    ) -> BM25Search | CachedBM25Search:
        """The search behind :meth:`search`, to share a round trip with other searches: in-process
        over the cached postings (``cache_postings``; with a ``where`` filter only if
        ``cache_filtered``, its ids listed by ``filter_ids.lua`` in the same round trip), else (or
        ``exhaustive``) inside Redis.
        ``postings_budget``: see :meth:`server_searcher` (the in-process search reads no postings
        from Redis per query and ranks every posting of its copy, so only the search inside Redis
        is bounded by it)."""
        if not isinstance(text, str):
            raise ValidationError(f"{self.label}: the query must be a str, got {type(text).__name__}")
        limit = non_negative_int(f"{self.label}: limit", limit, error=QueryArgumentError)
        query_tf = self.term_counts(text)
        if not query_tf or limit == 0:
            return BM25Search(None)
        if self.cache_postings and not exhaustive and (where is None or self.cache_filtered):
            return CachedBM25Search(self, space, query_tf, limit, where, postings_budget)
        return self.server_searcher(space, query_tf, limit, exhaustive, where, postings_budget)

    def server_searcher(self, space: KeySpace, query_tf: Mapping[str, int], limit: int,
                        exhaustive: bool = False, where: Where | None = None,
                        postings_budget: int | None = None) -> BM25Search:
        """The search ranked inside Redis by ``bm25_search.lua`` (bounded, or ``exhaustive``),
        among the records that pass ``where`` when given.

        ``postings_budget`` (None: no bound): the bounded walk reads at most that many postings of
        each query term's list, best impact first, so its work is at most budget x terms postings
        however common the words; the answer is the exact top ``limit`` of the records found in
        those prefixes (each scored from every list), the exact answer when no list is longer.
        """
        budget = positive_int(f"{self.label}: postings_budget", postings_budget, none=True, error=QueryArgumentError) or 0
        keys, terms = self.keys_in(space), sorted(query_tf)
        script_keys = [keys.lengths, keys.entries, keys.totals, keys.references, *map(keys.posting, terms)]
        args: list[Any] = [repr(self.k1), repr(self.b), limit, 0 if exhaustive else FIRST_PAGE, repr(STOP_SLACK),
                           int(self.unit), "" if where is None else where.json(space, script_keys), budget]
        for term in terms:
            args += [term, query_tf[term]]
        return BM25Search(ScriptCall("bm25_search", script_keys, args))

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    asearch = async_variant(search)


@dataclass(frozen=True)
class BM25Search:
    """One BM25 search: its one ``bm25_search.lua`` call (None when the text has no terms or the
    limit is 0: nothing to ask, nothing found), finished into a :class:`SearchResult`."""

    call: ScriptCall | None

    def calls(self) -> list[ScriptCall]:
        return [] if self.call is None else [self.call]

    def finish(self, replies: list[Any]) -> SearchResult:
        if not replies:
            return SearchResult([], "bounded", 0, 0)
        reply = replies[0]
        ranked = [(reply[i].decode(), float(reply[i + 1])) for i in range(3, len(reply), 2)]
        return SearchResult(ranked, reply[0].decode(), int(reply[1]), int(reply[2]))


class CachedBM25Search:
    """One BM25 search ranked in-process over the partition's :class:`~redmem.fields._bm25_postings.PostingsCopy`.

    Its one call, ``bm25_sync.lua``, brings the copy up to date and sends the query terms' lists
    it lacks; :meth:`finish` applies the reply and ranks (exact BM25, every posting of the query
    terms scored). With a ``where`` filter a second call, ``filter_ids.lua``, lists the records
    it lets through (or, when fewer, those it stops) in the same round trip, and the copy ranks
    among them (:meth:`~redmem.fields._bm25_postings.PostingsCopy.rank_filtered`). A reply that cannot be applied (a concurrent search of the same copy moved it
    on, or a list's length differs from its df) is followed by another sync, at most
    :data:`SYNC_ATTEMPTS` in all, then by the search inside Redis (bounded by ``postings_budget``):
    extra round trips only then.
    """

    def __init__(self, field: BM25Field, space: KeySpace, query_tf: Mapping[str, int], limit: int,
                 where: Where | None = None, postings_budget: int | None = None) -> None:
        self.field, self.space, self.limit = field, space, limit
        self.where, self.postings_budget = where, postings_budget
        self.query_tf, self.terms = dict(query_tf), sorted(query_tf)
        keys = field.keys_in(space)
        self.keys = [keys.lengths, keys.entries, keys.totals, keys.references, keys.version, keys.log,
                     *map(keys.posting, self.terms)]
        self.client = field.model._meta.client
        self.copy = copies.get(self.client, keys.lengths)
        self.asked = 0

    def calls(self) -> list[ScriptCall]:
        with self.copy.lock:
            self.asked, args = self.copy.request(self.terms)
        sync = ScriptCall("bm25_sync", self.keys, args)
        return [sync] if self.where is None else [sync, self.where.ids_call(self.space)]

    def finish(self, replies: list[Any]) -> SearchResult:
        field, sent = self.field, 0
        shape = (field.k1, field.b, field.unit)
        reply = SyncReply(replies[0])
        for attempt in range(SYNC_ATTEMPTS):
            sent += reply.postings_sent
            with self.copy.lock:
                if self.copy.apply(reply, self.terms, self.asked, shape):
                    if self.where is None:
                        ranked, matched = self.copy.rank(self.query_tf, reply.n, reply.total, self.limit,
                                                         field.k1, field.b)
                    else:
                        ranked, matched = self.copy.rank_filtered(self.query_tf, reply.n, reply.total, self.limit,
                                                                  field.k1, field.b, *replies[1])
                    return SearchResult(ranked, "cached", sent, matched)
            if attempt + 1 < SYNC_ATTEMPTS:
                with server_errors(self.client):
                    with self.copy.lock:
                        self.asked, args = self.copy.request(self.terms)
                    reply = SyncReply(ScriptCall("bm25_sync", self.keys, args).run(self.client))
        return run_search(self.client, field.server_searcher(self.space, self.query_tf, self.limit, where=self.where,
                                                             postings_budget=self.postings_budget))


def keyword_search(
    query: Query, text: str, limit: int = 10, *, field: str | None = None, exhaustive: bool = False,
    where: Mapping[str, Any] | None = None,
) -> HitList[Any]:
    """The ``limit`` records of the query's partition that best match ``text`` by BM25.

    Best first, ties by record id ascending, as a :class:`~redmem.model._hits.HitList` (signal
    ``bm25``); each record also carries its score as ``_bm25_score``. A text with
    no terms (empty, only stop words) finds nothing. Two round trips: one Lua call ranks, one
    pipeline loads the records. The query may name its partition and nothing else; ``where``
    (``{"kind": "fact", "importance__gte": 0.5}``, the conditions of :meth:`Query.filter
    <redmem.model._query.Query.filter>`) keeps the top ``limit`` of the records that match, each
    checked inside the script (:mod:`~redmem.model._filters`).
    """
    bm25 = pick_field(query.model, BM25Field, field, "keyword_search")
    compiled = compile_where(query.model, where)
    space = partition_of(query, "keyword_search")
    return hydrate(query, space, bm25.search(space, text, limit, exhaustive, compiled).ranked, "bm25")


def _entry(counts: Counter[str]) -> str:
    """A record's entry as sent to the index: JSON ``[dl, term, tf, term, tf, ..]``, terms sorted."""
    return _JSON.encode([sum(counts.values()), *[x for term in sorted(counts) for x in (term, counts[term])]])


@lru_cache(maxsize=1 << 16)
def _escaped(term: str) -> str:
    """A term as it appears in its posting list's key (terms repeat: escaping is memoised)."""
    return escape(term)


def _version(source: str, k1: float, b: float, analyzer: Analyzer) -> str:
    """8 hex digits naming what the stored impacts and terms depend on."""
    options = {
        f.name: sorted(value) if isinstance(value := getattr(analyzer, f.name), frozenset) else repr(value)
        for f in dataclasses.fields(analyzer)
    }
    return _digest([STORAGE_FORMAT, source, repr(k1), repr(b), type(analyzer).__qualname__, options])


def _digest(parts: list[Any]) -> str:
    text = json.dumps(parts, ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=4).hexdigest()
