"""One partition's BM25 postings held in-process, kept exact by the index's change log.

A :class:`PostingsCopy` holds, for each term a query has asked for, the list's docnos and term
frequencies (numpy arrays), and each docno's length and record id. ``bm25_write.lua`` logs every
changed record (its docno and the terms of its previous entry) under a version counter, as the
vectors do (:mod:`redmem.fields._embedding_search`); one ``bm25_sync.lua`` call per search
returns the log entries above the copy's version with the changed records' current entries,
the lists of the query terms the copy lacks, N, the total length and each query term's df. The
copy applies them and ranks in-process:

    score(d) = sum over sorted query terms t of  qtf(t) * idf(t) * tf_norm(tf(t, d), dl(d))

with the formulas and the order of additions of :mod:`redmem.fields._bm25_math`, every posting of
the query's lists scored (numpy, vectorised), so the answer is exact BM25 -- the scores of
``bm25_search.lua``'s exhaustive mode, bit for bit. The server's work is a version check, a
range of the log and ``ZCARD`` per term; a list crosses the network once per process (and
again after a reload: another epoch, a reader further behind than the log keeps, a rollback).

Two searches of one copy may run in two threads: a reply is applied only if it continues the
copy's state (same epoch, the version it was asked at <= the copy's <= the reply's); otherwise,
or when a list's length differs from the df the server sent (a writer that does not log, e.g.
an older redmem), the search asks again (:class:`CachedBM25Search` in :mod:`redmem.fields._bm25`).
"""

from __future__ import annotations

import json
import math
import sys
import threading
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..store._client_cache import ClientCache

__all__ = ["PostingsCopy", "SyncReply", "copies", "CHANGES_PER_CALL", "UNSEEN"]

#: Log entries one sync reads at most; a reader further behind reloads the query's lists.
CHANGES_PER_CALL = 5000
#: The epoch sent by a copy that holds nothing yet (never a stored epoch).
UNSEEN = "-"
#: Postings (at most, unless the first list is longer) of the lists of largest bound whose partial
#: scores set MaxScore's threshold.
FIRST_POSTINGS = 2048
#: Relative slack of the non-essential test (float sums in another order may differ by an ulp).
STOP_SLACK = 1e-9


@dataclass(frozen=True)
class _Scored:
    """One query term's list as ranked: docnos, tf_norm per posting, qtf * idf, and their
    product's largest value (the list's bound)."""

    term: str
    docnos: np.ndarray
    norms: np.ndarray
    weight: float
    bound: float


class SyncReply:
    """One ``bm25_sync.lua`` reply, decoded."""

    def __init__(self, reply: list[Any]) -> None:
        self.epoch: bytes = reply[0]
        self.version, self.reload = int(reply[1]), reply[2] == b"reload"
        self.n, self.total = int(reply[3]), int(reply[4])
        self.dfs: list[int] = [int(df) for df in reply[5]]
        self.changes: list[Any] = reply[6]
        self.lists: list[Any] = reply[7]

    @property
    def postings_sent(self) -> int:
        """Postings the server read and sent (lists the copy lacked)."""
        return sum((len(rows) - 1) // 3 for rows in self.lists if rows)


class PostingsCopy:
    """The postings of the terms asked so far in one partition, as of ``version`` of ``epoch``.

    ``lists`` maps a term to (docnos int64, tf float64); ``lengths`` and ``ids`` are indexed
    by docno. ``lock`` guards everything: taken to read the state a request is built from, and
    to apply a reply and rank.
    """

    def __init__(self) -> None:
        self.epoch: bytes | None = None
        self.version = 0
        self.lists: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.lengths = np.zeros(0)
        self.ids: list[str | None] = []
        self._docnos: dict[str, int] = {}  # record id -> docno, of the records in ids
        self.lock = threading.Lock()
        self._scores = np.zeros(0)  # scratch of rank(), by docno: zeros between searches
        self._probe_scratch = np.zeros(0)  # scratch of _probe(), by docno: zeros between searches
        self._known = np.zeros(0, dtype=bool)  # by docno: length and id current
        self._norms: dict[str, tuple[float, np.ndarray, np.ndarray, float]] = {}  # term -> (avgdl, docnos, tf_norm, max)

    def request(self, terms: list[str]) -> tuple[int, list[Any]]:
        """(version, ``bm25_sync`` arguments) for the sorted query ``terms``; the lock is held."""
        epoch = UNSEEN if self.epoch is None else self.epoch
        args: list[Any] = [epoch, self.version, CHANGES_PER_CALL]
        for term in terms:
            args += [term, "1" if term in self.lists else "0"]
        return self.version, args

    def apply(self, reply: SyncReply, terms: list[str], asked: int, shape: tuple[float, float, float]) -> bool:
        """Bring the copy to the reply's version; True when it then holds every query term's list,
        each as long as its df. The lock is held. A reply that does not continue the copy's state
        (see the module docstring) changes nothing; a list of the wrong length resets the copy.
        ``shape`` is the field's (k1, b, impact unit)."""
        if reply.reload:
            if self.epoch == reply.epoch and self.version > reply.version:
                return False
            if self.epoch != reply.epoch:
                self.lengths, self.ids, self._scores, self._probe_scratch = np.zeros(0), [], np.zeros(0), np.zeros(0)
                self._docnos = {}
            self._known = np.zeros(len(self.ids), dtype=bool)  # changes were missed: learn again
            self.epoch, self.lists, self._norms = reply.epoch, {}, {}
        elif self.epoch != reply.epoch or not asked <= self.version <= reply.version:
            return False
        else:
            self._apply_changes(reply.changes)
        for term, rows in zip(terms, reply.lists):
            if rows:
                self.lists[term] = self._decoded(rows, *shape)
        self.version = reply.version
        if any(term not in self.lists for term in terms):
            return False
        if any(len(self.lists[term][0]) != df for term, df in zip(terms, reply.dfs)):
            self.epoch, self.version, self.lists, self._norms = None, 0, {}, {}
            return False
        return True

    def footprint(self) -> dict[str, int]:
        """What the copy holds: ``lists``, ``postings``, ``array_bytes`` (numpy arrays) and
        ``id_bytes`` (the record ids, as Python strings)."""
        with self.lock:
            arrays = [self.lengths, self._known, self._scores, self._probe_scratch,
                      *(a for pair in self.lists.values() for a in pair), *(kept[2] for kept in self._norms.values())]
            return {"lists": len(self.lists), "postings": sum(len(docnos) for docnos, _ in self.lists.values()),
                    "array_bytes": sum(array.nbytes for array in arrays),
                    "id_bytes": sum(sys.getsizeof(record_id) for record_id in self.ids if record_id is not None)}

    def rank(self, query_tf: dict[str, int], n: int, total: int, limit: int, k1: float,
             b: float) -> tuple[list[tuple[str, float]], int]:
        """The top ``limit`` (record id, score) by exact BM25, best first, ties by record id; and
        how many records were scored. The query terms' lists are held (after a successful apply).

        MaxScore over whole lists: ``theta``, the ``limit``-th best partial score over the lists
        of largest bound (as many as fit in :data:`FIRST_POSTINGS` postings, one at least; a partial score never
        exceeds the full one, so ``theta`` <= the final ``limit``-th score); the lists of smallest
        bound whose bounds sum below ``theta`` are *non-essential*: a record in none of the other
        lists scores below ``theta`` and cannot enter the top. The records of the essential lists
        are scored exactly, term by term in sorted order (the non-essential lists probed for
        them), so each sum is the formula's, addition for addition.
        """
        if n == 0 or limit <= 0:
            return [], 0
        lists = self._weighted(query_tf, n, total, k1, b)
        by_bound = sorted(lists, key=lambda scored: -scored.bound)
        first: list[_Scored] = []
        postings = 0
        for scored in by_bound:
            if first and postings + len(scored.docnos) > FIRST_POSTINGS:
                break
            first.append(scored)
            postings += len(scored.docnos)
        theta = 0.0
        if len(first) < len(lists):
            partial, _ = self._scored(first, set(), None)
            theta = float(np.partition(partial, len(partial) - limit)[len(partial) - limit]) if len(partial) >= limit else 0.0
        optional: set[str] = set()
        bounds = 0.0
        for scored in reversed(by_bound):
            bounds += scored.bound
            if bounds * (1 + STOP_SLACK) >= theta:
                break
            optional.add(scored.term)
        candidates = self._first_lists([scored for scored in lists if scored.term not in optional]) if optional else None
        found, matched = self._scored(lists, optional, candidates)
        if len(matched) > limit:
            chosen = np.flatnonzero(found >= np.partition(found, len(found) - limit)[len(found) - limit])
        else:
            chosen = np.arange(len(matched))
        ranked = sorted(((str(self.ids[matched[i]]), float(found[i])) for i in chosen),
                        key=lambda pair: (-pair[1], pair[0]))
        return ranked[:limit], len(matched)

    def rank_filtered(self, query_tf: dict[str, int], n: int, total: int, limit: int, k1: float, b: float,
                      mode: bytes, ids: list[bytes]) -> tuple[list[tuple[str, float]], int]:
        """:meth:`rank` among the records a filter lets through, as ``filter_ids.lua`` lists
        them: ``mode`` ``b"only"`` (these ids) or ``b"except"`` (every record but these).

        ``except``: the top ``limit + len(ids)`` of every record, the listed ones then dropped
        (at most ``len(ids)`` of them are in it, so the rest holds the top ``limit``). ``only``:
        the listed records of the copy scored exactly, each list probed for them in term
        order (the sums of :meth:`rank`), those holding no query term left out.
        """
        if mode == b"except":
            left_out = {record_id.decode() for record_id in ids}
            ranked, matched = self.rank(query_tf, n, total, limit + len(left_out), k1, b)
            return [pair for pair in ranked if pair[0] not in left_out][:limit], matched
        if n == 0 or limit <= 0:
            return [], 0
        known = (self._docnos.get(record_id.decode()) for record_id in ids)
        candidates = np.unique(np.fromiter((d for d in known if d is not None), dtype=np.int64))
        lists = self._weighted(query_tf, n, total, k1, b)
        found, _ = self._scored(lists, {scored.term for scored in lists}, candidates)
        holding = np.flatnonzero(found > 0)
        ranked = sorted(((str(self.ids[candidates[i]]), float(found[i])) for i in holding),
                        key=lambda pair: (-pair[1], pair[0]))
        return ranked[:limit], len(holding)

    def _weighted(self, query_tf: dict[str, int], n: int, total: int, k1: float, b: float) -> list[_Scored]:
        """The query terms' non-empty lists, in sorted term order, with their tf_norms, weights
        ``qtf * idf`` and bounds."""
        avgdl, lists = total / n, []
        for term in sorted(query_tf):
            docnos, tf = self.lists[term]
            if len(docnos):
                weight = query_tf[term] * math.log((n - len(docnos) + 0.5) / (len(docnos) + 0.5) + 1)
                norms, top = self._tf_norms(term, docnos, tf, avgdl, k1, b)
                lists.append(_Scored(term, docnos, norms, weight, weight * top))
        return lists

    def _first_lists(self, lists: list[_Scored]) -> np.ndarray:
        """The distinct docnos of ``lists`` (each record where it first appears)."""
        scores, seen = self._scores, []
        for scored in lists:
            fresh = scored.docnos[scores[scored.docnos] == 0]
            seen.append(fresh)
            scores[fresh] = 1.0
        matched = np.concatenate(seen) if seen else np.zeros(0, dtype=np.int64)
        scores[matched] = 0  # the scratch array is all zeros between uses
        return matched

    def _scored(self, lists: list[_Scored], optional: set[str],
                candidates: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, docnos) of ``candidates`` (None: every record of ``lists``) over ``lists``, in
        their order; the lists of the ``optional`` terms are looked up for the candidates only
        (the others hold candidates only)."""
        scores, seen = self._scores, []
        for scored in lists:
            if scored.term in optional:
                docnos = cast(np.ndarray, candidates)
                scores[docnos] = scores[docnos] + scored.weight * self._probe(scored, docnos)
                continue
            before = scores[scored.docnos]
            if candidates is None:
                seen.append(scored.docnos[before == 0])  # a record's first list (every contribution is > 0)
            scores[scored.docnos] = before + scored.weight * scored.norms
        if candidates is not None:
            matched = candidates
        else:
            matched = np.concatenate(seen) if seen else np.zeros(0, dtype=np.int64)
        found = scores[matched]
        scores[matched] = 0
        return found, matched

    def _probe(self, scored: _Scored, docnos: np.ndarray) -> np.ndarray:
        """The tf_norm of each of ``docnos`` in ``scored``'s list, 0 where it is absent."""
        probe = self._probe_scratch
        probe[scored.docnos] = scored.norms
        found: np.ndarray = probe[docnos]
        probe[scored.docnos] = 0
        return found

    def _tf_norms(self, term: str, docnos: np.ndarray, tf: np.ndarray, avgdl: float, k1: float,
                  b: float) -> tuple[np.ndarray, float]:
        """``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` of each posting of the list and
        their largest, kept while the list and avgdl stay (a read-mostly partition computes each
        list's once)."""
        kept = self._norms.get(term)
        if kept is not None and kept[0] == avgdl and kept[1] is docnos:
            return kept[2], kept[3]
        dl = self.lengths[docnos]
        norms = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        self._norms[term] = (avgdl, docnos, norms, float(norms.max()))
        return norms, float(norms.max())

    # -- applying replies ----------------------------------------------------------------------
    def _grow(self, top: int) -> None:
        """Make the arrays by docno hold docnos below ``top``."""
        if top > len(self.ids):
            size = max(top, 2 * len(self.ids))
            self.lengths = np.concatenate([self.lengths, np.zeros(size - len(self.lengths))])
            self._known = np.concatenate([self._known, np.zeros(size - len(self._known), dtype=bool)])
            self._scores, self._probe_scratch = np.zeros(size), np.zeros(size)
            self.ids.extend([None] * (size - len(self.ids)))

    def _learn(self, docnos: list[int], values: list[Any]) -> None:
        """Record each docno's length and id from its ``"dl id"`` (None: removed)."""
        self._grow(max(docnos, default=-1) + 1)
        for docno, value in zip(docnos, values):
            old = self.ids[docno]
            if old is not None and self._docnos.get(old) == docno:
                del self._docnos[old]
            if value is None:
                self.ids[docno], self._known[docno] = None, False
                continue
            dl, record_id = value.split(b" ", 1)
            name = record_id.decode()
            self.lengths[docno], self.ids[docno], self._known[docno], self._docnos[name] = int(dl), name, True, docno

    def _decoded(self, rows: list[Any], k1: float, b: float, unit: float) -> tuple[np.ndarray, np.ndarray]:
        """(docnos, tf) of one sent list ``[reference, docno, stored, "dl id", ..]``; the lengths
        and ids of the docnos the copy does not know yet are recorded (those it knows are current:
        every change of a known docno came through the log).

        tf from the stored impact ``I`` (scaled by ``unit``) at the list's reference ``R``, as
        ``bm25_search.lua`` computes it: ``floor(I * L(R) / (k1 + 1 - I) + 0.5)``.
        """
        docnos = np.array(rows[1::3], dtype=np.int64)
        stored = np.array(rows[2::3], dtype=np.float64)
        self._grow(int(docnos.max(initial=-1)) + 1)
        values = rows[3::3]
        fresh = np.flatnonzero(~self._known[docnos]).tolist()
        self._learn(docnos[fresh].tolist(), [values[j] for j in fresh])
        if rows[0] is None:  # no reference: the server sent tf itself
            return docnos, stored
        reference, impact, dls = float(rows[0]), stored / unit, self.lengths[docnos]
        tf = np.floor(impact * (k1 * (1 - b + b * dls / reference)) / (k1 + 1 - impact) + 0.5)
        return docnos, tf

    def _apply_changes(self, changes: list[Any]) -> None:
        """Apply log entries (with the changed records' current ``"dl id"`` and entry): each
        changed docno leaves the held lists of its previous terms and of its current ones, then
        joins the latter with its current tf. Applying an entry twice changes nothing."""
        leaving: dict[str, set[int]] = {}
        current: dict[int, tuple[Any, Any]] = {}
        for i in range(0, len(changes), 3):
            docno, _, previous = changes[i].decode().partition(" ")
            for term in json.loads(previous) if previous else ():
                if term in self.lists:
                    leaving.setdefault(term, set()).add(int(docno))
            current[int(docno)] = (changes[i + 1], changes[i + 2])
        docnos = list(current)
        self._learn(docnos, [value for value, _ in current.values()])
        joining: dict[str, dict[int, int]] = {}
        for docno, (value, entry) in current.items():
            if value is None:
                continue
            decoded = json.loads(entry)
            for j in range(2, len(decoded), 2):
                if decoded[j] in self.lists:
                    joining.setdefault(decoded[j], {})[docno] = decoded[j + 1]
        for term in leaving.keys() | joining.keys():
            docnos_t, tf = self.lists[term]
            gone = np.array([*leaving.get(term, ()), *joining.get(term, {})], dtype=np.int64)
            keep = ~np.isin(docnos_t, gone)
            added = joining.get(term, {})
            self.lists[term] = (np.concatenate([docnos_t[keep], np.fromiter(added, dtype=np.int64, count=len(added))]),
                                np.concatenate([tf[keep], np.fromiter(added.values(), dtype=float, count=len(added))]))


#: The process-wide copies, per client and index partition (keyed by the lengths hash).
copies: ClientCache[PostingsCopy] = ClientCache(PostingsCopy)
