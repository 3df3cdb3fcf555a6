"""redmem.integrations.langgraph_store: BaseStore semantics, checked against LangGraph's own
InMemoryStore (the package ships no store test suite), plus query search, async, and a graph."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import BaseStore, Item, MatchCondition, SearchItem
from langgraph.store.memory import InMemoryStore

from redmem.embeddings import HashingEmbeddings
from redmem.fields._embedding import EmbeddingField
from redmem.integrations.langgraph_store import RedmemStore, StoreRecord, matches_filter

DOCS = [
    (("users", "alice", "memories"), "m1", {"text": "Alice likes green tea", "score": 3, "kind": "food"}),
    (("users", "alice", "memories"), "m2", {"text": "Alice runs on Sundays", "score": 7, "kind": "sport"}),
    (("users", "bob", "memories"), "m1", {"text": "Bob drinks black coffee", "score": 5, "kind": "food"}),
    (("users", "bob", "profile"), "p", {"text": "Bob, 41, Oslo", "score": 1, "nested": {"city": "Oslo"}}),
    (("docs", "v1"), "d", {"text": "Deploy with blue green switches", "score": 9, "tags": ["a", "b"]}),
]


def fill(store: BaseStore) -> None:
    for namespace, key, value in DOCS:
        store.put(namespace, key, value)


def same(item, other) -> bool:
    return (item.namespace, item.key, item.value) == (other.namespace, other.key, other.value)


@pytest.fixture
def stores(db):
    redmem_store, reference = RedmemStore(), InMemoryStore()
    fill(redmem_store)
    fill(reference)
    return redmem_store, reference


def test_get_put_update_delete(stores):
    store, reference = stores
    for namespace, key, _ in DOCS:
        got, expected = store.get(namespace, key), reference.get(namespace, key)
        assert isinstance(got, Item) and same(got, expected)
        assert isinstance(got.created_at, datetime) and got.created_at.tzinfo is not None
    assert store.get(("users", "carol"), "m1") is None and store.get(("users", "alice", "memories"), "nope") is None
    before = store.get(("users", "alice", "memories"), "m1")
    store.put(("users", "alice", "memories"), "m1", {"text": "Alice prefers jasmine tea"})
    after = store.get(("users", "alice", "memories"), "m1")
    assert after.value == {"text": "Alice prefers jasmine tea"}
    assert after.created_at == before.created_at and after.updated_at >= before.updated_at
    store.delete(("users", "alice", "memories"), "m1")
    store.delete(("users", "alice", "memories"), "never-there")
    assert store.get(("users", "alice", "memories"), "m1") is None


@pytest.mark.parametrize("conditions, depth", [
    (None, None), ((MatchCondition("prefix", ("users",)),), None), ((MatchCondition("suffix", ("memories",)),), None),
    ((MatchCondition("prefix", ("users", "*", "memories")),), None), (None, 2), (None, 1),
    ((MatchCondition("prefix", ("users",)), MatchCondition("suffix", ("profile",))), None),
])
def test_list_namespaces_as_langgraph_does(stores, conditions, depth):
    store, reference = stores
    prefix = suffix = None
    for condition in conditions or ():
        if condition.match_type == "prefix":
            prefix = condition.path
        else:
            suffix = condition.path
    got = store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth)
    assert got == reference.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth)
    assert store.list_namespaces(limit=2, offset=1) == reference.list_namespaces(limit=2, offset=1)


def test_a_namespace_whose_last_item_is_deleted_is_not_listed(db):
    store = RedmemStore()
    store.put(("a",), "k", {"x": 1})
    store.put(("b",), "k", {"x": 1})
    store.delete(("a",), "k")
    assert store.list_namespaces() == [("b",)]


@pytest.mark.parametrize("prefix, wanted", [
    (("users",), None), (("users", "alice"), None), ((), {"kind": "food"}), ((), {"score": {"$gte": 5}}),
    ((), {"score": {"$gt": 3, "$lt": 9}}), ((), {"kind": {"$ne": "food"}}), ((), {"nested": {"city": "Oslo"}}),
    ((), {"tags": ["a", "b"]}), ((), {"missing": 1}), (("docs",), {"score": 9}),
])
def test_filtered_search_finds_what_langgraph_finds(stores, prefix, wanted):
    store, reference = stores
    got = store.search(prefix, filter=wanted, limit=20)
    expected = reference.search(prefix, filter=wanted, limit=20)
    assert all(isinstance(item, SearchItem) and item.score is None for item in got)
    assert sorted((i.namespace, i.key) for i in got) == sorted((i.namespace, i.key) for i in expected)


def test_search_without_query_is_newest_first_and_pages(stores):
    store, _ = stores
    everything = store.search((), limit=20)
    assert [(i.namespace, i.key) for i in everything] == [(n, k) for n, k, _ in reversed(DOCS)]
    assert store.search((), limit=2, offset=1) == everything[1:3]


def test_query_search_ranks_by_bm25_inside_the_prefix(stores):
    store, _ = stores
    found = store.search(("users",), query="green tea", limit=5)
    assert [(i.namespace, i.key) for i in found] == [(("users", "alice", "memories"), "m1")]
    assert found[0].score == pytest.approx(1.0)
    coffee = store.search((), query="coffee or tea", limit=5, filter={"kind": "food"})
    assert {i.value["text"] for i in coffee} == {"Alice likes green tea", "Bob drinks black coffee"}
    assert store.search((), query="coffee or tea", filter={"score": {"$gt": 4}}, limit=5)[0].key == "m1"
    assert store.search((), query="green", limit=1, offset=1)[0].value["text"] in {
        "Alice likes green tea", "Deploy with blue green switches"}
    assert store.search(("docs",), query="tea") == []


def test_index_paths_and_index_false_decide_what_a_query_finds(db):
    store = RedmemStore(index_paths=["title"])
    store.put(("n",), "a", {"title": "lighthouse keeper", "body": "harbour"})
    store.put(("n",), "b", {"title": "harbour master", "body": "lighthouse"}, index=["body"])
    store.put(("n",), "c", {"title": "lighthouse"}, index=False)
    assert sorted(i.key for i in store.search(("n",), query="lighthouse")) == ["a", "b"]
    assert [i.key for i in store.search(("n",), query="harbour")] == []


def test_a_filter_that_rejects_the_best_candidates_still_fills_the_page(db):
    store = RedmemStore()
    for i in range(30):
        store.put(("n",), f"k{i:02}", {"text": "apple " * (30 - i), "even": i % 2 == 0})
    found = store.search(("n",), query="apple", filter={"even": False}, limit=10)
    assert [i.key for i in found] == [f"k{i:02}" for i in range(1, 20, 2)]


class LanggraphEmbeddedRecord(StoreRecord):
    embedding = EmbeddingField(source="text", partition_by="namespace_path", provider=HashingEmbeddings(64))


def test_hybrid_search_with_an_embedding_field(db):
    store = RedmemStore(LanggraphEmbeddedRecord)
    store.put(("n",), "a", {"text": "the cat sat on the mat"})
    store.put(("n",), "b", {"text": "stock markets fell today"})
    found = store.search(("n",), query="cat on a mat")
    assert found[0].key == "a" and 0 < found[0].score <= 1


def test_async_methods_run_the_same_operations(db):
    store = RedmemStore()

    async def scenario():
        await store.aput(("a", "b"), "k", {"text": "hello async world"})
        got = await store.aget(("a", "b"), "k")
        found = await store.asearch(("a",), query="async")
        spaces = await store.alist_namespaces()
        await store.adelete(("a", "b"), "k")
        return got, found, spaces, await store.aget(("a", "b"), "k")

    got, found, spaces, gone = asyncio.run(scenario())
    assert got.value == {"text": "hello async world"} and [i.key for i in found] == ["k"]
    assert spaces == [("a", "b")] and gone is None


def test_namespaces_are_tenants(db):
    store = RedmemStore()
    store.put(("users", "alice"), "k", {"text": "x"})
    record = StoreRecord.query.get(namespace_path="users.alice", item_key="k")
    assert record.db_key.partition == ("users.alice",)


def test_filter_operators():
    assert matches_filter({"a": 2}, {"a": {"$gte": 2, "$lte": 2}}) and not matches_filter({}, {"a": {"$gt": 1}})
    assert matches_filter({"a": None}, {"a": {"$ne": 1}})
    with pytest.raises(ValueError, match="unsupported"):
        matches_filter({"a": 1}, {"a": {"$regex": "x"}})


def test_a_graph_node_reads_and_writes_the_store(db):
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.runtime import Runtime

    def remember_and_recall(state: MessagesState, runtime: Runtime) -> dict:
        store = runtime.store
        text = state["messages"][-1].content
        store.put(("memories", "u1"), f"m{len(store.search(('memories', 'u1'), limit=100))}", {"text": text})
        recalled = store.search(("memories", "u1"), query=text, limit=1)
        return {"messages": [("ai", f"recalled: {recalled[0].value['text']}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("remember", remember_and_recall)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=RedmemStore())
    out = graph.invoke({"messages": [("user", "I keep bees")]})
    assert out["messages"][-1].content == "recalled: I keep bees"
    assert [i.key for i in RedmemStore().search(("memories",))] == ["m0"]
