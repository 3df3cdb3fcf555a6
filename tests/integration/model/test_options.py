"""Per-model options: Meta settings (client, key prefix, registry, providers) over the configured defaults."""

from __future__ import annotations

import pytest
import redis

import redmem
from redmem import (
    AutoKeyField,
    ContextAssembler,
    EmbeddingField,
    HashingEmbeddings,
    KeyField,
    Model,
    ModelException,
    ObservationProtocol,
    SortedField,
    StringField,
)
from redmem.context import estimate_tokens
from redmem.store._embedded import EmbeddedServer


@pytest.fixture(scope="module")
def other_server():
    """A second Redis server, for models whose Meta names their own client (discarded after the module)."""
    with EmbeddedServer(unix_socket=False) as server:
        client = redis.Redis.from_url(server.url)
        yield client
        client.close()


def test_models_with_their_own_client_and_prefix_write_there(db, other_server):
    prefix = redmem.store.settings().key_prefix

    class Elsewhere(Model):
        note_id = KeyField()
        body = StringField()
        rank = SortedField()

        class Meta:
            client = other_server
            key_prefix = f"{prefix}far"

    class Prefixed(Model):
        note_id = KeyField()
        body = StringField()

        class Meta:
            key_prefix = f"{prefix}alt"

    class Here(Model):
        note_id = KeyField()
        body = StringField()

    for model in (Elsewhere, Prefixed, Here):
        model.create(note_id="1", body=model.__name__)
    far, alt, near = (f"{prefix}far:Elsewhere:{{%g}}:r:1", f"{prefix}alt:Prefixed:{{%g}}:r:1", f"{prefix}:Here:{{%g}}:r:1")
    assert other_server.exists(far) and not db.exists(far)
    assert db.exists(alt) and db.exists(near) and not other_server.exists(alt) and not other_server.exists(near)
    assert Elsewhere.query.get(note_id="1").body == "Elsewhere"
    assert [n.body for n in Elsewhere.query.filter(rank__gte=0)] == []
    Elsewhere.create(note_id="2", body="ranked", rank=1.0)
    assert [n.body for n in Elsewhere.query.filter(rank__gte=0)] == ["ranked"]  # its index is on its server too
    assert Here._meta.key_prefix == prefix and Here._meta.client is db  # the defaults, read at each use


def test_subclasses_inherit_meta_settings_but_not_the_name(db, other_server):
    class Base(Model):
        body = StringField()

        class Meta:
            abstract = True
            client = other_server
            key_prefix = "base"
            partition_registry = False

    class Child(Base):
        note_id = KeyField()

    class Grandchild(Child):
        class Meta:
            key_prefix = "grand"

    class Named(Model):
        note_id = KeyField()

        class Meta:
            name = "Renamed"
            key_prefix = "named"

    class Plain(Named):
        pass

    assert (Child._meta.client, Child._meta.key_prefix, Child._meta.partition_registry) == (other_server, "base", False)
    assert (Child._meta.name, Child._meta.abstract) == ("Child", False)
    assert (Grandchild._meta.client, Grandchild._meta.key_prefix) == (other_server, "grand")
    assert not Grandchild._meta.partition_registry
    assert (Plain._meta.name, Plain._meta.key_prefix) == ("Plain", "named")
    assert Child.create(note_id="c").db_key.redis_key == "base:Child:{%g}:r:c"
    assert other_server.exists("base:Child:{%g}:r:c") and not db.exists("base:Child:{%g}:r:c")


def test_a_meta_turns_the_partition_registry_off_for_its_model(db):
    class Unlisted(Model):
        note_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")

        class Meta:
            partition_registry = False

    Unlisted.create(agent_id="a")
    assert not db.exists(Unlisted._meta.global_keyspace().key("partitions"))
    assert [n.agent_id for n in Unlisted.query.all()] == ["a"]  # found by SCAN


def test_a_meta_sets_the_embedding_provider_and_token_counter_of_its_model(db):
    class Embedded(Model):
        note_id = AutoKeyField()
        agent_id = KeyField(partition_by="agent_id")
        content = StringField()
        embedding = EmbeddingField(source="content")

        class Meta:
            embedding_provider = HashingEmbeddings(16)
            token_counter = estimate_tokens

    assert Embedded.embedding.provider is Embedded._meta.embedding_provider
    assert redmem.store.settings().embedding_provider is None
    Embedded.create(agent_id="a", content="blue ocean waves")
    assert [n.content for n in Embedded.query.filter(agent_id="a").semantic_search("ocean")] == ["blue ocean waves"]
    assert ContextAssembler(Embedded).token_counter is estimate_tokens


@pytest.mark.parametrize(("meta", "message"), [
    ({"prefix": "x"}, r"Bad.Meta: unknown option\(s\) prefix; a Meta may set name, abstract, partition_by, client, key_prefix"),
    ({"key_prefix": "a:b"}, "Bad.Meta: key_prefix 'a:b' must be non-empty"),
    ({"partition_registry": "no"}, "Bad.Meta: partition_registry must be True or False"),
])
def test_a_meta_with_an_unknown_or_invalid_option_is_refused(meta, message):
    with pytest.raises(ModelException, match=message):
        type(Model)("Bad", (Model,), {"__module__": __name__, "key": KeyField(), "Meta": type("Meta", (), meta)})


def test_one_pipeline_over_models_on_different_clients_is_refused(db, other_server):
    class Far(redmem.AccessTrackerMixin, Model):
        note_id = KeyField()

        class Meta:
            client = other_server

    class Near(redmem.AccessTrackerMixin, Model):
        note_id = KeyField()

    far, near = Far(note_id="f"), Near.create(note_id="n")
    with pytest.raises(redmem.ConfigurationError, match="models Far, Near .* use different clients"):
        ObservationProtocol.on_read([far, near])
    assert ObservationProtocol.on_read([near]) == 1
