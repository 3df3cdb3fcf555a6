"""Query methods: the operations a model's queries offer beside filter, order_by and the readers.

A field class or a model class (a record mixin, a model itself) offers operations to the models
it is part of through its ``query_methods()`` classmethod, ``{name: operation}`` where
``operation(query, ...)`` runs on the query; the metaclass collects those of a model's own
fields and classes into ``Model._meta.query_methods``, and ``Model.query.filter(..).<name>(..)``
calls them. So ``keyword_search`` exists on the queries of models with a BM25Field only, and a
model without one raises :class:`MissingQueryMethod` naming the classes that would offer it.

Two operations need no field: ``fuse`` (RRF of ranked lists of any model's records) and
``composite_score`` (a weighted sum of sorted signals, a plain SortedField being one). Every
model offers them, but they are built on fusion and the primitives, which sit above the model
layer, so neither Model nor Query can import them: their modules declare them with
:func:`every_model_query`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..store._errors import MissingQueryMethod, ModelException

__all__ = [
    "QueryMethod",
    "QueryMethodProvider",
    "MissingQueryMethod",
    "every_model_query",
    "collect_query_methods",
    "find_query_method",
    "every_model_query_methods",
]

#: An operation run as ``query.<name>(*args, **kwargs)``: called as ``operation(query, *args, **kwargs)``.
QueryMethod = Callable[..., Any]

#: The operations every model's queries offer (``fuse``, ``composite_score``), by name.
_EVERY_MODEL: dict[str, QueryMethod] = {}


class QueryMethodProvider:
    """Base of the classes whose query methods the models made of them collect: Field, record mixins."""

    @classmethod
    def query_methods(cls) -> Mapping[str, QueryMethod]:
        """The operations this class gives the queries of the models it is part of, by name."""
        return {}



def every_model_query(operation: QueryMethod) -> QueryMethod:
    """Offer ``operation`` on every model's queries, as ``query.<operation name>(...)``.

    Only for operations that need no field of the model (see the module docstring).
    """
    _EVERY_MODEL[operation.__name__] = operation
    return operation


def every_model_query_methods() -> Mapping[str, QueryMethod]:
    """The operations every model's queries offer, by name."""
    return _EVERY_MODEL


def collect_query_methods(model: type, fields: Iterable[Any]) -> dict[str, QueryMethod]:
    """The query methods offered by ``model``'s classes (its MRO) and by the classes of its fields.

    ModelException when two of them offer different operations under one name.
    """
    providers: list[Any] = [klass for klass in reversed(model.__mro__) if "query_methods" in vars(klass)]
    providers += [type(field) for field in fields]
    offers = [(provider, provider.query_methods()) for provider in providers]
    methods: dict[str, QueryMethod] = {}
    offered_by: dict[str, type] = {}
    for provider, offered in offers:
        for name, operation in offered.items():
            if methods.setdefault(name, operation) is not operation:
                raise ModelException(
                    f"{model.__name__}: {offered_by[name].__name__} and {provider.__name__} both offer "
                    f"a different query method {name!r}"
                )
            offered_by.setdefault(name, provider)
    return methods


def find_query_method(model: type, methods: Mapping[str, QueryMethod], name: str) -> QueryMethod:
    """The operation ``name`` of ``model``'s queries: its own ``methods``, else every model's.

    MissingQueryMethod naming the classes that offer it when the model has none of them.
    """
    operation = methods.get(name) or _EVERY_MODEL.get(name)
    if operation is not None:
        return operation
    offering = _providers_of(name)
    if offering:
        raise MissingQueryMethod(
            f"{model.__name__} queries have no method {name!r}: it comes with {' or '.join(offering)}, "
            f"which {model.__name__} does not have"
        )
    available = ", ".join(sorted({*methods, *_EVERY_MODEL}))
    raise MissingQueryMethod(f"{model.__name__} queries have no method {name!r} (query methods: {available})")


def _providers_of(name: str) -> list[str]:
    """The names of the provider classes that offer a query method ``name``, sorted."""
    found, pending = set(), [QueryMethodProvider]
    while pending:
        klass = pending.pop()
        pending.extend(klass.__subclasses__())
        if "query_methods" in vars(klass) and name in klass.query_methods():
            found.add(klass.__name__)
    return sorted(found)
