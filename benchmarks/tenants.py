"""Multi-tenant scale: A agents x M memories each; assemble() p50/p95 for redmem and popoto 1.10.1.

    .venv/bin/python benchmarks/tenants.py                 # 1,000 agents x 100 memories, 200 queries
    .venv/bin/python benchmarks/tenants.py --quick         # 50 agents x 20 memories, 50 queries

One private server; each library stores the same synthetic memories (``common.synthetic_texts``,
agent ``a<i>`` owns texts i*M .. i*M+M-1) in bulk (redmem ``save_many``, popoto ``bulk_create``)
in a lexical model and a hybrid one (hashed vectors). Each query goes to a random agent and is
made of 3 words of one of that agent's memories; assemble() with that agent_id, max_items 10.
popoto is asked the first ``--popoto-queries`` (60) of them: at 100k memories its assemble takes
seconds. Reported per library and mode: p50/p95/p99 (median over ``--repeats``), round trips and
commands sent per call, bytes of Redis memory per memory. popoto's hybrid model is left out
above ``--popoto-hybrid-up-to`` memories in all (see latency.py: its ingest slows with N).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import machine, synthetic_texts, write_json
from latency import ingest_figures, latency_figures, used_memory
from peers.popoto_bridge import PopotoProcess
from redmem.store._embedded import EmbeddedServer
from redmem_driver import assemble_many, hash_provider, ingest_measured, memory_model

log = logging.getLogger("benchmarks.tenants")

SEED = 7


def workload(agents: int, per_agent: int, queries: int) -> tuple[list[list[str]], list[tuple[int, str]]]:
    """Texts per agent, and (agent index, query) pairs."""
    texts = synthetic_texts(agents * per_agent)
    owned = [texts[i * per_agent : (i + 1) * per_agent] for i in range(agents)]
    rng = random.Random(SEED)
    asked = []
    for _ in range(queries):
        agent = rng.randrange(agents)
        words = sorted(set(rng.choice(owned[agent]).split()))
        asked.append((agent, " ".join(rng.sample(words, min(3, len(words))))))
    return owned, asked


def run_redmem(owned: list[list[str]], asked: list[tuple[int, str]], repeats: int, clients: list[Any]) -> dict:
    provider = hash_provider()
    out: dict[str, Any] = {"ingest": {}, "assemble": {}}
    n = sum(map(len, owned))
    for kind, model in (("lexical", memory_model("TenLex")), ("hybrid", memory_model("TenHyb", provider))):
        before, parts = used_memory(clients), []
        for agent, texts in enumerate(owned):
            parts.append(ingest_measured(model, f"a{agent}", texts, 0, provider if kind == "hybrid" else None))
        total = {k: sum(p[k] for p in parts) for k in parts[0] if k != "ids"}
        out["ingest"][kind] = ingest_figures(total, used_memory(clients) - before, n)
        runs = []
        for _ in range(repeats):
            rows = []
            for agent, text in asked:
                rows += assemble_many(model, kind, f"a{agent}", [text], provider=provider)
            runs.append(rows)
        out["assemble"][kind] = latency_figures(runs)
        log.info("redmem %s: %s", kind, {k: round(v, 2) for k, v in out["assemble"][kind].items()})
    return out


def run_popoto(url: str, owned: list[list[str]], asked: list[tuple[int, str]], repeats: int,
               clients: list[Any], hybrid_up_to: int, queries: int) -> dict:
    out: dict[str, Any] = {"ingest": {}, "assemble": {}}
    n = sum(map(len, owned))
    with PopotoProcess(url + ("&" if "?" in url else "?") + "db=1") as popoto:
        for kind in ("lexical", "hybrid") if n <= hybrid_up_to else ("lexical",):
            name = f"PopotoTen{kind.title()}"
            popoto.call("setup", name=name, embedding="hash" if kind == "hybrid" else None)
            before, parts = used_memory(clients), []
            for agent, texts in enumerate(owned):
                parts.append(popoto.call("ingest", name=name, agent_id=f"a{agent}", texts=texts, single=0))
            total = {k: sum(p[k] for p in parts) for k in parts[0] if k != "ids"}
            out["ingest"][kind] = ingest_figures(total, used_memory(clients) - before, n)
            runs = []
            for _ in range(repeats):
                rows = []
                for agent, text in asked[:queries]:
                    rows += popoto.call("assemble", name=name, agent_id=f"a{agent}", queries=[text],
                                        mode=kind)["results"]
                runs.append(rows)
            out["assemble"][kind] = latency_figures(runs)
            log.info("popoto %s: %s", kind, {k: round(v, 2) for k, v in out["assemble"][kind].items()})
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--per-agent", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--systems", default="redmem,popoto")
    parser.add_argument("--popoto-hybrid-up-to", type=int, default=10_000,
                        help="measure popoto's hybrid model only up to this many memories in all")
    parser.add_argument("--popoto-queries", type=int, default=60,
                        help="ask popoto only the first N queries (its assemble takes seconds at this scale); 0: all")
    parser.add_argument("--quick", action="store_true", help="50 agents x 20 memories, 50 queries, 1 repeat")
    parser.add_argument("--out", default="tenants", help="results/<out>.json ('' writes nothing)")
    args = parser.parse_args(argv)
    if args.quick:
        args.agents, args.per_agent, args.queries, args.repeats = 50, 20, 50, 1
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    owned, asked = workload(args.agents, args.per_agent, args.queries)
    started, results = time.perf_counter(), {}
    with EmbeddedServer() as server:
        redmem.connect(server.url)
        clients = [server.client()]
        if "redmem" in args.systems:
            results["redmem"] = run_redmem(owned, asked, args.repeats, clients)
        if "popoto" in args.systems:
            results["popoto"] = run_popoto(server.url, owned, asked, args.repeats, clients, args.popoto_hybrid_up_to,
                                           args.popoto_queries or args.queries)
        version = server.version.get("redis_version")
    payload = {"benchmark": "tenants", "agents": args.agents, "per_agent": args.per_agent, "queries": args.queries,
               "popoto_queries": args.popoto_queries or args.queries,
               "repeats": args.repeats, "machine": machine(), "redis_version": version,
               "seconds": time.perf_counter() - started, "results": results}
    if args.out:
        write_json(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
