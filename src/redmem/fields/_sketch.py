"""FrequencySketch: a count-min sketch per partition of the terms of every record's fingerprint.

Count-min sketch (Cormode & Muthukrishnan 2005, "An improved data stream summary: the
count-min sketch and its applications")::

    width  w = ceil(e / epsilon)       (epsilon = 0.001: w = 2,719)
    depth  d = ceil(ln(1 / delta))     (delta = 0.01:    d = 5)
    row i counts term x in column (h1(x) + i * h2(x)) mod w
    estimate(x) = min over rows of the counter   >= true count, and
                  <= true count + epsilon * N with probability >= 1 - delta, N = total count.

h1, h2 are the two 32-bit hashes of :func:`redmem.fields._bloom.term_hashes` (double hashing,
Kirsch & Mitzenmacher 2006). A save adds the term counts of the record's new fingerprint and
subtracts those of its stored one; a delete subtracts them: the sketch counts the term
occurrences of the partition's current records, a stream whose true counts never go below
zero, for which the bound holds. Records saved before the field existed are not counted.

Storage: one string per partition, ``(d * w + 1)`` signed 32-bit counters read and written by
BITFIELD (``#i`` offsets, saturating), the last counter holding N. A BITFIELD with several
INCRBY operations is one atomic command, so no script is needed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._validation import integer
from ._bloom import MAX_ARGS, TermField, term_hashes

if TYPE_CHECKING:
    from ..model._base import Model
    from ..model._batch import SaveBatch

__all__ = ["FrequencySketch", "sketch_size", "counter_indexes"]

#: Counter type of BITFIELD: signed 32 bits.
COUNTER = "i32"


def sketch_size(epsilon: float, delta: float) -> tuple[int, int]:
    """Width ``w = ceil(e / epsilon)`` and depth ``d = ceil(ln(1 / delta))`` of a count-min sketch."""
    return math.ceil(math.e / epsilon), math.ceil(math.log(1.0 / delta))


def counter_indexes(term: str, width: int, depth: int) -> list[int]:
    """The counter of ``term`` in each row, as flat indexes ``row * width + column``."""
    h1, h2 = term_hashes(term)
    return [row * width + (h1 + row * h2) % width for row in range(depth)]


class FrequencySketch(TermField):
    """Approximate term counts per partition: ``estimate(word)`` never under-counts.

    Args:
        epsilon: over-count bound as a fraction of the partition's total term count.
        delta: probability that an estimate exceeds that bound.
        fingerprint_fn: ``record -> str | list[str] | None``; default: the non-key string fields.
        **options: ``analyzer=`` the :class:`~redmem.text.Analyzer` turning texts into terms
            (default: the shared one); ``partition_by=`` the fields naming a partition.
    """

    kind = KeyKind.SKETCH

    def __init__(
        self,
        epsilon: float = 0.001,
        delta: float = 0.01,
        fingerprint_fn: Any = None,
        **options: Any,
    ) -> None:
        if not 0.0 < epsilon < 1.0 or not 0.0 < delta < 1.0:
            raise ModelException(f"epsilon and delta must be in (0, 1), got {epsilon!r}, {delta!r}")
        super().__init__(fingerprint_fn, **options)
        self.epsilon, self.delta = epsilon, delta
        self.width, self.depth = sketch_size(epsilon, delta)

    # -- saves -------------------------------------------------------------------------------
    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        counts = Counter(self.terms(batch.instance))
        if old is not None:
            counts.subtract(self.terms(_record_view(self.model, old)))
        self._queue(batch.pipe, self.key(batch.keyspace), counts)

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        counts = Counter(self.terms(_record_view(self.model, old)))
        self._queue(batch.pipe, self.key(batch.keyspace), {t: -n for t, n in counts.items()})

    # -- direct use --------------------------------------------------------------------------
    def add(self, text: str, count: int = 1, **partition: Any) -> None:
        """Count every term of ``text`` ``count`` more times (negative: fewer) in a partition."""
        count = integer(f"{self.label}: count", count)
        counts = {term: n * count for term, n in Counter(self.text_terms(text)).items()}
        key, client = self.key(self.keyspace_of(partition)), self.model._meta.client
        with server_errors(client), client.pipeline(transaction=True) as pipe:
            self._queue(pipe, key, counts)
            pipe.execute()

    def estimate(self, word: str, **partition: Any) -> int:
        """Estimated count of the one term ``word`` analyses to (0 for a stop word)."""
        terms = self.text_terms(word)
        if len(terms) > 1:
            raise ValidationError(f"{self.label}: {word!r} is several terms {terms}; use estimate_many")
        return self.estimate_many(terms, **partition)[0] if terms else 0

    def estimate_many(self, words: Iterable[str], **partition: Any) -> list[int]:
        """Estimated count of each of ``words`` (each analysed to its first term), in one round trip."""
        if isinstance(words, str):
            raise ValidationError(f"{self.label}: give a list of words, not one str")
        terms: list[str | None] = [next(iter(self.text_terms(w)), None) for w in words]
        indexes = [counter_indexes(t, self.width, self.depth) if t else [] for t in terms]
        values = iter(self._read(self.keyspace_of(partition), [i for group in indexes for i in group]))
        return [max(0, min(next(values) for _ in group)) if group else 0 for group in indexes]

    def total(self, **partition: Any) -> int:
        """N: the partition's total term count (the over-count bound is ``epsilon * N``)."""
        return self._read(self.keyspace_of(partition), [self.width * self.depth])[0]

    # -- plumbing ----------------------------------------------------------------------------
    def _queue(self, pipe: Any, key: str, counts: dict[str, int]) -> None:
        """Queue BITFIELD increments of ``counts`` (term -> change) and of the total."""
        changes = [(i, n) for t, n in counts.items() if n for i in counter_indexes(t, self.width, self.depth)]
        total = sum(counts.values())
        if total:
            changes.append((self.width * self.depth, total))
        for chunk in _chunks(changes, MAX_ARGS // 3):
            ops = [arg for index, change in chunk for arg in ("INCRBY", COUNTER, f"#{index}", change)]
            pipe.execute_command("BITFIELD", key, "OVERFLOW", "SAT", *ops)

    def _read(self, space: KeySpace, indexes: list[int]) -> list[int]:
        """The counters at ``indexes`` (BITFIELD_RO, one pipelined round trip)."""
        if not indexes:
            return []
        key, client = self.key(space), self.model._meta.client
        with server_errors(client), client.pipeline(transaction=False) as pipe:
            for chunk in _chunks(indexes, MAX_ARGS // 3):
                ops = [arg for index in chunk for arg in ("GET", COUNTER, f"#{index}")]
                pipe.execute_command("BITFIELD_RO", key, *ops)
            return [int(value) for reply in pipe.execute() for value in reply]

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aadd = async_variant(add)
    aestimate = async_variant(estimate)
    aestimate_many = async_variant(estimate_many)
    atotal = async_variant(total)


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _record_view(model: type[Model], values: dict[str, Any]) -> Any:
    """An unsaved instance holding ``values`` (a record's stored fields), for fingerprint_fn."""
    view = model.__new__(model)
    for name, value in values.items():
        setattr(view, name, value)
    return view
