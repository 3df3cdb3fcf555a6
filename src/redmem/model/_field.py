"""The Field base class: validation, hash encoding, and the hooks that join a field to saves."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, overload

from ..store._errors import ModelException, ValidationError
from ._codecs import Codec, codec_for
from .query_methods import QueryMethodProvider

if TYPE_CHECKING:
    from ._batch import SaveBatch

__all__ = ["Field", "MISSING"]

#: The Python type of a field's value on a record (``str`` for a StringField).
T = TypeVar("T")


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: Marker for "no default given" (None is a legitimate default).
MISSING: Any = _Missing()


class Field(QueryMethodProvider, Generic[T]):
    """A model attribute stored as one entry of the record's Redis hash.

    Subclasses set ``python_type`` and may override :meth:`coerce`, :meth:`encode`,
    :meth:`decode`, and the save hooks :meth:`on_save` / :meth:`on_delete` that add index writes
    to the record's atomic batch (and :meth:`on_save_many`, the same for a chunk of records);
    :meth:`query_methods` offers the searches of a primitive to its model's queries.
    ``T`` is the value's type on a record: ``record.content`` is a ``str`` for a StringField.
    """

    # A record holds a stored field's value as an instance attribute, which shadows the field
    # (a non-data descriptor); on the class the attribute is the field, so its methods stay there
    # (``Memory.confidence.update_confidence(..)``). A primitive whose value the record does not
    # hold (a confidence, a decayed score) computes it in :meth:`value_of`.
    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, instance: object, owner: type[Any]) -> T: ...
    def __get__(self, instance: object, owner: type[Any]) -> Self | T:
        if instance is None:
            return self
        value: T = self.value_of(instance)
        return value

    if TYPE_CHECKING:
        def __set__(self, instance: object, value: T | None) -> None: ...

    python_type: type = str
    #: False for fields whose state lives outside the record hash (indexes, filters).
    stored = True
    #: True for fields that name the record (KeyField and its subclasses).
    is_key = False
    #: False for stored bookkeeping a language model should not be shown (e.g. cyclic amplitudes).
    shown = True
    #: False for a stored field whose record attribute is not its hash entry (:meth:`record_value`).
    held_on_record = True

    def __init__(
        self,
        type: type | None = None,
        *,
        null: bool = True,
        default: Any = MISSING,
        max_length: int | None = None,
        partition_by: str | tuple[str, ...] | None = None,
    ) -> None:
        self.null = null
        self._default = default
        self.max_length = max_length
        self.partition_by = _as_tuple(partition_by)
        if type is not None:
            self.python_type = type
        codec = codec_for(self.python_type)
        if codec is None:
            raise ModelException(f"unsupported field type {self.python_type!r}")
        self.codec: Codec = codec
        self.model: Any = None
        self.name = ""

    # -- joining the model -------------------------------------------------------------------
    def bind(self, model: Any, name: str) -> None:
        """Record which model attribute this field is (called by the metaclass)."""
        self.model, self.name = model, name

    def clone(self) -> Self:
        """A copy for a subclass that inherits this field (so ``bind`` does not clash)."""
        return copy.copy(self)

    @property
    def label(self) -> str:
        model = self.model.__name__ if self.model is not None else "?"
        return f"{model}.{self.name}"

    # -- values ------------------------------------------------------------------------------
    def default(self) -> Any:
        """The value of a new instance that was not given this field."""
        value = self._default
        if value is MISSING:
            return None
        return value() if callable(value) else copy.deepcopy(value)

    def validate(self, value: Any) -> Any:
        """Return ``value`` checked and coerced, or raise :class:`ValidationError`."""
        if value is None:
            if not self.null:
                raise ValidationError(f"{self.label} may not be None")
            return None
        value = self.coerce(value)
        if self.max_length is not None and len(value) > self.max_length:
            raise ValidationError(
                f"{self.label} is {len(value)} long, over max_length {self.max_length}"
            )
        return value

    def coerce(self, value: Any) -> Any:
        """Check the type of a non-None value, converting where it is lossless (int -> float)."""
        return self.codec.coerce(value, self.label)

    def encode(self, value: Any) -> str | bytes:
        """What the record hash holds for a non-None value."""
        return self.codec.encode(value)

    def decode(self, raw: bytes) -> Any:
        """Inverse of :meth:`encode`."""
        return self.codec.decode(raw)

    def before_save(self, instance: Any, creating: bool) -> None:
        """Adjust the instance's value just before it is validated and saved."""

    def before_save_many(self, instances: list[Any], creating: bool) -> None:
        """:meth:`before_save` of many instances before any is written (a field may batch the work)."""
        for instance in instances:
            self.before_save(instance, creating)

    def value_of(self, instance: Any) -> Any:
        """The value of a record that holds none for this field; an index field has none (AttributeError)."""
        raise AttributeError(
            f"{self.label} is an index ({type(self).__name__}), not a value of a record: its methods are "
            f"on the class ({self.label}.<method>(record, ...)) and its searches on {self.label.split('.')[0]}.query"
        )

    def record_value(self, instance: Any) -> Any:
        """What the record hash holds for this stored field (the instance's attribute, unless a
        field keeps its hash entry for itself, as a CyclicDecayField does)."""
        return getattr(instance, self.name)

    def loaded_value(self, raw: dict[bytes, bytes]) -> Any:
        """The value a record read with HGETALL (``raw``) takes without another read; MISSING: none
        (the attribute then comes from :meth:`value_of` at each access)."""
        return MISSING

    # -- taking part in saves ----------------------------------------------------------------
    #: True when :meth:`prepare` reads Redis, so even a brand-new record's save must WATCH.
    reads_before_write = False

    def prepare(self, reader: Any, batch: SaveBatch) -> Any:
        """Read what the write will need, under the record's WATCH; the result is ``batch.prepared[name]``.

        ``reader`` executes immediately; call ``reader.watch(*keys)`` first to guard more keys.
        """
        return None

    def on_save(self, batch: SaveBatch, old: dict[str, Any] | None) -> None:
        """Queue this field's index writes for the record being saved (``old``: stored values)."""

    def on_save_many(self, batches: list[SaveBatch]) -> None:
        """Queue the index writes of many records of one partition saved in one transaction.

        Fields override it to merge the writes (one command or script per index key instead of
        one per record); the stored result must equal that of :meth:`on_save` record by record.
        """
        for batch in batches:
            self.on_save(batch, batch.old)

    def on_delete(self, batch: SaveBatch, old: dict[str, Any]) -> None:
        """Queue the removal of this field's index entries for a record being deleted."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label}>"


def _as_tuple(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)
