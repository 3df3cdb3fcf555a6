"""Per-tenant ACL users: everything on their own tenant's keys, PermissionDenied on any other's.

Each test starts its own server with one ACL user per tenant whose key pattern is
``~<prefix>:<Model>:{<tenant>}:*`` (the line docs/operations.md recommends).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import redis

import redmem
from redmem import (
    AccessTrackerMixin,
    AutoKeyField,
    BM25Field,
    ConfidenceField,
    CoOccurrenceField,
    DecayingSortedField,
    EmbeddingField,
    FloatField,
    KeyField,
    Model,
    PermissionDenied,
    StringField,
)
from redmem.embeddings import HashingEmbeddings
from redmem.fields._reindex import reindex
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._connection import settings
from redmem.store._embedded import EmbeddedServer

PREFIX = "acl"
#: The commands redmem needs, for a user confined to one tenant's keys (see the docs' recipe).
#: SCAN and RANDOMKEY are left out: key patterns do not filter them, so they would list other
#: tenants' key names.
RULES = "on resetkeys resetchannels -@all +@read +@write +@scripting +@transaction +@connection -@dangerous +info +time -scan -randomkey"


class TenantMemory(AccessTrackerMixin, Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    importance = FloatField(default=1.0)
    relevance = DecayingSortedField(base_score_field="importance", partition_by="agent_id")
    confidence = ConfidenceField()
    associations = CoOccurrenceField()
    content_bm25 = BM25Field(source="content")
    embedding = EmbeddingField(source="content", provider=HashingEmbeddings(32))


def acl_line(user: str, password: str, tenant: str) -> list[str]:
    """ACL SETUSER's arguments for a user of one tenant of TenantMemory."""
    return [user, *RULES.split(), f">{password}", f"~{PREFIX}:TenantMemory:{{{tenant}}}:*"]


@pytest.fixture(params=[True, False], ids=["registry-on", "registry-off"])
def tenant_a(request):
    """Connected as tenant A's user on a server of its own (the admin client made a B record)."""
    before = settings()
    with EmbeddedServer() as server:
        admin = server.client()
        admin.execute_command("ACL", "SETUSER", *acl_line("tenant-a", "secret-a", "A"))
        admin.execute_command("ACL", "SETUSER", *acl_line("tenant-b", "secret-b", "B"))
        redmem.configure(client=admin, key_prefix=PREFIX, partition_registry=request.param)
        other = TenantMemory.create(agent_id="B", content="tenant B's private note about invoices")
        redmem.configure(client=server.client(username="tenant-a", password="secret-a"))
        try:
            yield admin, other
        finally:
            redmem.configure(client=before.client, key_prefix=before.key_prefix,
                             partition_registry=before.partition_registry)


def test_a_tenant_user_does_everything_on_its_own_tenant(tenant_a, caplog):
    admin, _ = tenant_a
    with caplog.at_level(logging.WARNING, logger="redmem.model._registry"):
        notes = [TenantMemory.create(agent_id="A", content=f"deploy note {i} about the release train")
                 for i in range(5)]
        assert TenantMemory.save_many([TenantMemory(agent_id="A", content=f"bulk note {i} on deploys")
                                       for i in range(20)]) == 20
    if settings().partition_registry:  # the registry is out of the user's reach: logged, not raised
        assert "partition registry" in caplog.text
    mine = TenantMemory.query.filter(agent_id="A")
    assert TenantMemory.query.get(agent_id="A", memory_id=notes[0].memory_id) == notes[0]
    assert mine.count() == 25
    assert len(mine.all()) == 25
    assert mine.keyword_search("release train", limit=3)
    assert mine.semantic_search(notes[3].content, limit=5)[0].memory_id == notes[3].memory_id
    result = ContextAssembler(TenantMemory, max_items=5).assemble("release train deploy", agent_id="A")
    assert result.records and all(r.agent_id == "A" for r in result.records)
    notes[1].importance = 3.0
    notes[1].save()
    assert notes[2].delete() is True
    assert mine.count() == 24
    assert admin.exists(notes[2].db_key.redis_key) == 0


def test_a_tenant_user_gets_permission_denied_on_another_tenant(tenant_a):
    admin, other = tenant_a
    theirs = TenantMemory.query.filter(agent_id="B")
    attempts = {
        "get": lambda: TenantMemory.query.get(agent_id="B", memory_id=other.memory_id),
        "count": theirs.count,
        "all": theirs.all,
        "semantic_search": lambda: theirs.semantic_search("invoices", limit=3),
        "assemble": lambda: ContextAssembler(TenantMemory, max_items=5).assemble("invoices", agent_id="B"),
        "save": lambda: TenantMemory.create(agent_id="B", content="planted"),
        "save_many": lambda: TenantMemory.save_many([TenantMemory(agent_id="B", content="planted")]),
        "update": lambda: (setattr(other, "content", "changed"), other.save()),
        "delete": other.delete,
        "fan-out query": lambda: TenantMemory.query.count(),
        "reindex": lambda: reindex(TenantMemory),
    }
    for name, attempt in attempts.items():
        with pytest.raises(PermissionDenied) as caught:
            attempt()
        assert isinstance(caught.value, PermissionError) and "Redis at" in str(caught.value), name
    stored = admin.hgetall(other.db_key.redis_key)
    assert stored[b"content"] == b"tenant B's private note about invoices"
    records = [k for k in admin.scan_iter(f"{PREFIX}:TenantMemory:*:r:*")]
    assert not [k for k in records if admin.hget(k, "content") == b"planted"]


def test_the_acl_recipe_lets_the_user_read_no_key_name_of_another_tenant(tenant_a):
    client = redmem.get_client()
    for command in (("SCAN", 0), ("KEYS", "*"), ("RANDOMKEY",), ("SMEMBERS", f"{PREFIX}:TenantMemory:{{%g}}:partitions")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.execute_command(*command)


def test_a_user_refused_info_still_saves_and_searches_vectors(tenant_a):
    """INFO (the rollback check of vector writes) is optional: without it writes go on."""
    admin, _ = tenant_a
    admin.execute_command("ACL", "SETUSER", "tenant-a", "-info")
    notes = [TenantMemory.create(agent_id="A", content=f"harbour note {i}") for i in range(3)]
    mine = TenantMemory.query.filter(agent_id="A")
    assert mine.semantic_search(notes[1].content, limit=1)[0].memory_id == notes[1].memory_id
    with pytest.raises(redis.exceptions.NoPermissionError):
        redmem.get_client().info("server")


def test_a_command_refused_inside_a_script_is_permission_denied(tenant_a):
    """A vector set's first write runs TIME in its script: refused by the ACL, it is typed too."""
    admin, _ = tenant_a
    admin.execute_command("ACL", "SETUSER", "tenant-a", "-time")
    with pytest.raises(PermissionDenied, match="TIME|script"):
        TenantMemory.create(agent_id="A", content="first vector of tenant A")


DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations.md"


def docs_acl_lines() -> list[str]:
    """Every ``ACL SETUSER`` line of docs/operations.md, as written."""
    return [line for line in DOCS.read_text().splitlines() if line.startswith("ACL SETUSER ")]


@pytest.mark.parametrize("line", docs_acl_lines())
def test_each_acl_line_of_the_docs_works_as_written_and_lists_no_foreign_key(line):
    args = line.split()[2:]
    user, password = args[0], next(a[1:] for a in args if a.startswith(">"))
    own = next(a[1:] for a in args if a.startswith("~")).replace("*", "own")
    foreign = re.sub(r"\{[^}]*\}", "{another-tenant}", own)
    with EmbeddedServer() as server:
        admin = server.client()
        admin.execute_command("ACL", "SETUSER", *args)
        admin.set(foreign, "another tenant's secret")
        tenant = server.client(username=user, password=password)
        tenant.set(own, 1)  # its own keys: plain commands, scripts, transactions
        assert tenant.eval("return redis.call('INCR', KEYS[1])", 1, own) == 2
        with tenant.pipeline(transaction=True) as pipe:
            pipe.watch(own)
            pipe.multi()
            pipe.incr(own)
            assert pipe.execute() == [3]
        for command in (("SCAN", 0), ("KEYS", "*"), ("RANDOMKEY",), ("GET", foreign)):
            with pytest.raises(redis.exceptions.NoPermissionError):
                tenant.execute_command(*command)
        with pytest.raises(redis.exceptions.ResponseError):  # refused inside a script too
            tenant.eval("return redis.call('GET', KEYS[1])", 1, foreign)


def test_a_tenant_user_allowed_scan_lists_only_its_own_partitions_with_the_registry_off():
    """An ACL broader than the recipe (``+@all -@dangerous`` keeps SCAN): SCAN lists every tenant's
    key names, but a query naming no partition covers only the partitions the user may read."""
    before = settings()
    with EmbeddedServer() as server:
        admin = server.client()
        admin.execute_command("ACL", "SETUSER", "broad", "on", ">pw", "+@all", "-@dangerous",
                              f"~{PREFIX}:TenantMemory:{{A}}:*")
        redmem.configure(client=admin, key_prefix=PREFIX, partition_registry=False)
        try:
            TenantMemory.create(agent_id="B", content="tenant B's private note")
            redmem.configure(client=server.client(username="broad", password="pw"))
            TenantMemory.create(agent_id="A", content="tenant A's note")
            assert [space.tag for space in TenantMemory.query.partitions()] == ["A"]
            assert TenantMemory.query.count() == 1
            assert [m.agent_id for m in TenantMemory.query.all()] == ["A"]
        finally:
            redmem.configure(client=before.client, key_prefix=before.key_prefix,
                             partition_registry=before.partition_registry)
