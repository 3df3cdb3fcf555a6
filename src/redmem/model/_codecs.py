"""How Python values are written into a record hash so that ``redis-cli`` shows them plainly.

Strings as UTF-8, numbers as text, booleans as ``true``/``false``, lists and dicts as JSON,
datetimes as ISO 8601, bytes as they are.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..store._errors import ValidationError
from ..store._validation import is_int, is_int_or_float, utf8_text

__all__ = ["Codec", "codec_for", "finite_float"]


@dataclass(frozen=True)
class Codec:
    """Coerce, encode and decode functions for one Python type."""

    coerce: Callable[[Any, str], Any]
    encode: Callable[[Any], str | bytes]
    decode: Callable[[bytes], Any]


def _fail(label: str, expected: str, value: Any) -> ValidationError:
    return ValidationError(f"{label} expects {expected}, got {type(value).__name__} {value!r:.60}")


def _coerce_str(value: Any, label: str) -> str:
    if not isinstance(value, str):
        raise _fail(label, "str", value)
    return utf8_text(label, value)


def _coerce_int(value: Any, label: str) -> int:
    if not is_int(value):
        raise _fail(label, "int", value)
    checked: int = value
    return checked


def finite_float(value: Any, label: str) -> float:
    """``value`` as a float; bools, non-numbers, NaN and infinities raise ValidationError."""
    if not is_int_or_float(value):
        raise _fail(label, "a number", value)
    number = float(value)
    if not math.isfinite(number):
        raise ValidationError(f"{label} must be a finite number, got {number}")
    return number


def _coerce_bool(value: Any, label: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(label, "bool", value)
    return value


def _json_coercer(kind: type) -> Callable[[Any, str], Any]:
    def coerce(value: Any, label: str) -> Any:
        if kind is list and isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, kind):
            raise _fail(label, kind.__name__, value)
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"{label} must be JSON-serialisable: {exc}") from exc
        return value

    return coerce


def _encode_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _coerce_datetime(value: Any, label: str) -> datetime:
    if not isinstance(value, datetime):
        raise _fail(label, "datetime", value)
    return value


def _coerce_bytes(value: Any, label: str) -> bytes:
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if not isinstance(value, bytes):
        raise _fail(label, "bytes", value)
    return value


_CODECS: dict[type, Codec] = {
    str: Codec(_coerce_str, str, lambda raw: raw.decode("utf-8")),
    int: Codec(_coerce_int, str, lambda raw: int(raw)),
    float: Codec(finite_float, repr, lambda raw: float(raw)),
    bool: Codec(_coerce_bool, lambda v: "true" if v else "false", lambda raw: raw == b"true"),
    list: Codec(_json_coercer(list), _encode_json, json.loads),
    dict: Codec(_json_coercer(dict), _encode_json, json.loads),
    datetime: Codec(_coerce_datetime, datetime.isoformat, lambda raw: datetime.fromisoformat(raw.decode())),
    bytes: Codec(_coerce_bytes, bytes, bytes),
}


def codec_for(python_type: type) -> Codec | None:
    """The codec of a supported type, or None."""
    return _CODECS.get(python_type)
