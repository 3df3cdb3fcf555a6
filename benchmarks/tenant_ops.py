"""Tenant erase, export and import at scale: one tenant of N memories beside a small one.

    .venv/bin/python benchmarks/tenant_ops.py --memories 100000
    .venv/bin/python benchmarks/tenant_ops.py --memories 2000       # quick check

One private embedded server. The tenant ``big`` gets N memories of the seed's model with hashed
vectors (``redmem_driver.memory_model``: BM25, vectors, decay, confidence, graph, access
tracking), saved with ``save_many``; a few searches and a recall with feedback give it access
logs, staged reads, graph edges and recall proposals. The tenant ``small`` (100 memories) is
there to be left alone. Then, timed: export to a JSON Lines file, erase (keys left counted by a
separate SCAN of the whole server), import from the file, export again. Reported: keys and
memories, each step's seconds, the export's size, keys left after the erase, whether the second
export equals the first (every line, the cache epochs the import renews left out), and whether
``small`` is byte-for-byte unchanged. Results are kept per N in one file (a run replaces its N).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import RESULTS, machine, read_json, synthetic_texts, write_json
from redmem import ObservationProtocol
from redmem.recipes._tenant_data import erase_tenant, export_tenant, import_tenant
from redmem.store._embedded import EmbeddedServer
from redmem_driver import hash_provider, ingest_measured, make_assembler, memory_model

NAME = "tenant_ops"


def fill(model: type, agent: str, count: int, provider: Any) -> None:
    """``count`` memories in bulk, then reads, a recall and feedback (access logs, edges, proposals)."""
    ingest_measured(model, agent, synthetic_texts(count, seed=count), single=0, provider=provider)
    assembler = make_assembler(model, "hybrid")
    for text in synthetic_texts(5, seed=1):
        result = assembler.assemble(query_cues={"query": " ".join(text.split()[:3])}, agent_id=agent)
        ObservationProtocol.on_context_used(result.records, {r: "acted" for r in result.records})


def export_digest(model: type, agent: str, path: Path) -> tuple[float, str, int]:
    """Export ``agent`` to ``path``: (seconds, digest of its lines, keys). The digest leaves out the
    cache epochs the import renews and the keys with an expiry (operation keys, staged reads: they
    may expire between two exports)."""
    started = time.perf_counter()
    with path.open("w", encoding="utf-8") as out:
        keys = export_tenant(model, out, agent_id=agent)
    seconds = time.perf_counter() - started
    digest = hashlib.sha256()
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row.get("ttl_ms") is not None:
                continue
            if row.get("type") == "hash":
                row["value"] = [pair for pair in row["value"] if pair[0] != "epoch"]
            digest.update(json.dumps(row).encode())
    return seconds, digest.hexdigest(), keys


def small_state(client: Any, model: type) -> str:
    """A digest of every key of tenant ``small`` without an expiry (DUMP payloads, in key order)."""
    base = model._meta.keyspace(("small",)).base
    keys = sorted(key for key in client.scan_iter(match=base + ":*", count=1000) if client.pttl(key) < 0)
    return hashlib.sha256(b"".join(key + (client.dump(key) or b"") for key in keys)).hexdigest()


def run(memories: int) -> dict[str, Any]:
    provider = hash_provider()
    with EmbeddedServer(unix_socket=False) as server, server.client() as client, \
            tempfile.TemporaryDirectory() as directory:
        redmem.configure(client=client, key_prefix="bench", embedding_provider=provider)
        model = memory_model("TenantOpsMemory", provider)
        started = time.perf_counter()
        fill(model, "big", memories, provider)
        fill(model, "small", 100, provider)
        fill_seconds = time.perf_counter() - started
        small_before = small_state(client, model)
        path, again = Path(directory) / "big.jsonl", Path(directory) / "again.jsonl"

        export_seconds, first, keys = export_digest(model, "big", path)
        started = time.perf_counter()
        erased = erase_tenant(model, agent_id="big")
        erase_seconds = time.perf_counter() - started
        left = sum(1 for _ in client.scan_iter(match="*{big}*", count=1000))
        started = time.perf_counter()
        with path.open(encoding="utf-8") as lines:
            _, written = import_tenant(model, lines)
        import_seconds = time.perf_counter() - started
        _, second, _ = export_digest(model, "big", again)
        return {
            "memories": memories, "keys": keys, "fill_seconds": round(fill_seconds, 1),
            "export_seconds": round(export_seconds, 2), "export_mb": round(path.stat().st_size / 2**20, 1),
            "erase_seconds": round(erase_seconds, 2), "keys_erased": erased.erased, "keys_left_by_erase": erased.left,
            "keys_left_by_scan": left, "import_seconds": round(import_seconds, 2), "keys_imported": written,
            "records_after_import": model.query.filter(agent_id="big").count(),
            "round_trip_identical": first == second, "other_tenant_unchanged": small_state(client, model) == small_before,
        }


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Tenant erase, export and import", "",
        f"`python benchmarks/tenant_ops.py --memories N` on {payload['machine'].get('cpu', 'this machine')}, one "
        "embedded Redis. The machine was shared with other jobs (load average above 10), so the seconds are upper "
        "bounds. Keys with an expiry (operation keys, staged reads) are left out of both comparisons: they may "
        "expire between two reads.", "",
        "| memories | keys | export s | export MB | erase s | keys left (erase / scan) | import s | round trip identical "
        "| other tenant unchanged |",
        "|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in sorted(payload["results"].values(), key=lambda row: row["memories"]):
        lines.append(f"| {row['memories']} | {row['keys']} | {row['export_seconds']} | {row['export_mb']} "
                     f"| {row['erase_seconds']} | {row['keys_left_by_erase']} / {row['keys_left_by_scan']} "
                     f"| {row['import_seconds']} | {row['round_trip_identical']} | {row['other_tenant_unchanged']} |")
    return "\n".join([*lines, ""])


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--memories", type=int, default=100_000)
    args = options.parse_args()
    result = run(args.memories)
    earlier = (read_json(NAME) or {}).get("results", {})
    payload = {"machine": machine(), "results": {**earlier, str(args.memories): result}}
    write_json(NAME, payload)
    (RESULTS / f"{NAME}.md").write_text(markdown(payload))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
