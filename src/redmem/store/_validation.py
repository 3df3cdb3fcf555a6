"""Checks of public arguments, one per kind of value: each returns the value (normalised) or
raises a typed error that names the argument and the values it accepts.

Under them sit small composable kind checks (:func:`instance_of`, :func:`finite`): the one place
that says a bool is not a number, for the checks here and for the modules that word their own
errors.

A value of the wrong type raises :class:`ArgumentTypeError` (a ValidationError that is also a
TypeError), a value of the right type out of range raises :class:`ValidationError`. ``error``
picks another family: :class:`QueryArgumentError` for the arguments of query methods (its
wrong-type flavour is :class:`QueryArgumentTypeError`), or a declaration error such as
ModelException, raised for both failures.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from numbers import Integral, Real
from typing import Any, Literal, TypeVar, overload

from ._errors import (
    ArgumentTypeError,
    QueryArgumentError,
    QueryArgumentTypeError,
    RedmemError,
    ValidationError,
)

__all__ = [
    "instance_of",
    "finite",
    "is_int",
    "is_integral",
    "is_real",
    "is_int_or_float",
    "is_finite_number",
    "integer",
    "positive_int",
    "non_negative_int",
    "finite_number",
    "one_of",
    "boolean",
    "text_or_none",
    "timestamp",
    "epoch_of",
    "utf8_text",
    "subclass_of",
    "tenant",
]

#: The wrong-type flavour of each value-error family (the others raise one class for both).
_TYPE_ERRORS: dict[type[RedmemError], type[RedmemError]] = {
    ValidationError: ArgumentTypeError,
    QueryArgumentError: QueryArgumentTypeError,
}


#: The class a :func:`subclass_of` check asks for.
_T = TypeVar("_T")

#: A check of one value's kind: True when the value is acceptable.
Check = Callable[[Any], bool]


def instance_of(*kinds: type, exclude: tuple[type, ...] = (bool,)) -> Check:
    """A check that a value is an instance of one of ``kinds`` and of none of ``exclude``.

    By default bools are excluded: Python counts ``True`` as the int 1, but a bool given as a
    count, a score or a record id is a mistake.
    """

    def check(value: Any) -> bool:
        return isinstance(value, kinds) and not isinstance(value, exclude)

    return check


def finite(check: Check) -> Check:
    """``check``, and the value is finite: NaN and the infinities fail."""

    def finite_check(value: Any) -> bool:
        return check(value) and math.isfinite(value)

    return finite_check


#: An int (a bool is not one).
is_int = instance_of(int)
#: An integral number: an int or any ``numbers.Integral`` such as numpy's integers (a bool is not one).
is_integral = instance_of(Integral)
#: A real number: an int, a float or any ``numbers.Real`` such as a Fraction (a bool is not one).
is_real = instance_of(Real)
#: An int or a float, subclasses included (a bool is not one).
is_int_or_float = instance_of(int, float)
#: A finite int or float: not NaN, not an infinity (a bool is not one).
is_finite_number = finite(is_int_or_float)


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.60}" if not isinstance(value, (Real, type(None))) else repr(value)


def _fail(error: type[RedmemError], name: str, accepted: str, value: Any, *, wrong_type: bool) -> RedmemError:
    kind = _TYPE_ERRORS.get(error, error) if wrong_type else error
    return kind(f"{name} must be {accepted}, got {_shown(value)}")


@overload
def integer(
    name: str, value: Any, *, low: int | None = ..., none: Literal[False] = ..., error: type[RedmemError] = ...,
) -> int: ...
@overload
def integer(
    name: str, value: Any, *, low: int | None = ..., none: bool, error: type[RedmemError] = ...,
) -> int | None: ...
def integer(
    name: str, value: Any, *, low: int | None = None, none: bool = False,
    error: type[RedmemError] = ValidationError,
) -> int | None:
    """``value`` as an int >= ``low`` (None too when ``none``); bools are not ints."""
    accepted = "an int" + (f" >= {low}" if low is not None else "") + (" or None" if none else "")
    if value is None and none:
        return None
    if not is_integral(value):
        raise _fail(error, name, accepted, value, wrong_type=True)
    if low is not None and value < low:
        raise _fail(error, name, accepted, value, wrong_type=False)
    return int(value)


@overload
def positive_int(
    name: str, value: Any, *, none: Literal[False] = ..., error: type[RedmemError] = ...,
) -> int: ...
@overload
def positive_int(
    name: str, value: Any, *, none: bool, error: type[RedmemError] = ...,
) -> int | None: ...
def positive_int(name: str, value: Any, *, none: bool = False, error: type[RedmemError] = ValidationError) -> int | None:
    """``value`` as an int >= 1 (see :func:`integer`)."""
    return integer(name, value, low=1, none=none, error=error)


@overload
def non_negative_int(
    name: str, value: Any, *, none: Literal[False] = ..., error: type[RedmemError] = ...,
) -> int: ...
@overload
def non_negative_int(
    name: str, value: Any, *, none: bool, error: type[RedmemError] = ...,
) -> int | None: ...
def non_negative_int(
    name: str, value: Any, *, none: bool = False, error: type[RedmemError] = ValidationError,
) -> int | None:
    """``value`` as an int >= 0 (see :func:`integer`)."""
    return integer(name, value, low=0, none=none, error=error)


@overload
def finite_number(
    name: str, value: Any, *, low: float | None = ..., high: float | None = ..., none: Literal[False] = ..., error: type[RedmemError] = ...,
) -> float: ...
@overload
def finite_number(
    name: str, value: Any, *, low: float | None = ..., high: float | None = ..., none: bool, error: type[RedmemError] = ...,
) -> float | None: ...
def finite_number(
    name: str, value: Any, *, low: float | None = None, high: float | None = None, none: bool = False,
    error: type[RedmemError] = ValidationError,
) -> float | None:
    """``value`` as a finite float in [``low``, ``high``] (either bound optional; None too when ``none``)."""
    bounds = f" in [{low}, {high}]" if low is not None and high is not None else (
        f" >= {low}" if low is not None else f" <= {high}" if high is not None else "")
    accepted = f"a finite number{bounds}" + (" or None" if none else "")
    if value is None and none:
        return None
    if not is_real(value):
        raise _fail(error, name, accepted, value, wrong_type=True)
    number = float(value)
    if not math.isfinite(number) or (low is not None and number < low) or (high is not None and number > high):
        raise _fail(error, name, accepted, value, wrong_type=False)
    return number


def one_of(name: str, value: Any, choices: Collection[Any], *, error: type[RedmemError] = ValidationError) -> Any:
    """``value`` if it is one of ``choices``."""
    try:
        known = value in choices
    except TypeError:  # unhashable: not one of the choices
        known = False
    if not known:
        raise error(f"{name} must be one of {list(choices)}, got {_shown(value)}")
    return value


def boolean(name: str, value: Any) -> bool:
    """``value`` if it is a bool (1, 0 and None are not: a flag given a count is a mistake)."""
    if not isinstance(value, bool):
        raise _fail(ValidationError, name, "True or False", value, wrong_type=True)
    return value


def text_or_none(name: str, value: Any) -> str | None:
    """``value`` if it is None or a non-empty str."""
    if value is not None and not (isinstance(value, str) and value):
        raise _fail(ValidationError, name, "a field name (a non-empty str) or None", value,
                    wrong_type=not isinstance(value, str))
    return value


def timestamp(name: str, value: Any) -> float:
    """Seconds since the epoch of ``value``: a datetime (naive taken as UTC) or a finite number;
    None is the current time. NaN, infinities, bools and strings raise before anything is written."""
    if value is None:
        return time.time()
    if isinstance(value, datetime):
        return epoch_of(value)
    accepted = "epoch seconds (a finite number), a datetime or None"
    if not is_real(value):
        raise _fail(ValidationError, name, accepted, value, wrong_type=True)
    if not math.isfinite(value):
        raise _fail(ValidationError, name, accepted, value, wrong_type=False)
    return float(value)


def epoch_of(value: datetime) -> float:
    """Seconds since the epoch of a datetime; a naive one is taken as UTC."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def utf8_text(name: str, value: str) -> str:
    """``value`` if it can be written as UTF-8: a lone surrogate (``"\\udcff"``) cannot."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValidationError(
                f"{name} must be text encodable as UTF-8, got a lone surrogate {value[exc.start]!r} "
                f"at position {exc.start}"
            ) from None
    return value


def subclass_of(name: str, value: Any, base: type[_T], accepted: str) -> type[_T]:
    """``value`` if it is a class derived from ``base``; ``accepted`` says what that is in words."""
    if not (isinstance(value, type) and issubclass(value, base)):
        raise _fail(ValidationError, name, accepted, value, wrong_type=True)
    return value


def tenant(name: str, value: Any) -> Any:
    """``value`` if it can name a tenant (a partition): not an empty or all-whitespace str.

    The one check of every path that takes a tenant (saves, queries, recipes), so each refuses
    a blank one with the same error instead of filing records under it.
    """
    if isinstance(value, str) and not value.strip():
        raise ValidationError(f"{name} names the tenant and must not be empty or blank, got {value!r}")
    return value
