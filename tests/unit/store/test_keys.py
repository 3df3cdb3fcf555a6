"""Key schema: escaping is injective and no user value can move a key out of its partition's slot."""

from __future__ import annotations

import ast
import importlib
from enum import StrEnum
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from redmem.store._errors import ConfigurationError
from redmem.store._keys import GLOBAL_TAG, KeyKind, KeySpace, check_name, escape, unescape

DOCS = Path(__file__).resolve().parents[3] / "docs"
SRC = Path(__file__).resolve().parents[3] / "src" / "redmem"

HOSTILE = ["{", "}", "{x}", "a}b{c", ":", "*", "?", "[a-z]", "\\", "%", "%25", "%_", "%g", "",
           " ", "\n", "line\nbreak", "tab\there", "\x00", "\x7f", "\u00a0", "ü", "日本語",
           "😀", "x" * 10_000, "rm:Memory:{other}:r:1", "^", "{}"]
values = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=50), st.text(
    alphabet=st.sampled_from(list("{}:*?[]\\%^ \n_ag")), max_size=12))


@given(values)
def test_escape_round_trips(value):
    assert unescape(escape(value)) == value


@given(values, values)
def test_escape_is_injective(a, b):
    if a != b:
        assert escape(a) != escape(b)


@given(values)
def test_escaped_values_carry_no_special_characters(value):
    escaped = escape(value)
    assert not set(escaped) & set("{}:*?[]\\^")
    assert not any(c.isspace() or not c.isprintable() for c in escaped)
    assert escaped  # never empty: "{}" would not be a hash tag


@settings(max_examples=300)
@given(values, values, values)
def test_every_key_of_a_partition_hashes_to_the_partition_slot(partition, record_id, tag_value):
    space = KeySpace.for_partition("rm", "Memory", (partition,))
    slot = key_slot(f"{{{space.tag}}}".encode())
    keys = [space.record(escape(record_id)), space.key("all"), space.value_key("t", "tags", tag_value)]
    assert {key_slot(k.encode()) for k in keys} == {slot}


@given(values, values)
def test_distinct_partitions_never_share_a_key(a, b):
    if a != b:
        space_a = KeySpace.for_partition("rm", "M", (a,))
        space_b = KeySpace.for_partition("rm", "M", (b,))
        assert space_a.record("1") != space_b.record("1")
        assert space_a.tag != GLOBAL_TAG


@given(st.lists(values, min_size=2, max_size=2), st.lists(values, min_size=2, max_size=2))
def test_multi_field_partitions_do_not_collide(a, b):
    if a != b:
        assert KeySpace.for_partition("rm", "M", tuple(a)).tag != KeySpace.for_partition("rm", "M", tuple(b)).tag


def test_partition_values_are_recovered_from_the_tag():
    space = KeySpace.for_partition("rm", "M", ("a:b", "{c}"))
    assert space.partition_values == ("a:b", "{c}")
    assert KeySpace("rm", "M").partition_values == ()


def test_readable_values_stay_readable():
    assert escape("agent-1") == "agent-1"
    assert escape("日本語") == "日本語"
    assert KeySpace.for_partition("rm", "Memory", ("agent-1",)).record("42") == "rm:Memory:{agent-1}:r:42"


@pytest.mark.parametrize("name", ["", "a:b", "{x}", "a b", "p*"])
def test_bad_prefixes_and_model_names_are_rejected(name):
    with pytest.raises(ConfigurationError):
        check_name(name, "key_prefix")


def _key_kind_owners() -> list[type[StrEnum]]:
    """Every ``<Owner>KeyKind`` of redmem: ``store.keys.KeyKind`` and each owner's own (found in the
    source, so a new owner is checked without being listed here)."""
    owners = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("KeyKind") \
                    and any(isinstance(b, ast.Name) and b.id == "StrEnum" for b in node.bases):
                module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
                owners.append(getattr(importlib.import_module(module), node.name))
    return owners


def test_every_key_kind_is_one_member_of_one_owner_distinct_across_owners_and_documented():
    owners = _key_kind_owners()
    assert KeyKind in owners and len(owners) >= 8
    values = [kind.value for owner in owners for kind in owner]
    assert len(set(values)) == len(values), sorted(v for v in values if values.count(v) > 1)
    table = (DOCS / "models.md").read_text().split("| kind | key | member | written by |")[1].split("\n\n")[0]
    rows = [line.split("|") for line in table.splitlines()[2:]]
    documented = {member.strip(" `") for row in rows for member in row[3].split(",")}
    assert documented == {kind.name if owner is KeyKind else f"{owner.__name__}.{kind.name}"
                          for owner in owners for kind in owner}
    space = KeySpace("rm", "Memory", "a")
    assert space.key(KeyKind.CONFIDENCE, "trust") == "rm:Memory:{a}:cf:trust"
    assert space.record("1") == f"rm:Memory:{{a}}:{KeyKind.RECORD}:1"
