"""The in-process BM25 postings (redmem.fields._bm25_postings): a warm copy stays exact through
saves, updates, deletes and bulk saves made between its searches, by this process's threads
or by another client; it reloads when it fell behind the log, when the index was emptied and
refilled, when an index written before the log existed gets its first logged write, and when a
list's length disagrees with the server's df; concurrent searches of one copy agree with the
exhaustive search; a warm search sends no postings."""

from __future__ import annotations

import random
import shutil
import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.cluster import RedisCluster

import redmem
from redmem.fields import _bm25 as bm25
from redmem.fields import _bm25_postings as bm25_postings
from redmem.fields._bm25_postings import copies
from redmem.store._embedded import EmbeddedServer
from test_bm25 import WORDS, check_search, fresh_agent, random_corpus
from test_bm25 import Bm25Memory as Memory


def docs_of(agent: str) -> dict[str, str]:
    return {r._saved_key.record_id: r.content or "" for r in Memory.query.filter(agent_id=agent).all()}


def search(agent: str, text: str, limit: int = 10):
    return Memory.content_bm25.search(Memory.query.filter(agent_id=agent).partition(), text, limit)


def copy_of(agent: str):
    keys = Memory.content_bm25.keys_in(Memory.query.filter(agent_id=agent).partition())
    return copies.get(Memory._meta.client, keys.lengths)


def test_a_warm_search_sends_no_postings(any_db):
    agent = fresh_agent()
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(random.Random(3), 300, common=0.5)])
    first = search(agent, "redis cluster memory")
    again = search(agent, "redis cluster memory")
    assert first.mode == again.mode == "cached"
    assert first.postings_read > 0
    assert again.postings_read == 0 and again.ranked == first.ranked
    check_search(Memory, agent, docs_of(agent), "redis cluster memory")


search_ops = st.lists(
    st.tuples(
        st.sampled_from(["save", "save", "update", "delete", "clear", "search", "bulk"]),
        st.integers(0, 7),
        st.lists(st.sampled_from(WORDS[:8] + ["the"]), max_size=10).map(" ".join),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=search_ops)
def test_a_warm_copy_follows_every_kind_of_write(any_db, ops):
    """Searches between the writes keep the copy warm; each search equals the reference."""
    agent = fresh_agent()
    live: dict[int, Memory] = {}
    for action, slot, text in ops:
        record = live.get(slot)
        if action == "search":
            check_search(Memory, agent, docs_of(agent), text or "redis", limit=4)
        elif action == "bulk":
            made = [Memory(agent_id=agent, content=f"{text} {w}") for w in WORDS[slot : slot + 3]]
            Memory.save_many(made, chunk_size=2)
        elif action == "save" and record is None:
            live[slot] = Memory.create(agent_id=agent, content=text)
        elif action in ("save", "update") and record is not None:
            record.content = text
            record.save()
        elif action == "clear" and record is not None:
            record.content = None
            record.save()
        elif action == "delete" and record is not None:
            record.delete()
            del live[slot]
    for text in ["redis", "deploy cluster memory", "agent python the"]:
        check_search(Memory, agent, docs_of(agent), text, limit=4)


def test_a_copy_behind_the_log_reloads(any_db, monkeypatch):
    monkeypatch.setattr(bm25, "LOG_KEEP", 8)
    monkeypatch.setattr(bm25, "LOG_FRACTION", 1000)
    agent, rng = fresh_agent(), random.Random(5)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 40)])
    search(agent, "redis memory")
    version = copy_of(agent).version
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 30)], chunk_size=7)
    found = search(agent, "redis memory")
    assert found.postings_read > 0 and copy_of(agent).version == version + 30  # reloaded, not caught up
    check_search(Memory, agent, docs_of(agent), "redis memory")


def test_an_emptied_and_refilled_index_starts_a_new_epoch(any_db):
    agent = fresh_agent()
    made = [Memory.create(agent_id=agent, content=f"redis note {i}") for i in range(5)]
    search(agent, "redis note")
    epoch = copy_of(agent).epoch
    for record in made:
        record.delete()
    assert search(agent, "redis").ranked == []
    Memory.create(agent_id=agent, content="redis again")
    assert [score > 0 for _, score in search(agent, "redis").ranked] == [True]
    assert copy_of(agent).epoch not in (epoch, None)
    check_search(Memory, agent, docs_of(agent), "redis note")


def test_an_index_written_before_the_log_existed(any_db):
    """No version hash, no log (as the previous redmem wrote): searched as it is, then the first
    logged write starts an epoch and the copy reloads."""
    agent, rng = fresh_agent(), random.Random(8)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 60)])
    keys = Memory.content_bm25.keys_in(Memory.query.filter(agent_id=agent).partition())
    any_db.delete(keys.version, keys.log)
    check_search(Memory, agent, docs_of(agent), "redis cluster")
    assert copy_of(agent).epoch == b""
    Memory.create(agent_id=agent, content="redis redis cluster")
    check_search(Memory, agent, docs_of(agent), "redis cluster")
    assert copy_of(agent).epoch not in (b"", None)


def test_a_list_that_disagrees_with_its_df_is_read_again(any_db):
    """A writer that does not log (an older redmem) changed a list behind the copy's back."""
    agent, rng = fresh_agent(), random.Random(9)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 80)])
    space = Memory.query.filter(agent_id=agent).partition()
    keys = Memory.content_bm25.keys_in(space)
    search(agent, "redis cluster")
    member = any_db.zrange(keys.posting("redi"), 0, 0)[0]
    any_db.zrem(keys.posting("redi"), member)  # by hand: the list is now one shorter
    found = search(agent, "redis cluster")
    exhaustive = Memory.content_bm25.search(space, "redis cluster", 10, exhaustive=True)
    assert found.mode == "cached" and found.ranked == exhaustive.ranked and found.postings_read > 0


def test_another_client_writes_while_this_one_reads(any_db, redis_url, cluster_url):
    """Writes through a second connection (another process, as far as the copy can tell)."""
    agent, rng = fresh_agent(), random.Random(12)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 50)])
    check_search(Memory, agent, docs_of(agent), "redis agent")
    cluster = isinstance(any_db, RedisCluster)
    reader = Memory._meta.client
    writer = redmem.connect(cluster_url if cluster else redis_url, cluster=cluster)
    assert writer is not reader
    try:
        for record in Memory.query.filter(agent_id=agent).all()[:10]:
            record.content = "redis agent " + record.content
            record.save()
        Memory.create(agent_id=agent, content="redis redis agent")
    finally:
        redmem.configure(client=reader)
    check_search(Memory, agent, docs_of(agent), "redis agent")


def test_concurrent_searches_and_writers_in_one_process(db):
    """Threads search one copy while others write: every search equals the exhaustive one taken
    with the writers stopped, and the searches taken during the writes never fail."""
    agent, rng = fresh_agent(), random.Random(21)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 200, common=0.5)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def write(seed: int) -> None:
        local = random.Random(seed)
        mine = [Memory.create(agent_id=agent, content=" ".join(local.choices(WORDS, k=6))) for _ in range(5)]
        for _ in range(25):
            record = local.choice(mine)
            record.content = " ".join(local.choices(WORDS, k=local.randint(0, 8)))
            record.save()
        mine[0].delete()

    def read(seed: int) -> None:
        local = random.Random(seed)
        while not stop.is_set():
            try:
                found = search(agent, " ".join(local.choices(WORDS[:12], k=3)))
                assert found.mode in ("cached", "bounded")
            except BaseException as error:
                errors.append(error)
                return

    writers = [threading.Thread(target=write, args=(seed,)) for seed in range(3)]
    readers = [threading.Thread(target=read, args=(100 + seed,)) for seed in range(3)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors
    space = Memory.query.filter(agent_id=agent).partition()
    for text in ["redis cluster", "memory agent index", "python deploy"]:
        exhaustive = Memory.content_bm25.search(space, text, 10, exhaustive=True)
        assert search(agent, text).ranked == exhaustive.ranked
        check_search(Memory, agent, docs_of(agent), text)


def test_a_reply_overtaken_by_a_newer_one_is_asked_again(any_db):
    """Search A reads the index, a write lands, search B reads and applies it first: A's older
    reply no longer continues the copy, so A syncs again and answers for the newer state."""
    agent, rng = fresh_agent(), random.Random(30)
    Memory.save_many([Memory(agent_id=agent, content=t) for t in random_corpus(rng, 60)])
    space = Memory.query.filter(agent_id=agent).partition()
    search(agent, "redis memory")  # warm
    client = Memory._meta.client
    older = Memory.content_bm25.searcher(space, "redis memory", 5)
    older_replies = [call.run(client) for call in older.calls()]
    Memory.create(agent_id=agent, content="redis redis memory memory")
    newer = Memory.content_bm25.searcher(space, "redis memory", 5)
    newer_result = newer.finish([call.run(client) for call in newer.calls()])
    older_result = older.finish(older_replies)
    exhaustive = Memory.content_bm25.search(space, "redis memory", 5, exhaustive=True)
    assert older_result.ranked == newer_result.ranked == exhaustive.ranked


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.lists(st.sampled_from(WORDS[:10] + ["the"]), max_size=14).map(" ".join), min_size=1, max_size=120),
    question=st.lists(st.sampled_from(WORDS[:12] + ["what", "the"]), min_size=1, max_size=9).map(" ".join),
    limit=st.integers(1, 12),
)
def test_maxscore_over_the_copy_equals_brute_force(any_db, monkeypatch, texts, question, limit):
    """The threshold taken from the list of largest bound alone: the lists of small bound are
    only looked up for the other lists' records, and ids and scores still equal the references."""
    monkeypatch.setattr(bm25_postings, "FIRST_POSTINGS", 1)
    agent = fresh_agent()
    records = [Memory(agent_id=agent, content=t) for t in texts]
    Memory.save_many(records, chunk_size=37)
    check_search(Memory, agent, {r._saved_key.record_id: r.content for r in records}, question, limit=limit)


def test_lists_of_small_bound_are_only_looked_up(any_db):
    """A rare word and a word in every record: only the rare word's records are scored."""
    agent = fresh_agent()
    texts = [f"memory note {i}" + (" lua" if i % 50 == 0 else "") for i in range(3000)]
    Memory.save_many([Memory(agent_id=agent, content=t) for t in texts])
    found = search(agent, "lua memory", 5)
    assert found.records_scored == 60 and len(found.ranked) == 5
    check_search(Memory, agent, docs_of(agent), "lua memory", limit=5)


def test_copies_follow_a_server_restarted_from_an_older_snapshot(restartable):
    """As for the vector matrices (tests/integration/store/test_vector_rollback.py): a copy searched before any new
    write sees its version above n and reloads; after new writes (n past the copy's version) the
    new server process's epoch makes it reload."""
    server, data = restartable
    client = redmem.get_client()
    for agent in ("a", "b"):
        Memory.save_many([Memory(agent_id=agent, content=f"garden note {i}") for i in range(20)])
    client.save()
    shutil.copy(data / "dump.rdb", data / "older.rdb")
    for agent in ("a", "b"):
        Memory.save_many([Memory(agent_id=agent, content=f"kitchen note {i}") for i in range(30)], chunk_size=1)
        assert len(search(agent, "kitchen note", 50).ranked) == 50
    port = server.port
    server.stop()
    shutil.copy(data / "older.rdb", data / "dump.rdb")
    server = EmbeddedServer(unix_socket=False, port=port,
                            extra_args=["--dir", str(data), "--dbfilename", "dump.rdb"]).start()
    try:
        assert search("a", "kitchen", 50).ranked == []
        check_search(Memory, "a", docs_of("a"), "garden note", limit=50)
        Memory.save_many([Memory(agent_id="b", content=f"harbour note {i}") for i in range(40)], chunk_size=1)
        assert len(search("b", "harbour", 100).ranked) == 40
        check_search(Memory, "b", docs_of("b"), "harbour kitchen note", limit=100)
    finally:
        server.stop()


def test_a_reload_forgets_lengths_it_may_have_missed(any_db, monkeypatch):
    """Records the copy knew change length while it is behind the log; after the reload (of
    other lists) their lists, read later, are scored with the new lengths."""
    monkeypatch.setattr(bm25, "LOG_KEEP", 4)
    monkeypatch.setattr(bm25, "LOG_FRACTION", 1000)
    agent = fresh_agent()
    alphas = [Memory(agent_id=agent, content="alpha " + "filler " * i) for i in range(12)]
    Memory.save_many(alphas + [Memory(agent_id=agent, content=f"beta {i}") for i in range(6)])
    search(agent, "alpha")  # the copy knows the alpha records' lengths
    for i, record in enumerate(alphas):
        record.content = "alpha " + "padding " * (11 - i) + "alpha" * (i % 3)
    Memory.save_many(alphas, chunk_size=3)  # 12 changes: past the 4 the log keeps
    search(agent, "beta")  # a reload, of the beta list only
    check_search(Memory, agent, docs_of(agent), "alpha", limit=12)


def test_the_footprint_counts_what_the_copy_holds(any_db):
    agent = fresh_agent()
    Memory.save_many([Memory(agent_id=agent, content=f"redis note {i}") for i in range(30)])
    search(agent, "redis cluster")
    held = copy_of(agent).footprint()
    assert (held["lists"], held["postings"]) == (2, 30)  # redis: 30 postings, cluster: none
    assert held["array_bytes"] >= 30 * 24 and held["id_bytes"] >= 30 * 32
