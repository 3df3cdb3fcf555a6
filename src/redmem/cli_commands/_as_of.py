"""``as_of`` of ``redmem ask --as-of`` and MCP ``recall``: a time to read the memory as it was.

Only a lifecycle model (:class:`~redmem.lifecycle.LifecycleMixin`) keeps superseded facts with
their validity window; for any other model a past read would silently show the present, so it is
refused with a ValidationError instead.
"""

from __future__ import annotations

import math
from typing import Any

from ..lifecycle import ALL_TIMES, LifecycleMixin
from ..store._errors import ValidationError
from ..store._validation import epoch_of
from ._conversation import parse_when

__all__ = ["parse_as_of", "as_of_where"]


def parse_as_of(text: str, where: str) -> float | str:
    """Epoch seconds from ``text``: a number (epoch seconds), ISO 8601 (a date alone is noon UTC)
    or ``all`` (every version); ValidationError naming ``where`` otherwise."""
    value = text.strip()
    if value == ALL_TIMES:
        return ALL_TIMES
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return seconds
    try:
        return epoch_of(parse_when(value, where))
    except ValidationError:
        raise ValidationError(f"{where}: {text!r} is not a time: use ISO 8601 (2024-05-01, 2024-05-01T09:30:00+00:00), "
                              f"epoch seconds or {ALL_TIMES!r}") from None


def as_of_where(model: type[Any], as_of: str | None, where: str) -> dict[str, Any] | None:
    """The ``where`` of an assembly reading ``model`` as of ``as_of`` (None: no condition, the
    current facts); ValidationError for a bad time or a model without the lifecycle."""
    if as_of is None:
        return None
    at = parse_as_of(as_of, where)
    if not issubclass(model, LifecycleMixin):
        raise ValidationError(f"{where}: {model.__name__} has no fact lifecycle (LifecycleMixin), so it keeps no "
                              "past versions to read; leave out the time to read its memories")
    return {"as_of": at}
