"""Key schema: every key of a partition shares one hash tag, user values are escaped.

Layout::

    <prefix>:<Model>:{<partition>}:<kind>[:<part>...]

``<partition>`` is the escaped value of the model's partition field(s) joined by ``:``; models
without a partition use the fixed tag ``{%g}`` (one slot for the whole model). Escaping is
percent-encoding of the bytes that carry meaning in a key name, so it is injective: no user
value can leave its slot, collide with another key or act as a glob pattern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ConfigurationError
from .validation import utf8_text

__all__ = ["escape", "unescape", "KeySpace", "GLOBAL_TAG", "EMPTY_VALUE"]

#: Characters with a meaning in key names: hash tags, our separator, glob patterns, the escape.
_SPECIAL = set("{}:*?[]\\%^")
#: ASCII text that needs no escaping (the common case, checked without a per-character loop).
_PLAIN_ASCII = re.compile(r"[^\x00-\x20\x7f" + re.escape("".join(sorted(_SPECIAL))) + "]*")
#: Stand-in for the empty string ("%" followed by a non-hex letter never comes out of escaping).
EMPTY_VALUE = "%_"
#: Tag of keys that belong to no partition (unpartitioned models, model-wide registries).
GLOBAL_TAG = "%g"


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

    @property
    def partition_values(self) -> tuple[str, ...]:
        """The partition field values this key space was built from."""
        if self.tag == GLOBAL_TAG:
            return ()
        return tuple(unescape(part) for part in self.tag.split(":"))

    def key(self, *parts: str) -> str:
        """A key of this partition; ``parts`` are library-chosen names, joined with ``:``."""
        return ":".join((self.base, *parts))

    def record(self, record_id: str) -> str:
        """The hash holding one record, ``record_id`` being its escaped key values."""
        return f"{self.base}:r:{record_id}" if record_id else f"{self.base}:r"

    def value_key(self, kind: str, field: str, value: str) -> str:
        """A per-value index key, e.g. the set of records whose tag field holds ``value``."""
        return f"{self.base}:{kind}:{field}:{escape(value)}"
