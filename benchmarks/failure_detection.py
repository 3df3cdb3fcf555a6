"""How long redmem takes to report a dead server, by failure kind, with default and given options.

Every scenario runs on loopback against a private server (``EmbeddedServer``) or a local socket:

- ``refused``: nothing listens on the port (connect() is refused);
- ``stopped``: a connected client's server gets SIGSTOP (its sockets stay open, nothing answers);
- ``exited``: a connected client's server process is shut down (its port then refuses);
- ``silent``: a port that accepts connections and never answers.

Each figure is the median of ``--repeats`` runs of the time from the call to the
``ServerUnavailable`` it raises. It also measures the server memory one write's operation key
holds while it lives (``OP_TTL_SECONDS``): the growth of ``used_memory`` over 1,000
``update_confidence`` calls on one record, per call. ``python benchmarks/failure_detection.py``
writes ``benchmarks/results/failure_detection.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redmem
from redmem.store._embedded import EmbeddedServer

RESULTS = Path(__file__).parent / "results" / "failure_detection.json"


def _elapsed(action: Callable[[], object]) -> float:
    """Seconds until ``action`` raises ServerUnavailable (it must)."""
    start = time.perf_counter()
    try:
        action()
    except redmem.ServerUnavailable:
        return time.perf_counter() - start
    raise AssertionError("the server answered")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def _silent_port() -> Iterator[int]:
    """A port whose kernel backlog accepts connections that nobody ever reads."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def refused(options: dict) -> float:
    return _elapsed(lambda: redmem.connect(f"redis://127.0.0.1:{_free_port()}", **options))


def silent(options: dict) -> float:
    with _silent_port() as port:
        return _elapsed(lambda: redmem.connect(f"redis://127.0.0.1:{port}", **options))


def _connected_server(options: dict) -> tuple[EmbeddedServer, object]:
    server = EmbeddedServer(unix_socket=False).start()
    client = redmem.connect(server.url, **options)
    client.set("failure-detection", "1")
    return server, client


def _read(client: object) -> Callable[[], object]:
    def read() -> object:
        with redmem.store._connection.server_errors(client):
            return client.get("failure-detection")

    return read


def stopped(options: dict) -> float:
    server, client = _connected_server(options)
    pid = server._proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        return _elapsed(_read(client))
    finally:
        os.kill(pid, signal.SIGCONT)
        server.stop()


def exited(options: dict) -> float:
    server, client = _connected_server(options)
    server.stop()
    return _elapsed(_read(client))


def operation_key_bytes(calls: int = 1000) -> float:
    """Server memory per write held by its operation key (one record updated ``calls`` times)."""

    class Belief(redmem.Model):
        belief_id = redmem.KeyField()
        confidence = redmem.ConfidenceField()

    with EmbeddedServer() as server:
        client = redmem.connect(server.url)
        belief = Belief.create(belief_id="b")
        redmem.ConfidenceField.update_confidence(belief, "confidence", 0.5)
        before = client.info("memory")["used_memory"]
        for _ in range(calls):
            redmem.ConfidenceField.update_confidence(belief, "confidence", 0.5)
        return (client.info("memory")["used_memory"] - before) / calls


SCENARIOS = {"refused": refused, "stopped": stopped, "exited": exited, "silent": silent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    configs = {"defaults": {}, "socket_timeout=2": {"socket_timeout": 2}}
    results: dict = {"repeats": args.repeats, "seconds": {}}
    for label, options in configs.items():
        row = {}
        for name, scenario in SCENARIOS.items():
            row[name] = round(statistics.median(scenario(options) for _ in range(args.repeats)), 2)
        results["seconds"][label] = row
        print(label, row, flush=True)
    results["operation_key_bytes"] = round(operation_key_bytes())
    print("operation key bytes", results["operation_key_bytes"], flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
