"""Tenants declared once, on the model (``Meta.partition_by``), inherited by every field, search
and subclass; a tenant passed to an unpartitioned model names the Meta line to add; an empty or
blank tenant is refused by saves, queries and recipes with the same error."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redmem import (
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    ContextAssembler,
    DecayingSortedField,
    KeyField,
    Model,
    StringField,
)
from redmem.store._errors import ModelException, QueryException, ValidationError


class TenantNote(Model):
    class Meta:
        partition_by = "agent_id"

    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    relevance = DecayingSortedField()
    confidence = ConfidenceField()
    content_bm25 = BM25Field(source="content")


class TenantDeclarationSharedNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    content_bm25 = BM25Field(source="content")


def test_meta_partition_by_partitions_every_field_and_search(db):
    assert TenantNote._meta.partition_fields == ("agent_id",)
    alice = TenantNote.create(agent_id="alice", content="the vault code is 1234")
    TenantNote.create(agent_id="bob", content="the vault is in the basement")
    assert alice.db_key.partition == ("alice",)
    hits = TenantNote.query.filter(agent_id="bob").keyword_search("vault code")
    assert [hit.agent_id for hit in hits] == ["bob"]
    with pytest.raises(QueryException, match="partition"):
        TenantNote.query.keyword_search("vault code")


def test_meta_partition_by_reaches_subclasses_and_agrees_with_field_declarations():
    class TenantSubNote(TenantNote):
        extra = StringField()

    assert TenantSubNote._meta.partition_fields == ("agent_id",)

    class PerField(Model):
        class Meta:
            partition_by = ("agent_id",)

        note_id = AutoKeyField()
        agent_id = KeyField()
        relevance = DecayingSortedField(partition_by="agent_id")

    assert PerField._meta.partition_fields == ("agent_id",)
    with pytest.raises(ModelException, match="different partitions"):
        class Clash(Model):
            class Meta:
                partition_by = "agent_id"

            note_id = AutoKeyField()
            agent_id = KeyField()
            session_id = KeyField()
            relevance = DecayingSortedField(partition_by="session_id")
    with pytest.raises(ModelException, match="must be a KeyField"):
        class NoSuchKey(Model):
            class Meta:
                partition_by = "tenant"

            note_id = AutoKeyField()


def test_a_tenant_given_to_an_unpartitioned_model_names_the_meta_line_to_add(db):
    assembler = ContextAssembler(TenantDeclarationSharedNote)
    with pytest.raises(QueryException) as caught:
        assembler.assemble("vault", agent_id="bob")
    message = str(caught.value)
    assert "class TenantDeclarationSharedNote(Model)" in message and "class Meta:" in message
    assert "partition_by = 'agent_id'" in message


blank = st.text(alphabet=" \t\n\r\u00a0\u2003", max_size=4)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenant=blank)
def test_an_empty_or_blank_tenant_is_refused_everywhere_with_one_error(db, tenant):
    refusals = [
        lambda: TenantNote.create(agent_id=tenant, content="x"),
        lambda: TenantNote.query.filter(agent_id=tenant).count(),
        lambda: TenantNote.query.get(agent_id=tenant, note_id="n"),
        lambda: ContextAssembler(TenantNote).assemble("x", agent_id=tenant),
    ]
    for refuse in refusals:
        with pytest.raises(ValidationError, match="names the tenant and must not be empty or blank"):
            refuse()
    assert TenantNote.query.filter(agent_id="a").count() == 0
