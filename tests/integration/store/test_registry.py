"""The partition registry: off the write path, optional, and rebuilt from a keyspace scan."""

from __future__ import annotations

import pytest

import redmem
from conftest import all_keys
from redmem import AutoKeyField, KeyField, Model, StringField, TagField
from redmem.fields._reindex import reindex
from redmem.model._registry import rebuild_registry, scan_partitions
from redmem.store._connection import settings


class RegistryCard(Model):
    card_id = AutoKeyField()
    owner = KeyField(partition_by="owner")
    title = StringField()
    labels = TagField()


@pytest.fixture
def registry_off(any_db):
    redmem.configure(partition_registry=False)
    try:
        yield any_db
    finally:
        redmem.configure(partition_registry=True)


def registry_key() -> str:
    return RegistryCard._meta.global_keyspace().key("partitions")


def test_without_the_registry_saves_skip_it_and_fan_out_scans(registry_off):
    owners = ["ann", "bob", "c:{weird}*"]
    for owner in owners:
        RegistryCard.create(owner=owner, title=f"card of {owner}", labels=["todo"])
    RegistryCard.save_many([RegistryCard(owner="dan", title=f"bulk {i}", labels=["todo"]) for i in range(3)])
    assert registry_key() not in all_keys(registry_off)
    assert sorted(space.partition_values for space in scan_partitions(RegistryCard._meta, registry_off)) == \
        sorted([(o,) for o in owners + ["dan"]])
    assert RegistryCard.query.filter(labels="todo").count() == 6
    assert reindex(RegistryCard) == 6


def test_rebuild_registry_adds_every_partition_found_by_a_scan(any_db):
    for owner in ("ann", "bob", "cy"):
        RegistryCard.create(owner=owner, title="x", labels=["todo"])
    any_db.delete(registry_key())
    assert RegistryCard.query.filter(labels="todo").count() == 0  # the registry is what fan-out reads
    assert rebuild_registry(RegistryCard) == 3
    assert RegistryCard.query.filter(labels="todo").count() == 3


def test_a_partition_is_registered_once_per_process_then_creates_take_two_round_trips(db, sent):
    RegistryCard.create(owner="ann", title="first")
    assert len(sent) == 4  # the model's schema check (its first use), the registry SADD, the WATCH, the MULTI/EXEC
    sent.clear()
    RegistryCard.create(owner="ann", title="second")
    assert len(sent) == 2
    assert settings().partition_registry is True


def test_partition_registry_setting_accepts_only_booleans():
    with pytest.raises(redmem.ConfigurationError, match="partition_registry must be True or False"):
        redmem.configure(partition_registry="no")
