"""Model and its metaclass: a declared class of records with fields, keys and one partition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

from ..store._aio import async_variant, greenlet_spawn
from ..store._errors import ModelException, ValidationError
from ._batch import SaveBatch
from ._bulk import save_many
from ._dbkey import DbKey
from ._field import Field
from ._key_spaces import claim_key_space
from ._migration import MigrationReport, Progress, migrate
from ._options import Options
from ._persistence import delete_record, queue_fields_save, queue_fields_save_many, queue_removal, save_record
from ._query import Query
from ._text_limit import check_text_sizes
from .query_methods import QueryMethodProvider

__all__ = ["Model", "ModelMeta", "RecordMixin"]


class ModelMeta(type):
    """Collects fields (from mixins and bases too) in declaration order and builds ``_meta``."""

    _meta: Options

    def __new__(mcs, name: str, bases: tuple[Any, ...], namespace: dict[str, Any], **kwargs: Any) -> ModelMeta:
        meta = namespace.pop("Meta", None)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if not any(isinstance(base, ModelMeta) for base in bases):
            return cls  # the Model base class itself
        fields: dict[str, Field[Any]] = {}
        for klass in reversed(cls.__mro__[1:]):
            for attr, value in vars(klass).items():
                if isinstance(value, Field):
                    fields[attr] = value
        fields.update((attr, v) for attr, v in namespace.items() if isinstance(v, Field))
        for attr, field in list(fields.items()):
            if field.model is not None and field.model is not cls:
                field = field.clone()
                setattr(cls, attr, field)
                fields[attr] = field
            field.bind(cls, attr)
        cls._meta = Options.build(cls, fields, meta)
        if not cls._meta.abstract and getattr(meta, "name", None) is None:  # a Meta.name shares on purpose
            claim_key_space(cls, cls._meta.overrides.get("key_prefix"))
        return cls


class _QueryAccessor:
    """``Model.query``: a fresh :class:`Query` over the model."""

    def __get__(self, instance: Any, owner: type[Model]) -> Query:
        if instance is not None:
            raise AttributeError("query is reached through the model class, not an instance")
        if owner._meta.abstract:
            raise ModelException(f"{owner.__name__} is abstract and has no records")
        return Query(owner)


class Model(metaclass=ModelMeta):
    """Base class of records. Declare fields as class attributes; ``save()`` stores them."""

    _meta: ClassVar[Options]
    query: ClassVar[Query] = _QueryAccessor()  # type: ignore[assignment]

    def __init__(self, **values: Any) -> None:
        fields = self._meta.fields
        unknown = set(values) - set(fields)
        if unknown:
            raise ValidationError(f"{type(self).__name__} has no field(s) {', '.join(sorted(unknown))}")
        for name, field in fields.items():
            if name in values:
                setattr(self, name, values[name])
            elif field.stored and field.held_on_record:
                setattr(self, name, field.default())
        self._saved_key: DbKey | None = None
        self._was_stored = False  # read from Redis or saved: a missing hash then means deleted since

    @classmethod
    def create(cls, /, **values: Any) -> Self:
        """Build and save a record in one call."""
        instance = cls(**values)
        instance.save()
        return instance

    @classmethod
    def save_many(cls, instances: list[Self], chunk_size: int = 1000) -> int:
        """Save many records fast: new auto-keyed records go in one atomic batch per partition and chunk
        of at most ``chunk_size`` records (the first chunks smaller), the others one by one.

        Every record is checked and embedded before the first write: an invalid record or a
        failing embedding provider raises with nothing stored.
        """
        return save_many(cls, list(instances), chunk_size)

    @classmethod
    def migrate(
        cls, rename: dict[str, str] | None = None, batch_size: int = 500, progress: Progress | None = None
    ) -> MigrationReport:
        """Bring stored records to this model: move renamed entries (``rename``: old -> new name) and
        build the indexes they lack, exactly once and resumable after a crash (docs/models.md)."""
        return migrate(cls, rename, batch_size, progress)

    @property
    def db_key(self) -> DbKey:
        """Where this record lives; needs every key field set (an AutoKeyField is set by save)."""
        meta = self._meta
        values = {name: getattr(self, name) for name in meta.key_fields}
        missing = [name for name, value in values.items() if value is None]
        if missing:
            raise ValidationError(f"{type(self).__name__} has no value for key field(s) {missing}")
        partition = tuple(values[name] for name in meta.partition_fields)
        return DbKey(meta.keyspace(partition), meta.record_id(values))

    def to_dict(self) -> dict[str, Any]:
        """The stored field values by name."""
        return {f.name: f.record_value(self) for f in self._meta.stored_fields()}

    def validated_values(self) -> dict[str, Any]:
        """Every stored field's value, checked and coerced; raises ValidationError naming the field
        (MemoryTooLarge for a text over the write-size limit, :mod:`redmem.model._text_limit`)."""
        values = {}
        for field in self._meta.stored_fields():
            values[field.name] = field.validate(field.record_value(self))
            if field.held_on_record:
                setattr(self, field.name, values[field.name])
        check_text_sizes(type(self), values)
        return values

    def save(self) -> bool:
        """Write the record and all its indexes in one atomic batch; returns True when written."""
        save_record(self)
        return True

    def delete(self) -> bool:
        """Remove the record and every index entry; False if it was not stored."""
        return delete_record(self)

    def touch(self, *field_names: str) -> None:
        """Refresh the named fields' timestamps (every touchable field when none is named)."""
        fields = self._meta.fields
        unknown = [n for n in field_names if n not in fields]
        if unknown:
            raise ValidationError(f"{type(self).__name__} has no field(s) {unknown}")
        chosen = [fields[n] for n in field_names] or list(fields.values())
        touchable: list[Any] = [f for f in chosen if callable(getattr(f, "touch", None))]
        if field_names and len(touchable) != len(chosen):
            untouchable = [f.name for f in chosen if f not in touchable]
            raise ValidationError(f"{type(self).__name__} field(s) {untouchable} cannot be touched")
        for field in touchable:
            field.touch(self)

    @classmethod
    def queue_read_effects(cls, pipe: Any, keys: list[DbKey]) -> None:
        """Queue what reading these records implies (mixins stage accesses); nothing by default."""

    def queue_save(self, batch: SaveBatch) -> None:
        """Queue the writes of this record's fields; mixins extend it (and call super) to add theirs."""
        queue_fields_save(batch)

    @classmethod
    def queue_save_many(cls, batches: list[SaveBatch]) -> None:
        """Queue the writes of many new records' fields (one partition, one transaction), merged per field.

        A model or mixin that extends :meth:`queue_save` writes more per record, so its records
        then go through :meth:`queue_save` one by one.
        """
        if cls.queue_save is Model.queue_save:
            queue_fields_save_many(batches)
        else:
            for batch in batches:
                batch.instance.queue_save(batch)

    def queue_delete(self, batch: SaveBatch) -> None:
        """Queue the removal of this record and its index entries; mixins extend it like queue_save."""
        queue_removal(batch)

    # The asyncio API (docs/asyncio.md): each runs its sync twin over redis.asyncio.
    @classmethod
    async def acreate(cls, /, **values: Any) -> Self:
        """``await`` form of :meth:`create` (written out: a class attribute cannot carry ``Self``)."""
        return await greenlet_spawn(cls.create, **values)

    asave_many = async_variant(save_many)
    asave = async_variant(save)
    adelete = async_variant(delete)
    atouch = async_variant(touch)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        """Hash of the class and the key field values, so records can key a dict or fill a set.

        Equal records hold equal key values, hence hash alike. Do not change a key field of a
        record held in a dict or set. ValidationError for a record whose key is not set yet (an
        AutoKeyField before the first save).
        """
        key = {name: getattr(self, name) for name in self._meta.key_fields}
        missing = [name for name, value in key.items() if value is None]
        if missing:
            raise ValidationError(f"{type(self).__name__} has no value for key field(s) {missing}: "
                                  "a record is hashable once its key is set (save it first)")
        return hash((type(self), tuple(key.values())))

    def __repr__(self) -> str:
        keys = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._meta.key_fields)
        return f"<{type(self).__name__} {keys}>"


if TYPE_CHECKING:
    #: Base of the record mixins: Model for type checkers (a mixin's ``self`` is a record), a
    #: plain class at run time so a mixin stays out of the model hierarchy until a model lists it.
    RecordMixin = Model
else:

    class RecordMixin(QueryMethodProvider):
        """Base of the record mixins; a mixin's ``query_methods()`` go to the models that list it."""
