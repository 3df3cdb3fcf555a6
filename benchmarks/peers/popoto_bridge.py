"""The redmem side's handle on another library: its own virtual environment and a JSON-lines subprocess.

``library_venv(venv, requirements, check)`` creates a venv (``python -m venv``) and pip-installs
``requirements`` into it, once: a venv where ``check`` (Python code) already runs is reused.
``RunnerProcess`` starts a runner script in such a venv and forwards JSON-line requests to it.
For popoto: ``ensure_venv()`` makes ``<repo>/.bench-venv`` with popoto 1.10.1 and the same
onnxruntime / tokenizers versions as this environment; ``PopotoProcess`` runs
``popoto_runner.py`` there against a given Redis URL (see the runner's docstring for the
protocol). ``elfmem_bridge.py`` uses the same two for elfmem.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

log = logging.getLogger("benchmarks.popoto")

POPOTO_VERSION = "1.10.1"
REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".bench-venv"
RUNNER = Path(__file__).resolve().parent / "popoto_runner.py"


def pinned(package: str) -> str:
    """``package==<the version installed here>``, or the bare name when it is not installed here."""
    try:
        return f"{package}=={version(package)}"
    except PackageNotFoundError:
        return package


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def library_venv(venv: Path, requirements: Sequence[str], check: str) -> Path:
    """The python of ``venv`` once ``check`` runs there; created with ``requirements`` if it does not."""
    python = venv_python(venv)
    if python.exists() and subprocess.run([str(python), "-c", check], capture_output=True).returncode == 0:
        return python
    log.warning("creating %s with %s (one-off, about a minute)", venv, " ".join(requirements))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
                   check=True)
    subprocess.run([str(python), "-c", check], check=True)
    return python


def ensure_venv(venv: Path = VENV) -> Path:
    """The python of a venv holding popoto 1.10.1, onnxruntime and tokenizers (created if needed)."""
    check = (f"import popoto, onnxruntime, tokenizers, importlib.metadata as m; "
             f"assert m.version('popoto') == '{POPOTO_VERSION}'")
    requirements = [f"popoto=={POPOTO_VERSION}", pinned("onnxruntime"), pinned("tokenizers"), pinned("numpy")]
    return library_venv(venv, requirements, check)


class PopotoError(RuntimeError):
    """The runner answered a request with an error."""


class RunnerProcess:
    """One runner script in a library's venv, talking JSON lines; use as a context manager."""

    error = PopotoError

    def __init__(self, python: Path, runner: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [str(python), str(runner)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env={**os.environ, **env, "PYTHONUNBUFFERED": "1"}, text=True, bufsize=1,
        )

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise self.error(f"runner exited (code {self.process.poll()}) during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise self.error(f"{op}: {answer['error']}")
        return answer

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin
            self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RunnerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PopotoProcess(RunnerProcess):
    """popoto_runner.py in popoto's venv against ``redis_url``, with a scratch directory for its vectors."""

    def __init__(self, redis_url: str, python: Path | None = None) -> None:
        self.content_dir = tempfile.TemporaryDirectory(prefix="popoto-content-")
        super().__init__(python or ensure_venv(), RUNNER,
                         {"REDIS_URL": redis_url, "POPOTO_CONTENT_PATH": self.content_dir.name})

    def close(self) -> None:
        super().close()
        self.content_dir.cleanup()

    def __enter__(self) -> PopotoProcess:
        return self
