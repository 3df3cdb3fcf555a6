"""Options: what the metaclass learns about a model (its fields, keys and partition)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..store.connection import get_client, settings
from ..store.errors import ModelException
from ..store.keys import GLOBAL_TAG, KeySpace, check_name, escape
from .field import Field
from .query_methods import QueryMethod, collect_query_methods

if TYPE_CHECKING:
    from .indexed import KeyField

__all__ = ["Options"]

#: How many partitions' key spaces a model keeps (saves and queries of one tenant reuse them).
_KEPT_SPACES = 1024
#: A kind of field looked up with :meth:`Options.fields_of`.
F = TypeVar("F")


@dataclass
class Options:
    """Per-model facts, available as ``Model._meta``."""

    name: str
    fields: dict[str, Field[Any]]
    abstract: bool = False
    key_fields: tuple[str, ...] = ()
    partition_fields: tuple[str, ...] = ()
    id_fields: tuple[str, ...] = field(default=())
    #: The operations its queries offer (``query.keyword_search(..)``), from its fields and classes.
    query_methods: dict[str, QueryMethod] = field(default_factory=dict)
    _spaces: dict[tuple[str, tuple[Any, ...]], KeySpace] = field(default_factory=dict, repr=False, compare=False)
    _by_kind: dict[type, tuple[Any, ...]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, model: type, fields: dict[str, Field[Any]], meta: Any) -> Options:
        """Collect keys, the single partition and the query methods of a model, rejecting
        inconsistent declarations."""
        model_name = model.__name__
        abstract = bool(getattr(meta, "abstract", False))
        name = check_name(getattr(meta, "name", model_name), "model name")
        keys = tuple(n for n, f in fields.items() if f.is_key)
        partitions = {f.partition_by for f in fields.values() if f.partition_by}
        if len(partitions) > 1:
            raise ModelException(
                f"{model_name}: fields name different partitions {sorted(partitions)}; "
                "a model has at most one partition"
            )
        partition = partitions.pop() if partitions else ()
        for part in partition:
            if part not in keys:
                raise ModelException(
                    f"{model_name}: partition_by names {part!r}, which must be a KeyField of the model"
                )
        if not abstract and not keys:
            raise ModelException(f"{model_name} needs a KeyField or AutoKeyField")
        ids = tuple(k for k in keys if k not in partition)
        return cls(name, fields, abstract, keys, partition, ids, collect_query_methods(model, fields.values()))

    @property
    def client(self) -> Any:
        return get_client()

    def keyspace(self, partition_values: tuple[Any, ...] = ()) -> KeySpace:
        """The key space of one partition (``()`` for an unpartitioned model); the last few are kept."""
        prefix = settings().key_prefix
        space = self._spaces.get((prefix, partition_values))
        if space is None:
            texts = tuple(self.key_field(n).key_text(v) for n, v in zip(self.partition_fields, partition_values))
            space = KeySpace.for_partition(prefix, self.name, texts)
            if len(self._spaces) >= _KEPT_SPACES:
                self._spaces.clear()
            self._spaces[(prefix, partition_values)] = space
        return space

    def global_keyspace(self) -> KeySpace:
        """Keys that belong to the model as a whole (the registry of partitions)."""
        return KeySpace(settings().key_prefix, self.name, GLOBAL_TAG)

    def record_id(self, values: dict[str, Any]) -> str:
        """The escaped non-partition key values, joined: the record's name inside its partition."""
        return ":".join(escape(self.key_field(n).key_text(values[n])) for n in self.id_fields)

    def key_field(self, name: str) -> KeyField:
        """The key field ``name`` (a partition or id field: the metaclass checked it is a KeyField)."""
        return cast("KeyField", self.fields[name])

    def fields_of(self, kind: type[F]) -> tuple[F, ...]:
        """The model's fields of class ``kind`` (subclasses too), in declaration order; found once per kind."""
        found = self._by_kind.get(kind)
        if found is None:
            found = self._by_kind[kind] = tuple(f for f in self.fields.values() if isinstance(f, kind))
        return found

    def stored_fields(self) -> list[Field[Any]]:
        return [f for f in self.fields.values() if f.stored]
