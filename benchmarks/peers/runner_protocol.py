"""The line protocol every benchmark runner serves (popoto_runner, elfmem_runner, stack_runner).

Each runs in its own venv with the library it drives, and imports nothing of redmem: one JSON
request per stdin line, ``{"op": name, **arguments}``, answered by one JSON line on stdout (an
``{"error": ...}`` object when the op raised, which the parent's ``RunnerProcess`` raises there);
``{"op": "quit"}`` or the end of input stops it.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["serve"]

log = logging.getLogger("benchmarks.runner")


def serve(handle: Callable[[str, dict[str, Any]], Any]) -> None:
    """Answer each request with ``handle(op, arguments)`` until "quit" or the end of input."""
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            break
        try:
            answer = handle(op, request)
        except Exception as exc:  # reported to the parent, which raises it there
            log.exception("%s failed", op)
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
