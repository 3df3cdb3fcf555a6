"""The ORM core: Model, its fields, queries, atomic saves and search results (hits)."""

from .base import Model, ModelMeta
from .batch import SaveBatch
from .dbkey import DbKey
from .field import Field
from .fields import (
    BooleanField,
    BytesField,
    DatetimeField,
    DictField,
    FloatField,
    IntField,
    ListField,
    StringField,
)
from .hits import Hit, HitList
from .indexed import AutoKeyField, KeyField, SortedField, TagField
from .migration import MigrationReport
from .query import Query
from .schema import IndexNotBuiltWarning, SchemaChangedWarning, SchemaWarning

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
