"""Key schema: every key of a partition shares one hash tag, user values are escaped.

Layout::

    <prefix>:<Model>:{<partition>}:<kind>[:<part>...]

``<partition>`` is the escaped value of the model's partition field(s) joined by ``:``; models
without a partition use the fixed tag ``{%g}`` (one slot for the whole model). Escaping is
percent-encoding of the bytes that carry meaning in a key name, so it is injective: no user
value can leave its slot, collide with another key or act as a glob pattern. Every ``<kind>``
the core writes is one member of :class:`KeyKind`; a recipe (or the lifecycle, retention, the
demo command) declares its own kinds beside it in a ``StrEnum`` named ``<Owner>KeyKind``, and
``tests/unit/store/test_keys.py`` checks that no two owners take one value.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import StrEnum, unique

from ._errors import ConfigurationError
from ._validation import utf8_text

__all__ = ["escape", "unescape", "KeySpace", "KeyKind", "GLOBAL_TAG", "EMPTY_VALUE"]

#: Characters with a meaning in key names: hash tags, our separator, glob patterns, the escape.
_SPECIAL = set("{}:*?[]\\%^")
#: ASCII text that needs no escaping (the common case, checked without a per-character loop).
_PLAIN_ASCII = re.compile(r"[^\x00-\x20\x7f" + re.escape("".join(sorted(_SPECIAL))) + "]*")
#: Stand-in for the empty string ("%" followed by a non-hex letter never comes out of escaping).
EMPTY_VALUE = "%_"
#: Tag of keys that belong to no partition (unpartitioned models, model-wide registries).
GLOBAL_TAG = "%g"


@unique
class KeyKind(StrEnum):
    """The core's kinds of key: the part after the hash tag, ``<prefix>:<Model>:{<tag>}:<kind>[:...]``.

    One table for the store, the model, the primitives and the observation mixins (``@unique``:
    a kind cannot be taken twice); each module builds its keys from its member, e.g.
    ``space.key(KeyKind.CONFIDENCE, field_name)``. Recipes declare their own kinds beside them.
    """

    #: hash: one record's fields (``r:<record id>``)
    RECORD = "r"
    #: sorted set: every record id of the partition, all scores 0
    ALL_RECORDS = "all"
    #: sorted set: a SortedField's index (``z:<field>``)
    SORTED = "z"
    #: set: ids of the records carrying a tag (``t:<field>:<tag>``)
    TAG = "t"
    #: set: ids of the records whose key field holds a value (``k:<field>:<value>``)
    KEY_VALUE = "k"
    #: set: the partition registry of a partitioned model (under ``{%g}``)
    PARTITIONS = "partitions"
    #: string: the stored reply of one write, so a resent write is applied once (``op:<uuid>``)
    OPERATION = "op"
    #: sorted sets: a DecayingSortedField's times, base scores and order keys (``d:<field>:<part>``)
    DECAY = "d"
    #: sorted sets: a CyclicDecayField's indexes (``y:<field>:<part>``)
    CYCLIC = "y"
    #: sorted set: a ConfidenceField's confidence by record id (``cf:<field>``)
    CONFIDENCE = "cf"
    #: hash and sorted sets: a CoOccurrenceField's graph (``co:<field>:w|adj|in``)
    GRAPH = "co"
    #: sorted sets, hashes: a BM25Field's postings and statistics (``b:<field>:<version>:<part>``)
    BM25 = "b"
    #: hash and stream: an EmbeddingField's vectors and change log (``v:<field>[:<part>]``)
    VECTOR = "v"
    #: string (bitmap): an ExistenceFilter (``bf:<field>``)
    BLOOM = "bf"
    #: string (BITFIELD): a FrequencySketch (``cm:<field>``)
    SKETCH = "cm"
    #: sorted set: WriteFilterMixin's priority records by filter score
    PRIORITY = "wp"
    #: list: AccessTrackerMixin's staged read times (``as:<record id>``)
    STAGED_READS = "as"
    #: string: how many reads of a record are staged (``asc:<record id>``)
    STAGED_COUNT = "asc"
    #: list: AccessTrackerMixin's confirmed access times (``al:<record id>``)
    ACCESS_LOG = "al"
    #: stream: EventStreamMixin's events
    EVENTS = "ev"
    #: hash: a record's open prediction (``pr:<record id>``)
    PREDICTION = "pr"
    #: sorted set: PredictionLedgerMixin's resolved errors by entry
    PREDICTION_ERRORS = "pe"
    #: sorted set: PredictionLedgerMixin's entries by resolution time
    PREDICTION_TIMES = "pt"
    #: hash: PredictionLedgerMixin's entry details (JSON)
    PREDICTION_DETAILS = "ph"
    #: string: the model's recorded schema, JSON (under ``{%g}``: one key per model, any deployment)
    SCHEMA = "schema"
    #: string: how far a migration got in a partition, the last record id rewritten (``mg:<migration id>``)
    MIGRATION = "mg"
    #: sorted set and string: a DecayingSortedField's exact order at one time, built for the
    #: inspector's decay sort (``ds:<field>``, ``ds:<field>:at``, the time, and
    #: ``ds:<field>:building``, the build lock), a derived cache with a TTL
    DECAY_SNAPSHOT = "ds"


def _needs_escape(char: str) -> bool:
    return char in _SPECIAL or char.isspace() or not char.isprintable()


def escape(value: str) -> str:
    """Percent-encode the characters of ``value`` that could change a key's meaning.

    ValidationError for a value that cannot be written as UTF-8 (a lone surrogate).
    """
    if value == "":
        return EMPTY_VALUE
    if value.isascii() and _PLAIN_ASCII.fullmatch(value):
        return value
    if not any(_needs_escape(c) for c in value):
        return value
    utf8_text("a key value", value)
    return "".join(
        "".join(f"%{b:02X}" for b in c.encode("utf-8")) if _needs_escape(c) else c
        for c in value
    )


def unescape(escaped: str) -> str:
    """Invert :func:`escape`."""
    if escaped == EMPTY_VALUE:
        return ""
    if "%" not in escaped:
        return escaped
    out = bytearray()
    i = 0
    while i < len(escaped):
        if escaped[i] == "%":
            out.append(int(escaped[i + 1 : i + 3], 16))
            i += 3
        else:
            out += escaped[i].encode("utf-8")
            i += 1
    return out.decode("utf-8")


def check_name(name: str, what: str) -> str:
    """Reject prefixes and model names that would break the key layout."""
    if not name or any(_needs_escape(c) for c in name):
        raise ConfigurationError(
            f"{what} {name!r} must be non-empty and free of {''.join(sorted(_SPECIAL))}, "
            "whitespace and control characters"
        )
    return name


@dataclass(frozen=True, order=True)
class KeySpace:
    """The keys of one model in one partition: ``<prefix>:<model>:{<tag>}``."""

    prefix: str
    model: str
    tag: str = GLOBAL_TAG

    @classmethod
    def for_partition(cls, prefix: str, model: str, values: tuple[str, ...]) -> KeySpace:
        """The key space of the partition whose field values are ``values`` (empty: unpartitioned)."""
        tag = ":".join(escape(v) for v in values) if values else GLOBAL_TAG
        return cls(prefix, model, tag)

    @property
    def base(self) -> str:
        return f"{self.prefix}:{self.model}:{{{self.tag}}}"

    @functools.cached_property
    def partition_values(self) -> tuple[str, ...]:
        """The partition field values this key space was built from (parsed once per key space:
        every record loaded from a partition reads them)."""
        if self.tag == GLOBAL_TAG:
            return ()
        return tuple(unescape(part) for part in self.tag.split(":"))

    def key(self, *parts: str) -> str:
        """A key of this partition; ``parts`` are library-chosen names, joined with ``:``."""
        return ":".join((self.base, *parts))

    def record(self, record_id: str) -> str:
        """The hash holding one record, ``record_id`` being its escaped key values."""
        return f"{self.base}:{KeyKind.RECORD}:{record_id}" if record_id else f"{self.base}:{KeyKind.RECORD}"

    def value_key(self, kind: StrEnum, field: str, value: str) -> str:
        """A per-value index key, e.g. the set of records whose tag field holds ``value``."""
        return f"{self.base}:{kind}:{field}:{escape(value)}"
