"""One model, one key space: two model classes that would share ``<prefix>:<name>`` raise when the
second is created, naming both and the Meta options that separate them; redefining a class, a
Meta.key_prefix or Meta.name of its own, and a class that is only garbage do not."""

from __future__ import annotations

import pytest

from redmem.store._errors import ModelException

FACT = """
from redmem import AutoKeyField, KeyField, Model, StringField

class SpaceFact(Model):
{meta}
    fact_id = AutoKeyField()
    agent_id = KeyField()
    {field} = StringField()
"""


def declare(module: str, field: str = "content", meta: str = "") -> type:
    """``SpaceFact`` as module ``module`` declares it (its own fields and Meta lines)."""
    namespace: dict = {"__name__": module}
    exec(FACT.format(field=field, meta=meta), namespace)
    return namespace["SpaceFact"]


def test_two_classes_of_one_name_raise_naming_both_and_the_meta_options():
    first = declare("app.facts")
    with pytest.raises(ModelException) as caught:
        declare("app.other_facts", field="text")
    message = str(caught.value)
    assert "app.other_facts.SpaceFact and app.facts.SpaceFact" in message
    assert "<configured prefix>:SpaceFact" in message
    assert 'name = "..."' in message and 'key_prefix = "..."' in message
    assert first._meta.name == "SpaceFact"


def test_a_redefinition_of_the_same_class_keeps_its_key_space():
    first = declare("app.reloaded")
    again = declare("app.reloaded", field="text")  # a module reloaded, a notebook cell run again
    assert again is not first
    with pytest.raises(ModelException, match="app.elsewhere.SpaceFact and app.reloaded.SpaceFact"):
        declare("app.elsewhere")
    del first


def test_meta_options_separate_or_share_on_purpose(db):
    held = declare("app.holder")
    own_prefix = declare("app.archive", meta='    class Meta:\n        key_prefix = "archive"')
    assert own_prefix._meta.key_prefix == "archive"
    renamed = declare("app.renamed", meta='    class Meta:\n        name = "SpaceFactV2"')
    assert renamed._meta.name == "SpaceFactV2"
    version = declare("app.migration", field="text", meta='    class Meta:\n        name = "SpaceFact"')
    record = held.create(agent_id="a", content="stored by the old version")
    assert version.query.get(agent_id="a", fact_id=record.fact_id).text is None  # the same keys, on purpose


def test_a_class_that_is_only_garbage_holds_no_key_space():
    declare("app.finished_function")  # nothing keeps it: collected when the next class claims
    assert declare("app.next_function")._meta.name == "SpaceFact"
