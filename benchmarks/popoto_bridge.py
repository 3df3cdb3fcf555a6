"""The redmem side's handle on popoto: its own virtual environment and a JSON-lines subprocess.

``ensure_venv()`` creates ``<repo>/.bench-venv`` (``python -m venv``) and installs popoto 1.10.1
with the same onnxruntime / tokenizers versions as this environment, once; a venv that already
holds them is reused. ``PopotoProcess`` starts ``popoto_runner.py`` in that venv against a
given Redis URL and forwards requests (see the runner's docstring for the protocol).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

log = logging.getLogger("benchmarks.popoto")

POPOTO_VERSION = "1.10.1"
REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".bench-venv"
RUNNER = Path(__file__).resolve().parent / "popoto_runner.py"


def _pinned(package: str) -> str:
    try:
        return f"{package}=={version(package)}"
    except PackageNotFoundError:
        return package


def venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def ensure_venv(venv: Path = VENV) -> Path:
    """The python of a venv holding popoto 1.10.1, onnxruntime and tokenizers (created if needed)."""
    python = venv_python(venv)
    check = [str(python), "-c", f"import popoto, onnxruntime, tokenizers, importlib.metadata as m; "
             f"assert m.version('popoto') == '{POPOTO_VERSION}'"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    log.warning("creating %s with popoto==%s (one-off, about a minute)", venv, POPOTO_VERSION)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    packages = [f"popoto=={POPOTO_VERSION}", _pinned("onnxruntime"), _pinned("tokenizers"), _pinned("numpy")]
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *packages],
                   check=True)
    subprocess.run(check, check=True)
    return python


class PopotoError(RuntimeError):
    """The runner answered a request with an error."""


class PopotoProcess:
    """One popoto runner process talking JSON lines; use as a context manager."""

    def __init__(self, redis_url: str, python: Path | None = None) -> None:
        self.content_dir = tempfile.TemporaryDirectory(prefix="popoto-content-")
        env = {**os.environ, "REDIS_URL": redis_url, "POPOTO_CONTENT_PATH": self.content_dir.name,
               "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [str(python or ensure_venv()), str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, text=True, bufsize=1,
        )

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise PopotoError(f"popoto runner exited (code {self.process.poll()}) during {op}")
        answer = json.loads(line)
        if "error" in answer:
            raise PopotoError(f"{op}: {answer['error']}")
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
        self.content_dir.cleanup()

    def __enter__(self) -> PopotoProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
