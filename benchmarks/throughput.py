"""assemble() throughput: 1, 2, 4, 8 client processes against one server, and what the server spends.

    .venv/bin/python benchmarks/throughput.py                          # questions, N = 10k, 100k
    .venv/bin/python benchmarks/throughput.py --workload words --sizes 100000
    .venv/bin/python benchmarks/throughput.py --quick                  # N = 2k, 1 and 2 clients, 5 s

Per N, one fresh private server (``EmbeddedServer``, unix socket) holds N memories of one agent
in the seed's Memory model (lexical), ingested once with ``save_many``. Then, for each client
count C, C processes (``multiprocessing``, spawned: each its own interpreter, connection and
``CommandCounter``) each warm up -- one pass over every query, so each process's copy of the
postings holds the queries' terms as a long-running agent server's would (``--cold``: 5
queries only, the window then mostly measures the copies filling) -- wait on a barrier, then each runs ``ContextAssembler.assemble()`` (max_items
10, lexical; ``score_weights={"relevance": 1.0}`` on the questions workload) in a loop over the
queries, each process starting at a different offset, for ``--seconds`` seconds. Measured per C:

- queries/s: all queries finished in the window / the window (first start to last finish);
- latency p50/p95/p99 in ms over every query of every process;
- the server's CPU: ``used_cpu_user + used_cpu_sys`` (``INFO cpu``, the server process's own
  rusage) over the window, per query (ms) and as a share of one core (``busy``: 1.0 means the
  single-threaded server was never idle, i.e. the bottleneck);
- the server's own time from ``INFO commandstats`` (reset before each C): calls per query and
  ``usec_per_call`` of every command, and the usec per query spent in scripts (EVALSHA / FCALL,
  whose figure includes the commands they call, which commandstats also counts under their own
  names, so the commands are not summed) -- less noisy than wall time on a shared host;
- the clients' CPU per query (``time.process_time`` of each process, summed), so a reader can
  see where the cores went: on the 2-core reference host C processes share 2 cores with the
  server (and with whatever else runs there: the load average is recorded before and after).

Workloads: ``questions`` (default) -- ``questions.dialog_corpus`` memories and the LoCoMo
questions of 6-15 words (``--data``, read, never copied); ``words`` -- ``common.synthetic_texts``
and 3-word queries, as ``latency.py``. Written to ``results/throughput_<workload>.json`` and
``.md`` after every N.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import redmem
from common import RESULTS, machine, summary, synthetic_queries, synthetic_texts, write_json
from questions import dialog_corpus, locomo_questions
from redmem.store._embedded import EmbeddedServer
from redmem_driver import ingest_measured, memory_model

log = logging.getLogger("benchmarks.throughput")

AGENT = "agent-1"
WARMUP = 5
#: The benchmark client's socket timeout: a save_many chunk of 1,000 on a loaded host can take
#: longer than redmem's default 1.2 s on the server (see docs/benchmarks.md, "Scale").
SOCKET_TIMEOUT = 120.0
TARGET = "8 clients: report queries/s and p99; the server is not the bottleneck below 4 clients (busy < 1 core)"


# ----------------------------------------------------------------------------- a client process
def client_process(url: str, model_name: str, queries: list[str], offset: int, relevance_only: bool,
                   seconds: float, warm_pass: bool, barrier: Any, out: Any) -> None:
    """One client: warm up (every query once with ``warm_pass``, else the first few), wait for the
    others, then assemble() in a loop for ``seconds``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from redmem.recipes.context_assembler import ContextAssembler

    redmem.connect(url, socket_timeout=SOCKET_TIMEOUT)
    model = memory_model(model_name)
    weights = {"relevance": 1.0} if relevance_only else None
    assembler = ContextAssembler(model, score_weights=weights, max_items=10, retrieval_mode="lexical")
    for text in queries if warm_pass else queries[:WARMUP]:
        assembler.assemble(query_cues={"query": text}, agent_id=AGENT)
    barrier.wait()
    started, cpu_before, ms = time.monotonic(), time.process_time(), []
    i = offset
    while time.monotonic() - started < seconds:
        text = queries[i % len(queries)]
        began = time.perf_counter()
        assembler.assemble(query_cues={"query": text}, agent_id=AGENT)
        ms.append((time.perf_counter() - began) * 1000)
        i += 1
    out.put({"started": started, "finished": time.monotonic(), "ms": ms,
             "cpu_seconds": time.process_time() - cpu_before})


# ----------------------------------------------------------------------------- the server side
def server_cpu(client: Any) -> float:
    """Seconds of CPU the server process has used (user + system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


#: Commands that run scripts: commandstats counts their time *and* that of every command they call,
#: so the server's own time per query is their usec plus that of the commands sent outside them.
SCRIPT_COMMANDS = ("evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro")


def server_commands(client: Any, queries: int) -> dict[str, dict[str, float]]:
    """``{command: {calls_per_query, usec_per_call}}`` since the last CONFIG RESETSTAT."""
    stats = client.info("commandstats")
    return {name.removeprefix("cmdstat_"): {"calls_per_query": float(s["calls"]) / queries,
                                            "usec_per_call": float(s["usec_per_call"])}
            for name, s in sorted(stats.items()) if float(s["calls"]) > 0}


def script_usec_per_query(commands: dict[str, dict[str, float]]) -> float:
    """usec per query spent in scripts (each script's inner commands included)."""
    return sum(c["calls_per_query"] * c["usec_per_call"] for name, c in commands.items() if name in SCRIPT_COMMANDS)


def run_clients(url: str, client: Any, model_name: str, queries: list[str], clients: int, seconds: float,
                relevance_only: bool, warm_pass: bool = True) -> dict[str, Any]:
    """``clients`` processes assembling concurrently for ``seconds``: throughput, latency, server CPU."""
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(clients + 1), context.Queue()
    step = max(1, len(queries) // clients)
    processes = [context.Process(target=client_process,
                                 args=(url, model_name, queries, i * step, relevance_only, seconds, warm_pass,
                                       barrier, out))
                 for i in range(clients)]
    for process in processes:
        process.start()
    load_before = list(os.getloadavg())
    barrier.wait(timeout=1800)
    client.config_resetstat()
    cpu_before = server_cpu(client)
    rows = [out.get(timeout=seconds + 300) for _ in processes]
    cpu = server_cpu(client) - cpu_before
    commands = server_commands(client, sum(len(r["ms"]) for r in rows))
    for process in processes:
        process.join()
    window = max(r["finished"] for r in rows) - min(r["started"] for r in rows)
    ms = [value for r in rows for value in r["ms"]]
    count = len(ms)
    return {
        "clients": clients, "queries": count, "seconds": window, "queries_per_s": count / window,
        "latency_ms": summary(ms),
        "per_client_queries_per_s": statistics.median(len(r["ms"]) / (r["finished"] - r["started"]) for r in rows),
        "server_cpu_ms_per_query": cpu * 1000 / count, "server_busy": cpu / window,
        "server_script_usec_per_query": script_usec_per_query(commands), "server_commands": commands,
        "client_cpu_ms_per_query": sum(r["cpu_seconds"] for r in rows) * 1000 / count,
        "load_average": {"before": load_before, "after": list(os.getloadavg())},
    }


def corpus(workload: str, n: int, data: Path) -> tuple[list[str], list[str]]:
    """(memory texts, queries) of the workload at N."""
    if workload == "questions":
        return dialog_corpus(data, n), locomo_questions(data)
    texts = synthetic_texts(n)
    return texts, synthetic_queries(texts, 200)


# ----------------------------------------------------------------------------- reporting
def markdown(payload: dict[str, Any]) -> str:
    """A short table per N: clients, queries/s, p50/p95/p99, server CPU per query and busy share."""
    lines = [f"# assemble() throughput, {payload['workload']} workload", "",
             f"`{payload['command']}` -- {payload['machine']['date']}, git {payload['machine']['git']}, "
             f"{payload['machine']['cores']} cores shared with other jobs (load average in each row); each client "
             + ("warmed by one pass over every query." if payload.get("warm_pass") else "warmed by 5 queries (--cold)."),
             ""]
    for n, rows in payload["results"].items():
        lines += [f"## N = {int(n):,} memories (ingest {rows['ingest_seconds']:.0f} s)", "",
                  "| clients | queries/s | p50 ms | p95 ms | p99 ms | server CPU ms/query | script usec/query "
                  "(commandstats) | server busy (cores) | client CPU ms/query | load avg (1 min) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for row in rows["clients"]:
            latency = row["latency_ms"]
            lines.append(
                f"| {row['clients']} | {row['queries_per_s']:.0f} | {latency['p50']:.2f} | {latency['p95']:.2f} | "
                f"{latency['p99']:.2f} | {row['server_cpu_ms_per_query']:.3f} | {row['server_script_usec_per_query']:.0f} | "
                f"{row['server_busy']:.2f} | {row['client_cpu_ms_per_query']:.2f} | "
                f"{row['load_average']['before'][0]:.1f} -> {row['load_average']['after'][0]:.1f} |")
        lines.append("")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=("questions", "words"), default="questions")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--clients", default="1,2,4,8")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window per client count")
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/locomo-dev.json"),
                        help="the LoCoMo file of the questions workload (read, never copied)")
    parser.add_argument("--chunk-size", type=int, default=1000)
    parser.add_argument("--cold", action="store_true",
                        help="warm each client with 5 queries only (default: one pass over every query, so the "
                             "window measures processes whose postings copies hold the queries' terms)")
    parser.add_argument("--quick", action="store_true", help="N = 2k; 1 and 2 clients; 5 s each")
    parser.add_argument("--out", default=None, help="results/<out>.json and .md (default throughput_<workload>)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.clients, args.seconds = "2000", "1,2", 5.0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    out = args.out or f"throughput_{args.workload}"
    results: dict[str, Any] = {}
    payload: dict[str, Any] = {
        "benchmark": "throughput", "workload": args.workload, "sizes": args.sizes, "clients": args.clients,
        "seconds_per_count": args.seconds, "warm_pass": not args.cold, "target": TARGET, "socket_timeout": SOCKET_TIMEOUT,
        "command": "python benchmarks/throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "results": results}
    started = time.perf_counter()
    for n in (int(size) for size in args.sizes.split(",")):
        texts, queries = corpus(args.workload, n, Path(args.data))
        with EmbeddedServer() as server:
            redmem.connect(server.url, socket_timeout=SOCKET_TIMEOUT)
            name = f"Thr{n}"
            log.info("N=%d: ingesting %d memories", n, n)
            ingest = ingest_measured(memory_model(name), AGENT, texts, 0, chunk_size=args.chunk_size)
            client = server.client()
            results[str(n)] = {"ingest_seconds": ingest["bulk_seconds"], "clients": []}
            for count in (int(c) for c in args.clients.split(",")):
                row = run_clients(server.url, client, name, queries, count, args.seconds,
                                  args.workload == "questions", warm_pass=not args.cold)
                results[str(n)]["clients"].append(row)
                log.info("N=%d clients=%d: %.0f q/s p50 %.2f p99 %.2f ms, server %.3f ms/query busy %.2f, load %.1f",
                         n, count, row["queries_per_s"], row["latency_ms"]["p50"], row["latency_ms"]["p99"],
                         row["server_cpu_ms_per_query"], row["server_busy"], row["load_average"]["after"][0])
            payload["redis_version"] = client.info("server").get("redis_version")
        payload.update(machine=machine(), seconds=time.perf_counter() - started)
        write_json(out, payload)
        (RESULTS / f"{out}.md").write_text(markdown(payload) + "\n")
    return payload


if __name__ == "__main__":
    main()
