"""The ORM core: Model, its fields, queries, atomic saves and search results (hits)."""

from .._public import publish
from ._base import Model, ModelMeta
from ._batch import SaveBatch
from ._dbkey import DbKey
from ._field import Field
from ._fields import (
    BooleanField,
    BytesField,
    DatetimeField,
    DictField,
    FloatField,
    IntField,
    ListField,
    StringField,
)
from ._hits import Hit, HitList
from ._indexed import AutoKeyField, KeyField, SortedField, TagField
from ._migration import MigrationReport
from ._query import Query
from ._schema import IndexNotBuiltWarning, SchemaChangedWarning, SchemaWarning

__all__ = [
    "Model",
    "ModelMeta",
    "SaveBatch",
    "DbKey",
    "Field",
    "StringField",
    "IntField",
    "FloatField",
    "BooleanField",
    "ListField",
    "DictField",
    "BytesField",
    "DatetimeField",
    "KeyField",
    "AutoKeyField",
    "SortedField",
    "TagField",
    "Query",
    "Hit",
    "HitList",
    "MigrationReport",
    "SchemaWarning",
    "SchemaChangedWarning",
    "IndexNotBuiltWarning",
]

publish(__name__, __all__)
