"""The opt-in HNSW pre-scan: exact scores, most of the exact top-k, a graph that follows the matrix."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redmem import KeyField, Model, ModelException, QueryException
from redmem.embeddings import VectorMatrix
from redmem.embeddings import _hnsw_prescan as hnsw_prescan
from redmem.embeddings import _prescan as prescan
from redmem.embeddings._codec import encode_stored
from redmem.embeddings._matrix import top_k
from redmem.fields import EmbeddingField
from redmem.fields._embedding import matrices

ORIGIN = b"digest!!"


def stored(vector: np.ndarray) -> bytes:
    return encode_stored(vector.astype(np.float32), "float32", ORIGIN)


def clustered(rng: np.random.Generator, count: int, dimensions: int) -> np.ndarray:
    """Rows around 40 centres, as a model's embeddings of related texts lie."""
    centres = rng.standard_normal((40, dimensions))
    return (centres[rng.integers(0, 40, count)] + 0.6 * rng.standard_normal((count, dimensions))).astype(np.float32)


def exact_top(rows: dict[str, np.ndarray], query: np.ndarray, limit: int) -> list[tuple[str, float]]:
    ids = sorted(rows)
    units = np.array([rows[i] / np.linalg.norm(rows[i]) for i in ids], dtype=np.float32)
    return top_k(units @ (query / np.linalg.norm(query)).astype(np.float32), ids, limit)


def loaded(rows: dict[str, np.ndarray]) -> VectorMatrix:
    matrix = VectorMatrix()
    matrix.apply((i, stored(v)) for i, v in rows.items())
    return matrix


def graph_holds_the_matrix(matrix: VectorMatrix) -> None:
    """Once caught up, the graph has exactly one node per row, holding that row's vector."""
    assert matrix.wait_for_graph(60)
    graph = matrix._graph
    assert graph is not None and graph.ready
    index = graph._index
    count = len(matrix.ids)
    assert sorted(int(key) for key in index.keys) == list(range(count))
    held = np.asarray(index.get(np.arange(count, dtype=np.uint64)), dtype=np.float32).reshape(count, -1)
    held /= np.linalg.norm(held, axis=1, keepdims=True)
    assert np.min(np.einsum("ij,ij->i", held, matrix._rows[:count])) > 0.98


@pytest.fixture
def small_matrices(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)


def test_the_exact_prescan_serves_until_the_graph_is_built(small_matrices):
    rng = np.random.default_rng(3)
    rows = {f"r{n:04d}": v for n, v in enumerate(clustered(rng, 2000, 48))}
    matrix, query = loaded(rows), rng.standard_normal(48).astype(np.float32)
    with matrix.lock:  # the build reads the rows under the lock: it cannot finish meanwhile
        before = matrix.rank(query, 10, "hnsw")
        assert matrix._graph is not None and not matrix._graph.ready
    assert before.hits == matrix.search(query, 10, "exact")
    assert before.hits == [(i, pytest.approx(s, abs=1e-6)) for i, s in exact_top(rows, query, 10)]
    assert matrix.wait_for_graph(60)
    after = matrix.rank(query, 10, "hnsw")
    assert not after.complete and after.prescan == "hnsw"
    assert len(after.ids) == hnsw_prescan.candidate_count(10)
    assert matrix.graph_build_seconds is not None


def test_hnsw_scores_exactly_and_finds_most_of_the_exact_top_k(small_matrices):
    rng = np.random.default_rng(5)
    vectors = clustered(rng, 3000, 96)
    rows = {f"r{n:04d}": v for n, v in enumerate(vectors)}
    matrix = loaded(rows)
    assert matrix.wait_for_graph(60)
    recall = []
    for n in range(40):
        query = vectors[n * 7] + 0.3 * rng.standard_normal(96).astype(np.float32)
        hits = matrix.search(query, 10, "hnsw")
        exact = dict(exact_top(rows, query, len(rows)))
        assert [s for _, s in hits] == pytest.approx([exact[i] for i, _ in hits], abs=1e-5)
        recall.append(len({i for i, _ in hits} & {i for i, _ in exact_top(rows, query, 10)}) / 10)
    assert np.mean(recall) >= 0.95
    assert matrix.search(vectors[5], 1, "hnsw")[0][0] == "r0005"


def test_the_graph_follows_sets_moves_and_removals(small_matrices):
    rng = np.random.default_rng(13)
    truth = {f"r{n}": rng.standard_normal(32).astype(np.float32) for n in range(2000)}
    matrix = loaded(truth)
    assert matrix.wait_for_graph(60)
    for step in range(400):
        record_id = f"r{rng.integers(0, 2600)}"
        if rng.random() < 0.3:
            truth.pop(record_id, None)
            matrix.apply([(record_id, None)])
        else:
            truth[record_id] = rng.standard_normal(32).astype(np.float32)
            matrix.apply([(record_id, stored(truth[record_id]))])
        if step % 5 == 0:  # a stored row is its own nearest neighbour: a stale graph would lose it
            probe = sorted(truth)[step % len(truth)]
            hits = matrix.search(truth[probe], 3, "hnsw")
            assert hits[0] == (probe, pytest.approx(1.0, abs=1e-5))
            assert all(i in truth for i, _ in hits)
    assert matrix._graph.ready and not matrix._graph.stale
    graph_holds_the_matrix(matrix)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.sampled_from([7, 50, 1000]),
       changes=st.lists(st.tuples(st.integers(0, 450), st.booleans()), max_size=80))
def test_changes_made_while_the_graph_is_built_reach_it(seed, chunk, changes):
    """Rows set or removed between the build's chunks (or after it) end up in the graph as they are."""
    rng = np.random.default_rng(seed)
    truth = {f"r{n}": rng.standard_normal(16).astype(np.float32) for n in range(400)}
    matrix = loaded(truth)
    original, hnsw_prescan.BUILD_CHUNK = hnsw_prescan.BUILD_CHUNK, chunk
    original_min, prescan.PRESCAN_MIN_ROWS = prescan.PRESCAN_MIN_ROWS, 8
    try:
        waiter = threading.Thread(target=matrix.wait_for_graph, args=(60,))
        waiter.start()
        for number, removed in changes:
            record_id, value = f"r{number}", None if removed else rng.standard_normal(16).astype(np.float32)
            with matrix.lock:  # as the field applies the change log
                matrix.apply([(record_id, None if value is None else stored(value))])
            if value is None:
                truth.pop(record_id, None)
            else:
                truth[record_id] = value
        waiter.join(60)
        assert matrix.wait_for_graph(60)
        probe = sorted(truth)[0]
        hits = matrix.search(truth[probe], 1, "hnsw")
        assert hits == [(probe, pytest.approx(1.0, abs=1e-5))]
        graph_holds_the_matrix(matrix)
    finally:
        hnsw_prescan.BUILD_CHUNK, prescan.PRESCAN_MIN_ROWS = original, original_min


def test_a_write_is_found_at_once_and_the_graph_catches_up_in_the_background(small_matrices):
    rng = np.random.default_rng(11)
    truth = {f"r{n}": v for n, v in enumerate(clustered(rng, 2000, 32))}
    matrix = loaded(truth)
    assert matrix.wait_for_graph(60)
    fresh = rng.standard_normal(32).astype(np.float32)
    with matrix.lock:  # the catch-up takes the lock too: it cannot run before the search
        matrix.apply([("new", stored(fresh)), ("r5", stored(-fresh)), ("r7", None)])
        graph = matrix._graph
        # r5 and r7 left their rows (the last two rows moved in), new and r5 were appended
        assert {matrix.ids[row] for row in graph.pending(len(matrix.ids))} == {"new", "r5", "r1998", "r1999"}
        ranking = matrix.rank(fresh, 5, "hnsw")
        assert ranking.hits[0] == ("new", pytest.approx(1.0, abs=1e-5))
        assert "r7" not in ranking.ids and "r5" in ranking.ids
        assert not ranking.complete and len(ranking.ids) >= hnsw_prescan.candidate_count(5)
    assert matrix.wait_for_graph(60) and graph.pending(len(matrix.ids)).size == 0
    assert matrix.search(fresh, 1, "hnsw")[0][0] == "new"
    graph_holds_the_matrix(matrix)


def test_a_bulk_write_past_the_pending_limit_is_served_by_the_exact_prescan(small_matrices, monkeypatch):
    monkeypatch.setattr(hnsw_prescan, "PENDING_MOST", 20)
    rng = np.random.default_rng(12)
    matrix = loaded({f"r{n}": v for n, v in enumerate(clustered(rng, 1000, 24))})
    assert matrix.wait_for_graph(60)
    bulk = {f"b{n}": v for n, v in enumerate(clustered(rng, 60, 24))}
    query = rng.standard_normal(24).astype(np.float32)
    with matrix.lock:
        matrix.apply((i, stored(v)) for i, v in bulk.items())
        assert matrix.rank(query, 10, "hnsw").hits == matrix.rank(query, 10, "exact").hits
    assert matrix.wait_for_graph(60)
    graph_holds_the_matrix(matrix)
    assert matrix.search(bulk["b3"], 1, "hnsw")[0][0] == "b3"


def test_a_reset_or_new_dimensions_drop_the_graph(small_matrices):
    rng = np.random.default_rng(7)
    matrix = loaded({f"r{n}": v for n, v in enumerate(rng.standard_normal((300, 16)))})
    assert matrix.wait_for_graph(60)
    first = matrix._graph
    matrix.reset(b"another-epoch")
    assert matrix._graph is None and first._closed
    rows = {f"s{n}": v for n, v in enumerate(rng.standard_normal((300, 24)).astype(np.float32))}
    matrix.apply((i, stored(v)) for i, v in rows.items())
    assert matrix.wait_for_graph(60) and matrix._graph is not first
    assert matrix.search(rows["s9"], 1, "hnsw")[0][0] == "s9"
    graph_holds_the_matrix(matrix)


def test_a_graph_with_more_removals_than_rows_is_built_again(small_matrices):
    rng = np.random.default_rng(8)
    truth = {f"r{n}": v for n, v in enumerate(rng.standard_normal((300, 16)).astype(np.float32))}
    matrix = loaded(truth)
    assert matrix.wait_for_graph(60)
    first = matrix._graph
    for _ in range(3):  # remove every row and add it back, letting the graph catch up
        matrix.apply((i, None) for i in list(truth))
        matrix.apply((i, stored(v)) for i, v in truth.items())
        matrix.search(truth["r1"], 1, "hnsw")
        assert matrix.wait_for_graph(60)
    assert first.stale and matrix._graph is not first
    assert matrix.wait_for_graph(60)
    assert matrix.search(truth["r1"], 1, "hnsw")[0][0] == "r1"


def test_a_failed_build_is_raised_to_a_waiter_and_started_again(small_matrices, monkeypatch):
    rng = np.random.default_rng(9)
    matrix = loaded({f"r{n}": v for n, v in enumerate(rng.standard_normal((100, 8)))})

    def broken(dimensions: int) -> None:
        raise MemoryError("no room for the graph")

    with monkeypatch.context() as patch:
        patch.setattr(hnsw_prescan, "new_index", broken)
        with pytest.raises(MemoryError, match="no room"):
            matrix.wait_for_graph(60)
    assert matrix._graph.stale
    query = rng.standard_normal(8).astype(np.float32)
    assert matrix.search(query, 5, "hnsw") == matrix.search(query, 5, "exact")  # the exact pre-scan serves
    assert matrix.wait_for_graph(60)


def test_a_forked_child_builds_its_own_graph():
    """The parent's builder thread does not exist in a fork: the child starts a graph of its own."""
    script = (
        "import os, numpy as np\n"
        "from redmem.embeddings import VectorMatrix, _prescan as prescan\n"
        "from redmem.embeddings._codec import encode_stored\n"
        "prescan.PRESCAN_MIN_ROWS = 64\n"
        "rows = np.random.default_rng(0).standard_normal((500, 16)).astype(np.float32)\n"
        "matrix = VectorMatrix()\n"
        "matrix.apply((str(n), encode_stored(v, 'float32', b'digest!!')) for n, v in enumerate(rows))\n"
        "assert matrix.wait_for_graph(60)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    parents = matrix._graph\n"
        "    ok = parents.stale and not parents.ready and matrix.search(rows[3], 1, 'hnsw')[0][0] == '3'\n"
        "    ok = ok and matrix.wait_for_graph(60) and matrix._graph is not parents\n"
        "    ok = ok and not matrix.rank(rows[4], 2, 'hnsw').complete\n"
        "    os._exit(0 if ok else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["0"], done.stderr


def test_an_hnsw_field_without_usearch_is_refused(monkeypatch):
    monkeypatch.setattr(hnsw_prescan, "find_spec", lambda name: None)
    with pytest.raises(ModelException, match=r"redmem\[hnsw\]"):
        EmbeddingField(dimensions=4, prescan="hnsw")


def test_usearch_and_onnxruntime_load_in_either_order():
    """The pinned usearch does not crash a process that imports onnxruntime after it (2.26.2 does)."""
    for modules in ("usearch.index, onnxruntime", "onnxruntime, usearch.index"):
        done = subprocess.run([sys.executable, "-c", f"import {modules}; print('loaded')"],
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout.strip()) == (0, "loaded"), (modules, done.stderr[-500:])


def test_an_hnsw_field_searches_through_the_graph_with_exact_scores(db, small_matrices):
    class Graphed(Model):
        item_id = KeyField()
        embedding = EmbeddingField(dimensions=48, dtype="float32", prescan="hnsw")

    rng = np.random.default_rng(21)
    vectors = clustered(rng, 400, 48)
    Graphed.save_many([Graphed(item_id=f"{n:03d}", embedding=v) for n, v in enumerate(vectors)])
    query = vectors[123] + 0.05 * rng.standard_normal(48).astype(np.float32)
    assert Graphed.query.semantic_search(query, limit=3)[0].item_id == "123"  # the exact pre-scan, meanwhile
    matrix = matrices.get(db, Graphed.embedding.keys(Graphed.query.partition())[0])
    assert Graphed.query.prepare_vectors(timeout=60)
    assert matrix._graph is not None and matrix._graph.ready
    found = Graphed.query.semantic_search(query, limit=3)
    cosines = vectors @ query / np.linalg.norm(vectors, axis=1) / np.linalg.norm(query)
    assert found[0].item_id == "123"
    assert [r._vector_score for r in found] == pytest.approx([cosines[int(r.item_id)] for r in found], abs=1e-5)
    Graphed(item_id="new", embedding=query).save()
    assert Graphed.query.semantic_search(query, limit=1)[0].item_id == "new"  # found before the graph holds it
    assert Graphed.query.prepare_vectors(timeout=60)
    with matrix.lock:
        ranking = matrix.rank(query, 3, "hnsw")
    assert not ranking.complete and len(ranking.ids) == hnsw_prescan.candidate_count(3)


def test_prepare_vectors_loads_the_partition_and_builds_its_graph(db, small_matrices):
    class Prepared(Model):
        item_id = KeyField()
        owner = KeyField()
        embedding = EmbeddingField(dimensions=16, dtype="float32", prescan="hnsw", partition_by="owner")

    class HnswPrescanPlain(Model):
        item_id = KeyField()
        embedding = EmbeddingField(dimensions=16, dtype="float32")

    rng = np.random.default_rng(22)
    Prepared.save_many([Prepared(item_id=str(n), owner="a", embedding=v) for n, v in enumerate(rng.standard_normal((300, 16)))])
    matrix = matrices.get(db, Prepared.embedding.keys(Prepared.query.filter(owner="a").partition())[0])
    assert len(matrix.ids) == 0
    assert Prepared.query.filter(owner="a").prepare_vectors(timeout=60)
    assert len(matrix.ids) == 300 and matrix._graph.ready  # loaded and built before any search
    HnswPrescanPlain(item_id="x", embedding=rng.standard_normal(16)).save()
    assert HnswPrescanPlain.query.prepare_vectors() and len(matrices.get(db, HnswPrescanPlain.embedding.keys(HnswPrescanPlain.query.partition())[0]).ids) == 1
    with pytest.raises(QueryException, match="partition only"):
        Prepared.query.filter(owner="a", item_id="1").prepare_vectors()


def test_aprepare_vectors_waits_for_the_graph_without_blocking_the_event_loop(db, small_matrices):
    class Awaited(Model):
        item_id = KeyField()
        embedding = EmbeddingField(dimensions=64, dtype="float32", prescan="hnsw")

    rng = np.random.default_rng(23)
    Awaited.save_many([Awaited(item_id=str(n), embedding=v) for n, v in enumerate(rng.standard_normal((4000, 64)))])
    ticks = []

    async def ticker(done: asyncio.Event) -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.002)

    async def prepare() -> tuple[bool, float]:
        done = asyncio.Event()
        ticking = asyncio.create_task(ticker(done))
        started = time.perf_counter()
        ready = await Awaited.query.aprepare_vectors(timeout=60)
        done.set()
        await ticking
        return ready, time.perf_counter() - started

    ready, seconds = asyncio.run(prepare())
    matrix = matrices.get(db, Awaited.embedding.keys(Awaited.query.partition())[0])
    assert ready and matrix._graph.ready and matrix.graph_build_seconds > 0.05
    assert len(ticks) >= 10 and max(np.diff(ticks)) < seconds / 2  # the loop kept running during the build
