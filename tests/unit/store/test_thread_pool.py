"""The library's thread pools: made on first use, made again in a forked child."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from redmem.store._thread_pool import LazyPool


def test_a_pool_runs_work_on_its_own_threads():
    pool = LazyPool(2, "redmem-test")
    names = {pool.submit(lambda: threading.current_thread().name).result() for _ in range(8)}
    assert names and all(name.startswith("redmem-test") for name in names)
    assert threading.current_thread().name not in names


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_working_pools():
    """The parent's pools have threads; the child inherits none of them and must not wait forever."""
    script = (
        "import os, numpy as np\n"
        "from redmem.embeddings import _prescan as prescan, _slices as slices\n"
        "slices.SCAN_THREADS, slices.SLICE_MIN = 2, 64\n"
        "rows = np.random.default_rng(0).standard_normal((4000, 16)).astype(np.float32)\n"
        "rows /= np.linalg.norm(rows, axis=1, keepdims=True)\n"
        "codes = prescan.quantize(rows)\n"
        "parent = prescan.shortlist(*codes, rows[3], 5)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    child = prescan.shortlist(*codes, rows[3], 5)\n"
        "    os._exit(0 if np.array_equal(child, parent) else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["0"], done.stderr
