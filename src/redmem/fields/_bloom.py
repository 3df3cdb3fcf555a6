"""ExistenceFilter: a Bloom filter per partition over the terms of every record's fingerprint.

Sizing for ``capacity`` n distinct terms at false-positive rate p (Bloom 1970; the usual
optimum)::

    m = int(-n ln p / (ln 2)^2)        bits          (n = 100,000, p = 0.01: m = 958,505)
    k = max(1, int(m / n * ln 2))      bit positions  (k = 6)
    false-positive rate after n terms: (1 - e^(-k n / m))^k

Bit positions by double hashing (Kirsch & Mitzenmacher 2006, "Less hashing, same
performance: building a better Bloom filter"): ``g_i = (h1 + i * h2) mod m`` for
``i = 0..k-1``, where h1 and h2 are the two 32-bit halves of the 64-bit BLAKE2b digest of the
term's UTF-8 bytes. Each term's ``h1`` and step ``h2 mod m`` are computed here and sent to Lua,
which derives the k positions (two arguments per term instead of k) and sets or reads the bits.

The fingerprint of a record (``fingerprint_fn(record)``, by default its non-key string fields)
is analysed into terms (:mod:`redmem.text`) and every term is added inside the record's save
batch. A text *may exist* when any of its terms may; a Bloom filter cannot forget, so updates
and deletes never remove terms: the filter answers "was this ever seen in this partition".
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..model._field import Field
from ..model.query_methods import QueryMethod
from ..store._aio import async_variant
from ..store._connection import server_errors
from ..store._errors import ModelException, QueryException, ValidationError
from ..store._keys import KeyKind, KeySpace
from ..store._scripts import ScriptCall, run_calls
from ..store._validation import positive_int
from ..text import Analyzer, default_analyzer
from .search_protocol import run_search

if TYPE_CHECKING:
    from ..model._base import Model
    from ..model._batch import SaveBatch

__all__ = [
    "ExistenceFilter",
    "TermField",
    "bloom_size",
    "false_positive_rate",
    "term_hashes",
    "bit_positions",
    "position_seed",
]

#: Most arguments sent in one command; longer inputs become several commands of one pipeline.
MAX_ARGS = 60_000

Fingerprint = Callable[[Any], "str | Iterable[str] | None"]


def bloom_size(capacity: int, error_rate: float) -> tuple[int, int]:
    """Bits ``m`` and positions per term ``k`` for ``capacity`` terms at ``error_rate``.

    ``m = int(-n ln p / (ln 2)^2)``, ``k = max(1, int(m / n * ln 2))``.
    """
    m = int(-capacity * math.log(error_rate) / math.log(2) ** 2)
    return m, max(1, int(m / capacity * math.log(2)))


def false_positive_rate(m: int, k: int, n: int) -> float:
    """Expected false-positive rate of an m-bit, k-position filter holding n terms: ``(1 - e^(-kn/m))^k``."""
    return (1.0 - math.exp(-k * n / m)) ** k


def term_hashes(term: str) -> tuple[int, int]:
    """Two 32-bit hashes of ``term``: the low and high halves of its 64-bit BLAKE2b digest."""
    value = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little")
    return value & 0xFFFFFFFF, value >> 32


def position_seed(term: str, m: int) -> tuple[int, int]:
    """``(h1, step)`` of ``term``: its positions are ``(h1 + i * step) mod m``; a step of 0 mod m becomes 1."""
    h1, h2 = term_hashes(term)
    return h1, h2 % m or 1


def bit_positions(term: str, m: int, k: int) -> list[int]:
    """The k positions of ``term`` in [0, m): ``(h1 + i * h2) mod m`` (:func:`position_seed`)."""
    h1, step = position_seed(term, m)
    return [(h1 + i * step) % m for i in range(k)]


class TermField(Field[Any]):
    """Base of the fields that index the analysed terms of a record's fingerprint.

    It keeps no entry in the record hash. ``fingerprint_fn(record)`` returns a text, a list of
    texts, or None; without it the fingerprint is every non-key string field of the record.
    """

    stored = False
    #: Kind code of the field's key: ``<prefix>:<Model>:{<partition>}:<kind>:<field>``.
    kind = ""

    def __init__(
        self,
        fingerprint_fn: Fingerprint | None = None,
        *,
        analyzer: Analyzer | None = None,
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(partition_by=partition_by)
        if fingerprint_fn is not None and not callable(fingerprint_fn):
            raise ModelException(f"fingerprint_fn must be callable, got {type(fingerprint_fn).__name__}")
        self.fingerprint_fn = fingerprint_fn
        self.analyzer = analyzer or default_analyzer()

    def fingerprint(self, instance: Any) -> list[str]:
        """The texts ``instance`` contributes (None values left out)."""
        if self.fingerprint_fn is None:
            values: Any = [getattr(instance, field.name) for field in self._text_fields()]
        else:
            values = self.fingerprint_fn(instance)
        return self._texts(values)

    def terms(self, instance: Any) -> list[str]:
        """The analysed terms of the fingerprint of ``instance``, in order, duplicates kept."""
        return [term for text in self.fingerprint(instance) for term in self.analyzer.tokens(text)]

    def text_terms(self, text: Any) -> list[str]:
        """The analysed terms of one text given to a search; ValidationError unless a str."""
        if not isinstance(text, str):
            raise ValidationError(f"{self.label}: texts must be str, got {type(text).__name__}")
        return self.analyzer.tokens(text)

    def key(self, space: KeySpace) -> str:
        """The key of this field's structure in the partition ``space``."""
        return space.key(self.kind, self.name)

    def keyspace_of(self, partition: dict[str, Any]) -> KeySpace:
        """The partition named by keyword arguments that give exactly the model's partition fields."""
        expected = self.model._meta.partition_fields
        if set(partition) != set(expected):
            raise QueryException(
                f"{self.label} needs exactly the partition {list(expected)} as keyword arguments, "
                f"got {sorted(partition)}"
            )
        space: KeySpace = self.model.query.filter(**partition).partition()
        return space

    def _text_fields(self) -> list[Field[Any]]:
        fields = [
            f for f in self.model._meta.fields.values() if f.stored and not f.is_key and f.python_type is str
        ]
        if not fields:
            raise ModelException(f"{self.label}: the model has no string field; give fingerprint_fn")
        return fields

    def _texts(self, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        texts = list(value) if isinstance(value, Iterable) else [value]
        if not all(text is None or isinstance(text, str) for text in texts):
            raise ValidationError(f"{self.label}: a fingerprint is a str, a list of str or None")
        return [text for text in texts if text]


class ExistenceFilter(TermField):
    """A Bloom filter of the terms seen in each partition: ``might_exist`` answers in O(k).

    Args:
        error_rate: false-positive rate reached when ``capacity`` distinct terms are in.
        capacity: distinct terms per partition the filter is sized for (not records).
        fingerprint_fn: ``record -> str | list[str] | None``; default: the non-key string fields.
        **options: ``analyzer=`` the :class:`~redmem.text.Analyzer` turning texts into terms
            (default: the shared one); ``partition_by=`` the fields naming a partition.
    """

    kind = KeyKind.BLOOM

    def __init__(
        self,
        error_rate: float = 0.01,
        capacity: int = 100_000,
        fingerprint_fn: Fingerprint | None = None,
        **options: Any,
    ) -> None:
        if not 0.0 < error_rate < 1.0:
            raise ModelException(f"error_rate must be in (0, 1), got {error_rate!r}")
        positive_int("capacity", capacity, error=ModelException)
        super().__init__(fingerprint_fn, **options)
        self.error_rate, self.capacity = error_rate, capacity
        self.m, self.k = bloom_size(capacity, error_rate)

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """``query.might_exist(text)``, ``definitely_missing(text)``, ``might_exist_many(texts)``."""
        return {"might_exist": might_exist, "definitely_missing": definitely_missing, "might_exist_many": might_exist_many}

    # -- saves -------------------------------------------------------------------------------
    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        key = self.key(batch.keyspace)
        for args in self._script_args(list(dict.fromkeys(self.terms(batch.instance)))):
            batch.script("bloom_add", [key], args)

    # -- direct use --------------------------------------------------------------------------
    def add(self, texts: str | Iterable[str], **partition: Any) -> int:
        """Add the terms of ``texts`` to a partition's filter, outside any record.

        Returns how many distinct terms were surely new (they set a clear bit).
        """
        terms = self._distinct_terms([texts] if isinstance(texts, str) else texts)
        return sum(self._run("bloom_add", self.keyspace_of(partition), terms))

    def might_exist(self, text: str, **partition: Any) -> bool:
        """True when any term of ``text`` may be in the partition (false positives at ~error_rate)."""
        return self.check(self.keyspace_of(partition), [text])[0]

    def definitely_missing(self, text: str, **partition: Any) -> bool:
        """True when no term of ``text`` was ever added to the partition (never wrong)."""
        return not self.might_exist(text, **partition)

    def might_exist_many(self, texts: Iterable[str], **partition: Any) -> list[bool]:
        """:meth:`might_exist` for each of ``texts``, in one round trip."""
        return self.check(self.keyspace_of(partition), texts)

    def fill_ratio(self, **partition: Any) -> float:
        """Fraction of the partition's m bits that are set (BITCOUNT / m).

        With fill ratio f the current false-positive rate is about ``f ** k``.
        """
        client = self.model._meta.client
        with server_errors(client):
            ones: int = client.bitcount(self.key(self.keyspace_of(partition)))
            return ones / self.m

    def check(self, space: KeySpace, texts: Iterable[str]) -> list[bool]:
        """Per text: may any of its terms be in the filter of ``space``? One round trip for all.

        A text with no terms (empty, only stop words) is definitely missing.
        """
        present: list[bool] = run_search(self.model._meta.client, self.searcher(space, texts))
        return present

    def searcher(self, space: KeySpace, texts: Iterable[str]) -> ExistenceCheck:
        """The search behind :meth:`check`, to share a round trip with other searches."""
        if isinstance(texts, str):
            raise ValidationError(f"{self.label}: give a list of texts, not one str")
        return ExistenceCheck(self, space, [self.text_terms(text) for text in texts])

    def term_searcher(self, space: KeySpace, terms: Iterable[str]) -> ExistenceCheck:
        """Per term already analysed (as the analyser leaves it, e.g. an identifier): may it be in
        the filter of ``space``? The search of :meth:`searcher` without analysing each text."""
        if isinstance(terms, str):
            raise ValidationError(f"{self.label}: give a list of terms, not one str")
        return ExistenceCheck(self, space, [[term] for term in terms])

    # -- plumbing ----------------------------------------------------------------------------
    def _distinct_terms(self, texts: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(term for text in texts for term in self.text_terms(text)))

    def _script_args(self, terms: list[str]) -> Iterator[list[int]]:
        """Script arguments ``[k, m, h1, step, ...]`` for ``terms`` (:func:`position_seed`), at most
        MAX_ARGS per call."""
        per_call = MAX_ARGS // 2
        for start in range(0, len(terms), per_call):
            chunk = terms[start : start + per_call]
            yield [self.k, self.m, *(n for term in chunk for n in position_seed(term, self.m))]

    def _run(self, script: str, space: KeySpace, terms: list[str]) -> list[Any]:
        """Run ``script`` over ``terms``: one call, or several in one pipelined round trip."""
        calls = list(self._script_args(terms))
        if not calls:
            return []
        key, client = self.key(space), self.model._meta.client
        with server_errors(client):
            return run_calls(client, [ScriptCall(script, [key], args) for args in calls])

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    aadd = async_variant(add)
    amight_exist = async_variant(might_exist)
    adefinitely_missing = async_variant(definitely_missing)
    amight_exist_many = async_variant(might_exist_many)
    afill_ratio = async_variant(fill_ratio)


class ExistenceCheck:
    """The search of :meth:`ExistenceFilter.check`: per text, may any of its terms be in one
    partition's filter. The distinct terms of all texts are checked once, in calls of at most
    MAX_ARGS arguments."""

    def __init__(self, field: ExistenceFilter, space: KeySpace, term_lists: list[list[str]]) -> None:
        self.term_lists = term_lists
        self.distinct = list(dict.fromkeys(term for terms in self.term_lists for term in terms))
        key = field.key(space)
        self._calls = [ScriptCall("bloom_check", [key], args) for args in field._script_args(self.distinct)]

    def calls(self) -> list[ScriptCall]:
        return list(self._calls)

    def finish(self, replies: list[Any]) -> list[bool]:
        flags = [flag for reply in replies for flag in reply]
        present = {term for term, flag in zip(self.distinct, flags) if flag}
        return [any(term in present for term in terms) for terms in self.term_lists]


def _existence_filter(model: type[Model], name: str | None) -> ExistenceFilter:
    """The model's ExistenceFilter called ``name``, or its only one when ``name`` is None."""
    filters = {f.name: f for f in model._meta.fields_of(ExistenceFilter)}
    if name is None and len(filters) == 1:
        return next(iter(filters.values()))
    if name in filters:
        return filters[name]
    raise QueryException(
        f"{model.__name__} has ExistenceFilter fields {sorted(filters)}; name one with field=..."
    )


def might_exist(query: Any, text: str, field: str | None = None) -> bool:
    """``Model.query.filter(<partition>).might_exist(text)``: may any term of ``text`` be there?"""
    return _existence_filter(query.model, field).check(query.partition(), [text])[0]


def definitely_missing(query: Any, text: str, field: str | None = None) -> bool:
    """``Model.query.filter(<partition>).definitely_missing(text)``: negation of ``might_exist``."""
    return not might_exist(query, text, field)


def might_exist_many(query: Any, texts: Iterable[str], field: str | None = None) -> list[bool]:
    """``Model.query.filter(<partition>).might_exist_many(texts)``: one answer per text, one round trip."""
    return _existence_filter(query.model, field).check(query.partition(), texts)
