"""Server time of each page of the memory inspector (``redmem ui``) over one agent of N memories.

Each page is the API call its view makes, sent to the app in process (Starlette's TestClient)
and timed by the app's own ``Server-Timing`` header (from the guard's first byte in to the
response head out: routing, Redis round trips, JSON). Pages: tenants; an agent's memories, first
page in each order and a deep page (offset N/2); a search; one memory; the query playground
(one ``assemble`` with its explanation). Then the decay page's three states above 2,000 memories
(``redmem.ui._decay_order``): no saved order (the approximate order, a build starts), a stale order
(served with its time, a rebuild starts) and pages while that rebuild runs, with the background
rebuild's own time. Records are ChatMemory turns of synthetic text, with 384-d hashing vectors, on a private embedded server.

    python benchmarks/ui_pages.py --n 100000 --repeats 20

Writes results/ui_pages.{json,md}. The target is p50 <= 300 ms for every page at 100k.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

import redmem
from common import RESULTS, machine, summary, synthetic_queries, synthetic_texts, write_json
from redmem.cli_commands._memory import ChatMemory
from redmem.embeddings import HashingEmbeddings
from redmem.fields._decay_snapshot import SNAPSHOT_TTL
from redmem.store._embedded import EmbeddedServer
from redmem.store._keys import KeyKind
from redmem.ui import build_app
from redmem.ui._decay_order import wait_for_builds
from redmem.ui._inventory import space_of

TOKEN = "bench"
AGENT = "agent-1"
TARGET_MS = 300.0
CHUNK = 1000


def ingest(n: int) -> float:
    """Store ``n`` memories for AGENT (and 100 for a second agent) with ``save_many``; returns seconds.

    Each memory's search text is its own line (``store_turns`` would add its session's neighbours,
    one session read per chunk: the page times do not depend on it)."""
    texts = synthetic_texts(n)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    began = time.perf_counter()

    def memory(agent: str, i: int) -> ChatMemory:
        said = (start + timedelta(minutes=i)).isoformat()
        return ChatMemory(agent_id=agent, session=f"s{i // 20}", speaker="user" if i % 2 else "assistant",
                          date=said[:10], said_at=said, position=i % 20, content=texts[i], context=texts[i],
                          passage=texts[i])

    for low in range(0, n, CHUNK):
        ChatMemory.save_many([memory(AGENT, i) for i in range(low, min(n, low + CHUNK))])
    ChatMemory.save_many([memory("agent-2", i) for i in range(100)])
    return time.perf_counter() - began


def pages(n: int, queries: list[str], memory_id: str) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    base = f"/api/agents/{AGENT}"
    return {
        "tenants": ("GET", "/api/tenants", None),
        "memories by decay": ("GET", f"{base}/memories?sort=decay", None),
        "memories by confidence": ("GET", f"{base}/memories?sort=confidence", None),
        "memories newest": ("GET", f"{base}/memories?sort=newest", None),
        "memories by id": ("GET", f"{base}/memories?sort=id", None),
        "memories newest, page at N/2": ("GET", f"{base}/memories?sort=newest&offset={n // 2}", None),
        "memories by decay, page at 1000": ("GET", f"{base}/memories?sort=decay&offset=1000", None),
        "search": ("GET", f"{base}/memories?q={queries[0]}", None),
        "one memory": ("GET", f"{base}/memories/{memory_id}", None),
        "ask (assemble + explain)": ("POST", f"{base}/assemble", {"question": queries[1], "confirm": True}),
    }


def server_ms(reply: Any) -> float:
    assert reply.status_code == 200, reply.text
    return float(reply.headers["server-timing"].split("dur=")[1])


def measure(n: int, repeats: int) -> dict[str, Any]:
    client = TestClient(build_app(TOKEN, {"testserver"}, AGENT))
    headers = {"X-Redmem-Token": TOKEN}
    first = client.get(f"/api/agents/{AGENT}/memories?sort=id&limit=1", headers=headers).json()["rows"][0]
    queries = synthetic_queries(synthetic_texts(min(n, 1000)), repeats + 2)
    results = {}
    for name, (method, path, body) in pages(n, queries, first["memory_id"]).items():
        client.request(method, path, headers=headers, json=body)  # warm: scripts, vector matrix, postings
        wait_for_builds(600)  # the decay pages' warm-up builds the exact order in the background
        times = [server_ms(client.request(method, path, headers=headers, json=body)) for _ in range(repeats)]
        results[name] = {**summary(times), "path": path}
    results.update(decay_states(client, headers, repeats))
    return results


def decay_states(client: TestClient, headers: dict[str, str], repeats: int) -> dict[str, dict[str, Any]]:
    """The first decay page with no saved order, with a stale one, and pages while the rebuild runs
    (the saved order's keys are deleted or its time moved back between loads, as five minutes or a
    day without a page would), and the background rebuild's seconds."""
    path = f"/api/agents/{AGENT}/memories?sort=decay"
    redis_client = ChatMemory._meta.client
    order = space_of(AGENT).key(KeyKind.DECAY_SNAPSHOT, "relevance")
    none, stale, during, rebuild = [], [], [], []
    for _ in range(repeats):
        redis_client.delete(order, f"{order}:at")
        reply = client.get(path, headers=headers)
        none.append(server_ms(reply))
        assert reply.json()["order"].startswith("decay (approximate"), reply.json()["order"]
        wait_for_builds(600)
        redis_client.set(f"{order}:at", repr(time.time() - SNAPSHOT_TTL - 1))
        began = time.perf_counter()
        stale.append(server_ms(client.get(path, headers=headers)))
        for _ in range(3):
            reply = client.get(path, headers=headers)
            if "being built" in reply.json()["order"]:
                during.append(server_ms(reply))
        wait_for_builds(600)
        rebuild.append((time.perf_counter() - began) * 1000)
    states = {"memories by decay, no saved order (approximate order, build starts)": {**summary(none), "path": path},
              "memories by decay, stale order (served, rebuild starts)": {**summary(stale), "path": path}}
    if during:  # a small partition's rebuild may end before the next page
        states[f"memories by decay, while the rebuild runs ({len(during)} loads)"] = {**summary(during), "path": path}
    states["background rebuild (not a page: from the stale page to the swap)"] = {**summary(rebuild), "path": path,
                                                                                 "not_a_page": True}
    return states


def markdown(payload: dict[str, Any]) -> str:
    lines = [f"# Memory inspector page times at {payload['n']:,} memories", "",
             f"Server time per page (the app's Server-Timing), {payload['repeats']} loads each after one warm-up; "
             f"target p50 <= {TARGET_MS:.0f} ms. Ingest: {payload['ingest_s']:.0f} s. "
             f"`python benchmarks/ui_pages.py --n {payload['n']} --repeats {payload['repeats']}`", "",
             "| page | p50 ms | p95 ms | within target |", "|---|---:|---:|---|"]
    for name, row in payload["pages"].items():
        within = "n/a" if row.get("not_a_page") else "yes" if row["p50"] <= TARGET_MS else "no"
        lines.append(f"| {name} | {row['p50']:.1f} | {row['p95']:.1f} | {within} |")
    lines += ["", f"Load average (1, 5, 15 min) at the end: {' '.join(payload.get('loadavg', ['?']))}."]
    lines += ["", f"Machine: {payload['machine'].get('cpu', '')}, {payload['machine'].get('cores', '')} cores."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--name", default="ui_pages", help="results/<name>.{json,md}")
    args = parser.parse_args()
    with EmbeddedServer() as server:
        redmem.configure(client=server.client(), key_prefix="uibench", embedding_provider=HashingEmbeddings(384))
        took = ingest(args.n)
        payload = {"n": args.n, "repeats": args.repeats, "ingest_s": took, "target_ms": TARGET_MS,
                   "pages": measure(args.n, args.repeats), "machine": machine(),
                   "loadavg": Path("/proc/loadavg").read_text().split(" ")[:3]}
    write_json(args.name, payload)
    (RESULTS / f"{args.name}.md").write_text(markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
