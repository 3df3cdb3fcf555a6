"""elfmem 0.20.0 in its own virtual environment, driven over JSON lines (see elfmem_runner.py).

``ensure_venv()`` creates ``<repo>/.bench-elfmem-venv`` (git-ignored) with elfmem 0.20.0 and this
environment's numpy, once, by ``popoto_bridge.library_venv``: elfmem is never a dependency of
redmem. ``ElfmemProcess`` starts the runner there with a scratch directory on tmpfs (when
``/dev/shm`` exists) for its SQLite file, so the database is in memory, as Redis is.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from peers.popoto_bridge import REPO, RunnerProcess, library_venv, pinned

ELFMEM_VERSION = "0.20.0"
VENV = REPO / ".bench-elfmem-venv"
RUNNER = Path(__file__).resolve().parent / "elfmem_runner.py"


def ensure_venv(venv: Path = VENV) -> Path:
    """The python of a venv holding elfmem 0.20.0 (created if needed)."""
    check = f"import elfmem, importlib.metadata as m; assert m.version('elfmem') == '{ELFMEM_VERSION}'"
    return library_venv(venv, [f"elfmem=={ELFMEM_VERSION}", pinned("numpy")], check)


class ElfmemError(RuntimeError):
    """The runner answered a request with an error."""


class ElfmemProcess(RunnerProcess):
    """One elfmem runner with a fresh memory system over ``texts`` and their ``vectors``."""

    error = ElfmemError

    def __init__(self, texts: list[str], vectors: np.ndarray, python: Path | None = None) -> None:
        shm = Path("/dev/shm")
        self.scratch = tempfile.TemporaryDirectory(prefix="elfmem-bench-", dir=shm if shm.is_dir() else None)
        super().__init__(python or ensure_venv(), RUNNER, {})
        table = Path(self.scratch.name)
        (table / "texts.json").write_text(json.dumps(texts))
        np.save(table / "vectors.npy", np.asarray(vectors, dtype=np.float32))
        self.call("setup", directory=str(table), texts_path=str(table / "texts.json"),
                  vectors_path=str(table / "vectors.npy"))

    def close(self) -> None:
        super().close()
        self.scratch.cleanup()

    def __enter__(self) -> ElfmemProcess:
        return self
