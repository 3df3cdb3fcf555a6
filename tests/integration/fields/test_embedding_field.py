"""EmbeddingField: vectors saved atomically with their record, and semantic_search over them."""

from __future__ import annotations

import random

import numpy as np
import pytest
import redis

import redmem
from conftest import all_keys
from openai_server import OpenAICompatibleServer
from redmem import (
    AutoKeyField,
    ConfigurationError,
    KeyField,
    Model,
    ModelException,
    QueryException,
    StringField,
    ValidationError,
)
from redmem.embeddings import EmbeddingError, HashingEmbeddings, OpenAIEmbeddings
from redmem.embeddings import _binary_prescan as binary_prescan
from redmem.embeddings import _prescan as prescan
from redmem.embeddings._codec import decode_stored_vector, encode_stored, encode_vector
from redmem.fields import EmbeddingField, embed_many
from redmem.fields import _embedding as embedding_module
from redmem.fields import _embedding_search as embedding_search
from redmem.fields._embedding import embedded_text_digest, matrices
from redmem.fields._reindex import reindex
from redmem.recipes.context_assembler import ContextAssembler
from redmem.store._aio import AioClient, async_twin, is_cluster


class Counting(HashingEmbeddings):
    """Hashing vectors, counting calls and texts; raises while ``broken`` is set."""

    def __init__(self, dimensions=32, max_batch_size=64):
        super().__init__(dimensions, max_batch_size)
        self.calls, self.texts, self.broken = 0, [], False

    def embed(self, texts, input_type="document"):
        if self.broken:
            raise RuntimeError("provider down")
        self.calls += 1
        self.texts.extend(texts)
        return super().embed(texts, input_type)


PROVIDER = Counting()


class EmbeddingFieldMemory(Model):
    memory_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    embedding = EmbeddingField(source="content", provider=PROVIDER, partition_by="agent_id")


class EmbeddingFieldPoint(Model):
    """Vectors assigned directly; unpartitioned."""

    name = KeyField()
    vector = EmbeddingField(dimensions=3)


class Doc(Model):
    """Uses the configured default provider."""

    doc_id = KeyField()
    owner = KeyField()
    text = StringField()
    embedding = EmbeddingField(source="text", partition_by="owner")


@pytest.fixture(autouse=True)
def reset_provider():
    PROVIDER.calls, PROVIDER.texts, PROVIDER.broken = 0, [], False
    matrices.clear()
    yield
    redmem.configure(embedding_provider=None)


def model_keys(client, model):
    return {k for k in all_keys(client) if f":{model.__name__}:" in k and not k.endswith(":partitions")}


def vector_keys(space, field="embedding"):
    base = space.key("v", field)
    return {"vectors": base, "ver": f"{base}:ver", "log": f"{base}:log"}


def as_stored(vectors, dtype="float16"):
    """``vectors`` at the precision ``dtype`` stores them (what search is exact against)."""
    return np.array([decode_stored_vector(encode_stored(v, dtype, b"x" * 8))[0] for v in np.atleast_2d(vectors)])


def second_client(client):
    """Another connection to the same server(s): a separate matrix cache, like another process."""
    if isinstance(client, AioClient):  # REDMEM_TEST_CLIENT=asyncio-bridge: another redis.asyncio client
        return AioClient(async_twin(client), client.resolve)
    if is_cluster(client):
        node = client.get_default_node()
        return redis.RedisCluster(host=node.host, port=node.port)
    pool = client.connection_pool
    return redis.Redis(connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **pool.connection_kwargs))


def test_save_stores_the_vector_as_float16_after_its_digest_with_its_version(any_db):
    memory = EmbeddingFieldMemory.create(agent_id="a", content="the cat sat on the mat")
    keys = vector_keys(memory.db_key.keyspace)
    stored = any_db.hget(keys["vectors"], memory.db_key.record_id)
    vector = PROVIDER.embed(["the cat sat on the mat"])[0]
    assert stored == b"\x02" + embedded_text_digest("the cat sat on the mat") + vector.astype("<f2").tobytes()
    np.testing.assert_array_equal(memory.embedding, vector)
    assert int(any_db.hget(keys["ver"], "n")) == 1
    assert any_db.zscore(keys["log"], memory.db_key.record_id) == 1
    assert {k for k in model_keys(any_db, EmbeddingFieldMemory) if ":v:" in k} == set(keys.values())


@pytest.mark.parametrize("dtype, size", [("float32", 9 + 4 * 32), ("float16", 9 + 2 * 32), ("int8", 13 + 32)])
def test_each_dtype_stores_its_size_and_search_is_exact_over_what_is_stored(any_db, dtype, size):
    class Stored(Model):
        item_id = KeyField()
        owner = KeyField(partition_by="owner")
        text = StringField()
        embedding = EmbeddingField(source="text", provider=PROVIDER, dtype=dtype)

    rng = random.Random(3)
    words = ["red", "green", "blue", "cat", "dog", "fish", "sun", "moon", "tea", "rain"]
    texts = [" ".join(rng.sample(words, 3)) for _ in range(40)]
    for i, text in enumerate(texts):
        Stored.create(item_id=f"{i:02d}", owner="o", text=text)
    keys = vector_keys(Stored(item_id="00", owner="o").db_key.keyspace)
    assert {len(v) for v in any_db.hvals(keys["vectors"])} == {size}
    stored = as_stored(PROVIDER.embed(texts), dtype)
    for query in ["red cat", "blue fish sun", "tea"]:
        q = PROVIDER.embed([query])[0]
        cosines = stored @ q / np.linalg.norm(stored, axis=1) / np.linalg.norm(q)
        expected = sorted(((f"{i:02d}", c) for i, c in enumerate(cosines) if c > 0), key=lambda p: (-p[1], p[0]))
        found = Stored.query.filter(owner="o").semantic_search(query, limit=8)
        assert [(r.item_id, r._vector_score) for r in found] == [
            (i, pytest.approx(c, abs=1e-6)) for i, c in expected[:8]]


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ModelException, match="dtype"):
        EmbeddingField(source="text", dtype="float64")


def test_an_unknown_prescan_is_refused():
    with pytest.raises(ModelException, match="prescan"):
        EmbeddingField(source="text", prescan="ivf")


def test_a_binary_prescan_field_ranks_through_sign_bits_with_exact_scores(db, monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)

    class Dense(Model):
        item_id = KeyField()
        embedding = EmbeddingField(dimensions=48, dtype="float32", prescan="binary")

    rng = np.random.default_rng(21)
    vectors = rng.standard_normal((400, 48)).astype(np.float32)
    Dense.save_many([Dense(item_id=f"{n:03d}", embedding=v) for n, v in enumerate(vectors)])
    query = vectors[123] + 0.05 * rng.standard_normal(48).astype(np.float32)
    found = Dense.query.semantic_search(query, limit=3)
    cosines = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
    assert found[0].item_id == "123"
    assert [r._vector_score for r in found] == pytest.approx([cosines[int(r.item_id)] for r in found], abs=1e-5)
    ranking = matrices.get(db, Dense.embedding.keys(Dense.query.partition())[0]).rank(query, 3, "binary")
    assert not ranking.complete and len(ranking.ids) == binary_prescan.CANDIDATES_PER_HIT * 3


def test_semantic_search_ranks_by_cosine_and_scores_records(any_db):
    texts = ["the cat sat on the mat", "a cat and a dog play", "stock markets fell sharply", "cats sleep all day"]
    for text in texts:
        EmbeddingFieldMemory.create(agent_id="a", content=text)
    found = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("cat on a mat", limit=3)
    query = HashingEmbeddings(32).embed(["cat on a mat"])[0]
    vectors = as_stored(HashingEmbeddings(32).embed(texts))
    cosines = {t: cosine(v, query) for t, v in zip(texts, vectors)}
    expected = sorted((t for t in texts if cosines[t] > 0), key=lambda t: -cosines[t])[:3]
    assert [r.content for r in found] == expected
    assert [r._vector_score for r in found] == pytest.approx([cosines[t] for t in expected], abs=1e-5)
    assert EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("   ") == []


def test_only_positive_cosines_are_returned(any_db):
    for name, vector in {"same": [1, 0, 0], "opposite": [-1, 0, 0], "orthogonal": [0, 1, 0], "near": [1, 1, 0]}.items():
        point = EmbeddingFieldPoint(name=name)
        point.vector = vector
        point.save()
    found = EmbeddingFieldPoint.query.semantic_search([2, 0, 0])
    assert [(p.name, round(p._vector_score, 4)) for p in found] == [("same", 1.0), ("near", 0.7071)]
    with pytest.raises(ValidationError, match="2 dimensions, expected 3"):
        EmbeddingFieldPoint.query.semantic_search([1, 0])


def test_a_failing_provider_leaves_nothing_written(any_db):
    PROVIDER.broken = True
    with pytest.raises(EmbeddingError, match="provider down"):  # the provider's RuntimeError, chained
        EmbeddingFieldMemory.create(agent_id="a", content="never stored")
    assert model_keys(any_db, EmbeddingFieldMemory) == set()
    PROVIDER.broken = False
    memory = EmbeddingFieldMemory.create(agent_id="a", content="first text")
    before = {k: any_db.dump(k) for k in model_keys(any_db, EmbeddingFieldMemory)}
    loaded = EmbeddingFieldMemory.query.get(agent_id="a", memory_id=memory.memory_id)
    loaded.content = "second text"
    PROVIDER.broken = True
    with pytest.raises(EmbeddingError):
        loaded.save()  # the embedding is computed under the record's WATCH, before MULTI
    assert {k: any_db.dump(k) for k in model_keys(any_db, EmbeddingFieldMemory)} == before


def test_wrong_dimensions_are_rejected_before_anything_is_written(any_db):
    class Short(Counting):
        def embed(self, texts, input_type="document"):
            return super().embed(texts, input_type)[:, :5]

    class Bad(Model):
        bad_id = KeyField()
        content = StringField()
        embedding = EmbeddingField(source="content", provider=Short())

    with pytest.raises(ValidationError, match="5 dimensions, expected 32"):
        Bad.create(bad_id="1", content="hello")
    with pytest.raises(ValidationError, match="4 dimensions, expected 3"):
        EmbeddingFieldPoint(name="p").vector = [1, 2, 3, 4]
    assert model_keys(any_db, Bad) == set()


def test_unchanged_text_is_not_embedded_again(any_db):
    memory = EmbeddingFieldMemory.create(agent_id="a", content="remember the milk")
    keys = vector_keys(memory.db_key.keyspace)
    memory.save()
    loaded = EmbeddingFieldMemory.query.get(agent_id="a", memory_id=memory.memory_id)
    assert loaded.embedding is None  # vectors are not part of the record hash
    loaded.save()
    assert (PROVIDER.calls, int(any_db.hget(keys["ver"], "n"))) == (1, 1)
    loaded.content = "remember the eggs"
    loaded.save()
    assert (PROVIDER.calls, int(any_db.hget(keys["ver"], "n"))) == (2, 2)
    memory.save()  # a stale instance: its own text again, its own vector again
    assert PROVIDER.texts == ["remember the milk", "remember the eggs"]
    assert EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("milk")[0].content == "remember the milk"


def test_clearing_the_text_or_deleting_removes_the_vector(any_db):
    keep = EmbeddingFieldMemory.create(agent_id="a", content="kept")
    gone = EmbeddingFieldMemory.create(agent_id="a", content="cleared later")
    keys = vector_keys(keep.db_key.keyspace)
    gone.content = None
    gone.save()
    assert any_db.hkeys(keys["vectors"]) == [keep.db_key.record_id.encode()]
    assert int(any_db.hget(keys["ver"], "n")) == 3
    keep.delete()
    gone.delete()
    assert model_keys(any_db, EmbeddingFieldMemory) == set()  # an emptied vector set leaves no version or log


def test_embed_many_batches_and_saves_reuse_the_vectors(any_db):
    provider = Counting(max_batch_size=2)

    class EmbeddingFieldNote(Model):
        note_id = AutoKeyField()
        agent_id = KeyField()
        body = StringField()
        embedding = EmbeddingField(source="body", provider=provider, partition_by="agent_id")

    notes = [EmbeddingFieldNote(agent_id="a", body=f"note number {i}") for i in range(5)] + [EmbeddingFieldNote(agent_id="a", body=None)]
    assert embed_many(notes) == 5
    assert provider.calls == 3
    for note in notes:
        note.save()
    assert provider.calls == 3
    assert embed_many(notes) == 0
    assert len(EmbeddingFieldNote.query.filter(agent_id="a").semantic_search("note number 3", limit=10)) == 5


def test_a_second_client_sees_new_vectors_at_once(any_db):
    other = second_client(any_db)
    EmbeddingFieldMemory.create(agent_id="a", content="apples are red")
    assert [m.content for m in EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("apples")] == ["apples are red"]
    redmem.configure(client=other)
    assert [m.content for m in EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("apples")] == ["apples are red"]
    EmbeddingFieldMemory.create(agent_id="a", content="green apples are sour")  # written through the other client
    first = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("green apples")
    redmem.configure(client=any_db)
    assert matrices.get(any_db, vector_keys(first[0].db_key.keyspace)["vectors"]).version == 1
    second = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("green apples")
    assert [m.content for m in second] == [m.content for m in first] == ["green apples are sour", "apples are red"]
    first[0].delete()
    assert [m.content for m in EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("green apples")] == ["apples are red"]
    other.close()


def test_a_refilled_partition_is_not_mistaken_for_the_cached_one(any_db):
    old = EmbeddingFieldMemory.create(agent_id="a", content="old fact about paris")
    assert len(EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("paris")) == 1
    old.content = None
    old.save()  # the record stays, its vector goes: the set empties, version and log go too
    EmbeddingFieldMemory.create(agent_id="a", content="new fact about rome")  # version 1 again, in a new epoch
    found = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("old fact about paris")
    assert [m.content for m in found] == ["new fact about rome"]


def test_a_matrix_catches_up_in_pages(any_db, monkeypatch):
    monkeypatch.setattr(embedding_search, "CHANGES_PER_CALL", 2)
    made = [EmbeddingFieldMemory.create(agent_id="a", content=f"topic number {i}") for i in range(7)]
    assert len(EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("topic number", limit=10)) == 7
    made[0].delete()
    made[1].content = "something else entirely"
    made[1].save()
    made += [EmbeddingFieldMemory.create(agent_id="a", content=f"topic number {i}") for i in range(7, 10)]
    found = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("topic number", limit=20)
    assert sorted(m.content for m in found if m.content.startswith("topic")) == sorted(
        f"topic number {i}" for i in range(2, 10))
    space = made[2].db_key.keyspace
    assert sorted(matrices.get(any_db, vector_keys(space)["vectors"]).ids) == sorted(m.memory_id for m in made[1:])


def test_the_log_keeps_the_newest_changes_and_a_reader_behind_it_reloads(any_db, monkeypatch):
    monkeypatch.setattr(embedding_module, "LOG_KEEP", 3)
    monkeypatch.setattr(embedding_module, "LOG_FRACTION", 4)  # the log keeps max(3, vectors // 4)
    monkeypatch.setattr(embedding_search, "CHANGES_PER_CALL", 2)  # reloads come in HSCAN pages
    watcher = second_client(any_db)
    made = [EmbeddingFieldMemory.create(agent_id="a", content=f"fact number {i}") for i in range(8)]
    keys = vector_keys(made[0].db_key.keyspace)
    assert any_db.zcard(keys["log"]) == 3 and int(any_db.hget(keys["ver"], "floor")) == 5

    def watched(text="fact number"):
        redmem.configure(client=watcher)
        try:
            return sorted(m.content for m in EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search(text, limit=50))
        finally:
            redmem.configure(client=any_db)

    assert watched() == sorted(f"fact number {i}" for i in range(8))
    matrix = matrices.get(watcher, keys["vectors"])
    loaded = matrix.generation
    made += [EmbeddingFieldMemory.create(agent_id="a", content=f"fact number {i}") for i in range(8, 20)]
    made.pop(0).delete()  # 20 vectors, then 19: the log keeps max(3, 19 // 4) = 4 entries
    assert any_db.zcard(keys["log"]) == 4 and int(any_db.hget(keys["ver"], "floor")) == 17
    assert watched() == sorted(f"fact number {i}" for i in range(1, 20))  # version 8 < floor: reloaded
    assert matrix.generation == loaded + 1 and matrix.version == 21
    made[0].content = None  # its vector goes
    made[0].save()
    assert watched() == sorted(f"fact number {i}" for i in range(2, 20))  # within the log: caught up
    assert matrix.generation == loaded + 1 and matrix.version == 22
    watcher.close()


def test_vectors_of_the_earlier_bare_float32_layout_are_read_and_rewritten(any_db):
    memory = EmbeddingFieldMemory.create(agent_id="a", content="an old style vector")
    keys = vector_keys(memory.db_key.keyspace)
    vector = PROVIDER.embed(["an old style vector"])[0]
    any_db.hset(keys["vectors"], memory.memory_id, encode_vector(vector))  # no format byte, no digest
    found = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search("an old style vector")
    assert [(m.memory_id, m._vector_score) for m in found] == [(memory.memory_id, pytest.approx(1.0, abs=1e-6))]
    calls = PROVIDER.calls
    EmbeddingFieldMemory.query.get(agent_id="a", memory_id=memory.memory_id).save()  # no digest to compare: embedded again
    assert PROVIDER.calls == calls + 1
    assert any_db.hget(keys["vectors"], memory.memory_id)[:9] == b"\x02" + embedded_text_digest("an old style vector")


def test_round_trips_of_a_search(db, sent):
    EmbeddingFieldMemory.create(agent_id="a", content="one two three")

    def round_trips(text):
        sent.clear()
        assert EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search(text)
        return len(sent)

    assert round_trips("one") == 2  # cold: load the vectors, then hydrate
    assert round_trips("two") == 1  # warm: changes and top-k hashes in one pipeline
    EmbeddingFieldMemory.create(agent_id="a", content="two three four")
    assert round_trips("three four") == 2  # a change: one more round trip for the new top-k
    assert round_trips("three four") == 1


def test_an_assembler_catches_up_inside_its_first_request(db, sent):
    for i in range(20):
        EmbeddingFieldMemory.create(agent_id="a", content=f"weather report number {i}")
    assembler = ContextAssembler(EmbeddingFieldMemory, max_items=5)  # semantic: the model has no BM25Field

    def assembled(text):
        sent.clear()
        return [m.content for m in assembler.assemble(text, agent_id="a").records], len(sent)

    assembled("weather report")
    warm = assembled("weather report")[1]
    other = second_client(db)
    redmem.configure(client=other)
    EmbeddingFieldMemory.create(agent_id="a", content="a report on tidal pools")
    redmem.configure(client=db)
    contents, trips = assembled("tidal pools report")
    assert contents[0] == "a report on tidal pools" and trips == warm  # the change came with the first request
    other.close()


def test_tenants_never_see_each_other(any_db):
    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    for _ in range(40):
        EmbeddingFieldMemory.create(agent_id=rng.choice(["a", "b"]), content=" ".join(rng.sample(words, 3)))
    for agent in ("a", "b"):
        for _ in range(5):
            found = EmbeddingFieldMemory.query.filter(agent_id=agent).semantic_search(" ".join(rng.sample(words, 2)), limit=50)
            assert found and {m.agent_id for m in found} == {agent}
    with pytest.raises(QueryException, match="partition"):
        EmbeddingFieldMemory.query.semantic_search("alpha")
    with pytest.raises(QueryException, match="partition only"):
        EmbeddingFieldMemory.query.filter(agent_id="a", memory_id="x").semantic_search("alpha")


def test_a_moved_record_moves_its_vector(any_db):
    point = EmbeddingFieldPoint(name="p1")
    point.vector = [0, 0, 1]
    point.save()
    point.name = "p2"
    point.save()
    keys = vector_keys(point.db_key.keyspace, "vector")
    assert any_db.hkeys(keys["vectors"]) == [b"p2"]
    loaded = EmbeddingFieldPoint.query.get(name="p2")
    loaded.save()  # no vector assigned: the stored one stays
    assert [p.name for p in EmbeddingFieldPoint.query.semantic_search([0, 0, 1])] == ["p2"]


def test_the_default_provider_comes_from_configure(any_db):
    with pytest.raises(ConfigurationError, match="embedding_provider"):
        Doc.create(doc_id="1", owner="o", text="hello world")
    assert model_keys(any_db, Doc) == set()
    with OpenAICompatibleServer(default_dimensions=16) as server:
        redmem.configure(embedding_provider=OpenAIEmbeddings("m", base_url=server.base_url, api_key="k"))
        Doc.create(doc_id="1", owner="o", text="hello world")
        Doc.create(doc_id="2", owner="o", text="goodbye moon")
        found = Doc.query.filter(owner="o").semantic_search("hello there world")
        assert next(d.doc_id for d in found) == "1"
        assert [body["input"] for body in server.embedding_requests()] == [
            ["hello world"], ["goodbye moon"], ["hello there world"]]


def test_reindex_embeds_records_saved_before_the_field(any_db):
    class Before(Model):
        item_id = KeyField()
        owner = KeyField(partition_by="owner")
        content = StringField()

        class Meta:
            name = "Legacy"

    class After(Model):
        item_id = KeyField()
        owner = KeyField(partition_by="owner")
        content = StringField()
        embedding = EmbeddingField(source="content", provider=PROVIDER)

        class Meta:
            name = "Legacy"

    for i, text in enumerate(["blue ocean waves", "red desert sand", None]):
        Before.create(item_id=str(i), owner="o", content=text)
    assert After.query.filter(owner="o").semantic_search("ocean") == []
    assert reindex(After, ["embedding"]) == 3
    assert next(r.item_id for r in After.query.filter(owner="o").semantic_search("blue ocean")) == "0"
    calls = PROVIDER.calls
    reindex(After, ["embedding"])  # digests match now: nothing is embedded again
    assert PROVIDER.calls == calls


def test_several_embedding_fields_need_a_name(any_db):
    class Two(Model):
        two_id = KeyField()
        title = StringField()
        body = StringField()
        title_vector = EmbeddingField(source="title", provider=PROVIDER)
        body_vector = EmbeddingField(source="body", provider=PROVIDER)

    Two.create(two_id="1", title="red fox", body="blue whale")
    with pytest.raises(QueryException, match="field="):
        Two.query.semantic_search("fox")
    assert Two.query.semantic_search("red fox", field="title_vector")[0]._vector_score == pytest.approx(1.0)
    assert Two.query.semantic_search("blue whale", field="body_vector")[0]._vector_score == pytest.approx(1.0)


def cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("log_keep", [128, 2])  # 2: the readers fall behind the log and reload
def test_random_writes_keep_search_equal_to_brute_force(any_db, monkeypatch, log_keep):
    monkeypatch.setattr(embedding_module, "LOG_KEEP", log_keep)
    monkeypatch.setattr(embedding_module, "LOG_FRACTION", 1000)
    monkeypatch.setattr(embedding_search, "CHANGES_PER_CALL", 3)
    rng = random.Random(11)
    words = ["red", "green", "blue", "cat", "dog", "fish", "sun", "moon"]
    watcher = second_client(any_db)
    live: dict[str, EmbeddingFieldMemory] = {}
    for step in range(60):
        roll = rng.random()
        if live and roll < 0.25:
            live.pop(rng.choice(sorted(live))).delete()
        elif live and roll < 0.5:
            memory = live[rng.choice(sorted(live))]
            memory.content = " ".join(rng.sample(words, 2))
            memory.save()
        else:
            memory = EmbeddingFieldMemory.create(agent_id="a", content=" ".join(rng.sample(words, 2)))
            live[memory.memory_id] = memory
        if step % 6 == 5:
            query = " ".join(rng.sample(words, 2))
            q = HashingEmbeddings(32).embed([query])[0]
            cosines = {m.memory_id: cosine(as_stored(HashingEmbeddings(32).embed([m.content]))[0], q)
                       for m in live.values()}
            expected = sorted((c for c in cosines.values() if c > 1e-6), reverse=True)[:5]
            for client in (any_db, watcher):
                redmem.configure(client=client)
                found = EmbeddingFieldMemory.query.filter(agent_id="a").semantic_search(query, limit=5)
                assert [m._vector_score for m in found if m._vector_score > 1e-6] == pytest.approx(expected, abs=1e-5)
                assert all(cosines[m.memory_id] == pytest.approx(m._vector_score, abs=1e-5) for m in found)
            redmem.configure(client=any_db)
    watcher.close()


def test_save_many_stores_the_vectors_version_and_log_of_one_save_per_record(any_db, monkeypatch):
    """Chunks of 7 (one script call each) against one save() per record: the same vectors, the
    same version n and floor, the same change log, record for record (log trimmed along the way)."""
    monkeypatch.setattr(embedding_module, "LOG_KEEP", 4)
    monkeypatch.setattr(embedding_module, "LOG_FRACTION", 3)

    def model(name: str) -> type:
        fields = {"memory_id": AutoKeyField(), "agent_id": KeyField(), "content": StringField(),
                  "embedding": EmbeddingField(source="content", provider=HashingEmbeddings(16),
                                              partition_by="agent_id")}
        return type(name, (Model,), {"__module__": __name__, **fields})

    one, many = model("VecOne"), model("VecMany")
    texts = [f"note {i} about {'deploys' if i % 3 else 'cats'}" for i in range(40)]
    singles = [one(agent_id="a", content=t) for t in texts]
    for record in singles:
        record.save()
    bulk = [many(agent_id="a", content=t) for t in texts]
    assert many.save_many(bulk, chunk_size=7) == 40

    def state(records: list, keys: list[str]) -> tuple:
        position = {r.memory_id.encode(): i for i, r in enumerate(records)}
        vectors = {position[k]: v for k, v in any_db.hgetall(keys[0]).items()}
        version = {k: v for k, v in any_db.hgetall(keys[1]).items() if k != b"epoch"}
        log = [(position[m], s) for m, s in any_db.zrange(keys[2], 0, -1, withscores=True)]
        return vectors, version, log

    space_one, space_many = (m.query.filter(agent_id="a").partition() for m in (one, many))
    expected = state(singles, one.embedding.keys(space_one))
    assert expected[1][b"n"] == b"40" and len(expected[2]) == 13 and b"floor" in expected[1]
    assert state(bulk, many.embedding.keys(space_many)) == expected


def test_a_vector_of_the_wrong_length_from_embed_many_is_refused_at_save(db):
    """A field declaring other dimensions than its provider gives: embed_many's vectors, checked
    against the provider, are checked again against the field before anything is written."""

    class Narrow(Model):
        note_id = AutoKeyField()
        agent_id = KeyField()
        text = StringField()
        embedding = EmbeddingField(source="text", provider=HashingEmbeddings(16), dimensions=8,
                                   partition_by="agent_id")

    notes = [Narrow(agent_id="a", text=f"note {i}") for i in range(3)]
    assert embed_many(notes) == 3
    with pytest.raises(ValidationError, match="16 dimensions, expected 8"):
        Narrow.save_many(notes)
    assert Narrow.query.filter(agent_id="a").count() == 0


def test_save_many_with_a_provider_failing_on_its_fourth_call_stores_nothing(any_db):
    """Every vector is computed before the first chunk is written: a provider that fails part way
    through a bulk save leaves nothing stored (before, the chunks embedded in time were written)."""

    class FailsFourth(Counting):
        fail_at = 3

        def embed(self, texts, input_type="document"):
            self.broken = self.calls == self.fail_at
            return super().embed(texts, input_type)

    provider = FailsFourth(max_batch_size=2)

    class Flaky(Model):
        memory_id = AutoKeyField()
        agent_id = KeyField()
        content = StringField()
        embedding = EmbeddingField(source="content", provider=provider, partition_by="agent_id")

    records = [Flaky(agent_id=f"a{i % 2}", content=f"note {i}") for i in range(20)]
    with pytest.raises(EmbeddingError, match="provider down"):
        Flaky.save_many(records, chunk_size=2)
    assert provider.calls == 3
    assert model_keys(any_db, Flaky) == set()
    provider.fail_at = None
    assert Flaky.save_many(records, chunk_size=2) == 20
    assert len(Flaky.query.filter(agent_id="a0").semantic_search("note 4", limit=20)) == 10


class Loose(Model):
    """Assigned vectors with neither a provider nor dimensions: their length is whatever is given."""

    name = KeyField()
    owner = KeyField(partition_by="owner")
    vector = EmbeddingField()


def test_assigned_vectors_need_no_provider_when_the_field_states_no_dimensions(any_db):
    first = Loose(name="a", owner="o")
    first.vector = [1, 0, 0]
    first.save()
    other = Loose(name="b", owner="o")
    other.vector = [0, 1, 0]
    other.save()
    assert [r.name for r in Loose.query.filter(owner="o").semantic_search([1, 0.1, 0])] == ["a", "b"]
