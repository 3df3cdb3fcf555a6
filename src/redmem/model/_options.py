"""Options: what the metaclass learns about a model (its fields, keys, partition and settings).

A model's inner ``class Meta`` may set ``name`` (used in keys; default: the class name),
``abstract`` (no records of its own), ``partition_by`` (the tenant: the key field(s) every
field and search of the model is partitioned by, inherited by subclasses; a field's own
``partition_by=`` says the same) and any library setting of :func:`redmem.configure` for
this model alone: ``client``, ``async_client``, ``key_prefix``, ``embedding_provider``, ``token_counter``,
``partition_registry``. A subclass inherits its bases' settings (as walrus models share their
base's database), not their name or abstractness; a setting no Meta gives is the configured
default, read at each use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..store._aio import in_worker, loop_facade
from ..store._connection import SETTING_NAMES, checked_settings, get_client, resolved_client, settings
from ..store._errors import ConfigurationError, ModelException
from ..store._keys import GLOBAL_TAG, KeySpace, check_name, escape
from ._field import Field
from ._schema import check_once
from .query_methods import QueryMethod, collect_query_methods

if TYPE_CHECKING:
    from ._indexed import KeyField

__all__ = ["Options", "shared_client"]

#: How many partitions' key spaces a model keeps (saves and queries of one tenant reuse them).
_KEPT_SPACES = 1024
#: A kind of field looked up with :meth:`Options.fields_of`.
F = TypeVar("F")
#: What a model's ``Meta`` may set besides the library settings.
_MODEL_OPTIONS = ("name", "abstract", "partition_by")


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
    #: The library settings its ``Meta`` or a base model's overrides, by name (the others: the defaults).
    overrides: dict[str, Any] = field(default_factory=dict)
    _spaces: dict[tuple[str, tuple[Any, ...]], KeySpace] = field(default_factory=dict, repr=False, compare=False)
    _by_kind: dict[type, tuple[Any, ...]] = field(default_factory=dict, repr=False, compare=False)
    #: How its records' hashes are read (:mod:`redmem.model._loading`), worked out at the first load.
    _load_plan: Any = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def build(cls, model: type, fields: dict[str, Field[Any]], meta: Any) -> Options:
        """Collect keys, the single partition and the query methods of a model, rejecting
        inconsistent declarations."""
        model_name = model.__name__
        declared = _declared(model_name, meta)
        abstract = bool(declared.get("abstract", False))
        name = check_name(declared.get("name", model_name), "model name")
        keys = tuple(n for n, f in fields.items() if f.is_key)
        partitions = {f.partition_by for f in fields.values() if f.partition_by}
        partitions |= {_as_names(declared.get("partition_by", ())), *_inherited_partitions(model)} - {()}
        if len(partitions) > 1:
            raise ModelException(
                f"{model_name}: Meta.partition_by and the fields name different partitions {sorted(partitions)}; "
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
        own = {n: v for n, v in declared.items() if n in SETTING_NAMES and v is not None}
        return cls(
            name, fields, abstract, keys, partition, ids,
            query_methods=collect_query_methods(model, fields.values()),
            overrides={**_inherited_overrides(model), **own},
        )

    def setting(self, name: str) -> Any:
        """The model's value of library setting ``name``: its Meta's (or a base model's), else the default."""
        return self.overrides[name] if name in self.overrides else getattr(settings(), name)

    @property
    def client(self) -> Any:
        """The Redis client of the model's records: Meta ``client``, else the default client
        (inside the asyncio API: the facade over its ``redis.asyncio`` twin, or over Meta
        ``async_client``; :func:`~redmem.store._connection.resolved_client`)."""
        own, own_async = self.overrides.get("client"), self.overrides.get("async_client")
        if own_async is not None and in_worker():
            client = loop_facade(own, own_async)
        else:
            client = get_client() if own is None else resolved_client(own)
        check_once(self, client, settings().client if own is None else own)  # first use: model/_schema.py
        return client

    @property
    def key_prefix(self) -> str:
        """The first part of every key of the model."""
        prefix: str = self.setting("key_prefix")
        return prefix

    @property
    def partition_registry(self) -> bool:
        """Whether saves keep the registry of partitions (:mod:`.registry`)."""
        return bool(self.setting("partition_registry"))

    @property
    def embedding_provider(self) -> Any:
        """The default provider of the model's EmbeddingFields (None: none configured)."""
        return self.setting("embedding_provider")

    @property
    def token_counter(self) -> Any:
        """The default token counter of recipes over the model (None: the library's default)."""
        return self.setting("token_counter")

    def keyspace(self, partition_values: tuple[Any, ...] = ()) -> KeySpace:
        """The key space of one partition (``()`` for an unpartitioned model); the last few are kept."""
        prefix = self.key_prefix
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
        return KeySpace(self.key_prefix, self.name, GLOBAL_TAG)

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


def shared_client(models: Iterable[Options]) -> Any:
    """The client of ``models``, whose keys one pipeline writes: ConfigurationError when their
    Meta give them different clients (a pipeline goes to one server or cluster)."""
    clients = {id(meta.client): meta for meta in models}
    if len(clients) > 1:
        names = ", ".join(sorted(meta.name for meta in clients.values()))
        raise ConfigurationError(
            f"models {names} are written in one pipeline here but use different clients (Meta.client): "
            "give them the same one"
        )
    return next(iter(clients.values())).client if clients else get_client()


def _declared(model_name: str, meta: Any) -> dict[str, Any]:
    """The options a ``Meta`` class sets, checked; ModelException for an unknown or invalid one."""
    declared = {n: getattr(meta, n) for n in dir(meta) if not n.startswith("_")} if meta is not None else {}
    unknown = set(declared) - {*_MODEL_OPTIONS, *SETTING_NAMES}
    if unknown:
        raise ModelException(
            f"{model_name}.Meta: unknown option(s) {', '.join(sorted(unknown))}; "
            f"a Meta may set {', '.join((*_MODEL_OPTIONS, *SETTING_NAMES))}"
        )
    try:
        checked_settings({n: v for n, v in declared.items() if n in SETTING_NAMES and v is not None})
    except ConfigurationError as exc:
        raise ModelException(f"{model_name}.Meta: {exc}") from exc
    return declared


def _as_names(value: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A ``partition_by`` (one field name or several) as a tuple of names."""
    return (value,) if isinstance(value, str) else tuple(value)


def _inherited_partitions(model: type) -> set[tuple[str, ...]]:
    """The partitions of ``model``'s base models (so a Meta.partition_by reaches subclasses)."""
    return {vars(base)["_meta"].partition_fields for base in model.__mro__[1:]
            if isinstance(vars(base).get("_meta"), Options)}


def _inherited_overrides(model: type) -> dict[str, Any]:
    """The settings ``model``'s base models override, the nearer base winning."""
    inherited: dict[str, Any] = {}
    for base in reversed(model.__mro__[1:]):
        options = vars(base).get("_meta")
        if isinstance(options, Options):
            inherited.update(options.overrides)
    return inherited
