"""The benchmark suite at its smallest sizes (each script in its own process), and the
ConversationMemory recipe it evaluates. Timings are never asserted: only that every stage runs
and reports figures that make sense.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import redmem
from redmem.recipes.context_assembler import ContextAssembler
from redmem.recipes.conversation import (
    ConversationMemory,
    Turn,
    TurnContextAnalyzer,
    build_contexts,
    build_passages,
    conversation_assembler,
    ingest_conversation,
)
from redmem.store._embedded import EmbeddedServer
from redmem.store._errors import ValidationError

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "benchmarks"
#: The LoCoMo dev data: $REDMEM_LOCOMO, else ../shared/data beside the repository (CI's second
#: pass points it at nothing to run as a fresh clone would).
LOCOMO = Path(os.environ.get("REDMEM_LOCOMO") or REPO.parent / "shared" / "data" / "locomo-dev.json")
#: Skips a test that needs the LoCoMo data when it is absent, saying so.
NEEDS_LOCOMO = pytest.mark.skipif(not LOCOMO.exists(), reason=f"LoCoMo dev data not found at {LOCOMO}")


def run(script: str, *args: str, out_dir: Path, timeout: float = 120) -> dict:
    """Run a benchmark script, writing its JSON to ``out_dir``; return the payload."""
    name = f"smoke_{Path(script).stem}"
    code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import common, pathlib; "
            f"common.RESULTS = pathlib.Path({str(out_dir)!r}); "
            f"import runpy; sys.argv = [{script!r}, *{list(args)!r}, '--out', {name!r}]; "
            f"runpy.run_path({str(BENCH / script)!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out_dir / f"{name}.json").read_text())


@pytest.mark.bench  # a script in its own process: opt-in (--run-benchmarks, make test-bench)
def test_latency_smallest_size_and_its_summary(tmp_path):
    payload = run("latency.py", "--sizes", "300", "--queries", "20", "--repeats", "1", "--single", "50",
                  "--systems", "redmem", out_dir=tmp_path)
    figures = payload["results"]["300"]["redmem"]
    assert set(figures["assemble"]) == {"lexical", "hybrid", "composite"}
    for row in figures["assemble"].values():
        assert row["p50"] > 0 and row["queries"] == 20
        assert 1 <= row["round_trips"] <= row["commands"]
    for ingest in figures["ingest"].values():
        assert ingest["single_per_s"] > 0 and ingest["bulk_per_s"] > 0 and ingest["bytes_per_memory"] > 0
    (tmp_path / "smoke_latency.json").rename(tmp_path / "latency.json")
    sys.path.insert(0, str(BENCH))
    try:
        import plots

        markdown = plots.summary_markdown(tmp_path)
        assert "| 300 | redmem | lexical |" in markdown and "<= 4 round trips, 300 lexical" in markdown
        if importlib.util.find_spec("matplotlib"):
            plots.main(["--results", str(tmp_path)])
            assert (tmp_path / "latency_vs_n.png").stat().st_size > 0
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.bench
@pytest.mark.cluster
def test_latency_on_the_cluster(tmp_path):
    payload = run("latency.py", "--cluster", "--sizes", "200", "--queries", "10", "--repeats", "1",
                  "--single", "20", out_dir=tmp_path)
    assert payload["cluster"] is True
    assert set(payload["results"]["200"]) == {"redmem"}


@pytest.mark.bench
def test_tenants_smallest_size(tmp_path):
    payload = run("tenants.py", "--agents", "8", "--per-agent", "15", "--queries", "20", "--repeats", "1",
                  "--systems", "redmem", out_dir=tmp_path)
    rows = payload["results"]["redmem"]["assemble"]
    assert rows["lexical"]["queries"] == 20 and rows["hybrid"]["p95"] >= rows["hybrid"]["p50"] > 0


@pytest.mark.bench
@NEEDS_LOCOMO
def test_locomo_one_conversation(tmp_path):
    payload = run("locomo.py", "--data", str(LOCOMO), "--conversations", "1", "--max-questions", "25",
                  "--systems", "redmem,conversation", "--no-hybrid", out_dir=tmp_path)
    results = payload["results"]
    assert set(results) == {"redmem lexical", "redmem composite", "redmem ConversationMemory lexical"}
    for row in results.values():
        assert row["questions"] == 25
        assert 0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 1
        assert row["tokens_per_context"]["mean"] > 0
    assert results["redmem ConversationMemory lexical"]["recall@10"] > 0


@pytest.mark.bench
@NEEDS_LOCOMO
def test_latency_on_questions(tmp_path):
    payload = run("latency.py", "--workload", "questions", "--data", str(LOCOMO), "--sizes", "300,600",
                  "--queries", "20", "--repeats", "2", "--word-queries", "10", out_dir=tmp_path)
    for row in payload["results"].values():
        for mode in ("lexical", "hybrid"):
            figures = row["assemble"][mode]
            assert figures["round_trips_max"] <= 3 and figures["p50"] > 0 and figures["first_pass"]["p50"] > 0
            assert figures["client_cpu_ms_per_query"] > 0 and figures["server_usec_per_query"] > 0
        assert row["exactness"]["identical"] == row["exactness_words"]["identical"] == 1.0
        assert row["exactness"]["modes"] == {"cached": 20} and row["postings_copy"]["postings"] > 0
    assert set(payload["growth"]) == {"keyword_search", "lexical", "hybrid"}


@pytest.mark.bench
@NEEDS_LOCOMO
def test_latency_on_questions_per_vector_prescan(tmp_path):
    payload = run("latency.py", "--workload", "questions", "--data", str(LOCOMO), "--sizes", "300",
                  "--queries", "10", "--repeats", "2", "--word-queries", "5", "--vector-prescans", "exact,binary,hnsw",
                  out_dir=tmp_path)
    row = payload["results"]["300"]
    assert set(row["assemble"]) == {"lexical", "hybrid", "hybrid-binary", "hybrid-hnsw"}
    assert row["assemble"]["hybrid-binary"]["round_trips_max"] <= 3
    assert row["assemble"]["hybrid-hnsw"]["round_trips_max"] <= 3 and row["assemble"]["hybrid-hnsw"]["hnsw_build_seconds"] > 0
    # 300 rows are below the pre-scan's minimum: every search scans them all, so nothing is missed
    for prescan in ("binary", "hnsw"):
        assert row["vector_recall"][prescan]["recall_at_10"] == row["vector_recall"][prescan]["identical"] == 1.0


@pytest.mark.bench
@NEEDS_LOCOMO
def test_vector_prescan_on_hashed_vectors(tmp_path):
    payload = run("vector_prescan.py", "--data", str(LOCOMO), "--hashed", "9000", "--minilm", "0",
                  "--repeats", "1", out_dir=tmp_path)
    hashed = payload["results"]["hashed"]
    assert hashed["rows"] == 9000 and hashed["queries"] > 700 and set(payload["results"]) == {"hashed"}
    assert hashed["exact_cpu_ms"] > 0 and hashed["binary_cpu_ms"] > 0
    assert 0 < hashed["recall_at_10"] < 1 and payload["candidates_per_hit"] == 20
    assert hashed["hnsw_cpu_ms"] > 0 and 0.5 < hashed["hnsw_recall_at_10"] <= 1 and hashed["hnsw_build_seconds"] > 0


@pytest.mark.bench
@NEEDS_LOCOMO
def test_vector_dtypes_one_conversation(tmp_path):
    results = run("vector_dtypes.py", "--data", str(LOCOMO), "--conversations", "1", "--records", "2000",
                  out_dir=tmp_path)["results"]
    assert [results[d]["bytes_384d"] for d in ("float32", "float16", "int8")] == [1545, 777, 397]
    assert results["float32"]["redis_bytes_per_record"] > results["float16"]["redis_bytes_per_record"] \
        > results["int8"]["redis_bytes_per_record"] > 0
    assert results["float32"]["top10_overlap"] == 1 and results["float32"]["max_cosine_difference"] == 0
    assert 0 < results["float16"]["max_cosine_difference"] < results["int8"]["max_cosine_difference"] < 0.01
    assert results["int8"]["top10_overlap"] > 0.9


@pytest.mark.bench
def test_hce_smallest_size(tmp_path):
    payload = run("hce.py", "--sizes", "300", "--queries", "20", out_dir=tmp_path)
    row = payload["latency"]["300"]
    assert row["interactions"] == 300 and row["queries"] == 20 and 0 < row["topics"] < 300
    assert row["retrieve_ms"]["p50"] > 0 and 2 <= row["round_trips"]["p50"] <= row["round_trips"]["max"] <= 3
    assert row["queries_with_graph_candidates"] > 0 and row["selected_p50"] > 0
    assert set(payload["load_average"]) == {"before", "after"}


@pytest.mark.bench
def test_hce_profile_on_a_session_hce_stored(tmp_path):
    with EmbeddedServer(unix_socket=False) as server:
        run("hce.py", "--sizes", "300", "--queries", "5", "--server", server.url, out_dir=tmp_path)
        replies = tmp_path / "replies.json"
        payload = run("hce_profile.py", "--server", server.url, "--size", "300", "--queries", "6", "--warmup", "1",
                      "--replies", str(replies), out_dir=tmp_path)
    assert payload["queries"] == 6 and 2 <= payload["round_trips"] <= payload["round_trips_max"] <= 3
    assert payload["server_ms_per_call_by_command"]["bm25_search"] > 0  # the profiled client's scripts, by name
    assert payload["client_ms_per_call_by_stage"] and payload["top_functions"]
    answers = json.loads(replies.read_text())
    assert len(answers) == 6 and all(a["selected"] and a["block"] for a in answers)


@pytest.mark.bench
def test_popoto_runner_round_trip(tmp_path):
    """Drives popoto 1.10.1 in its own venv (created on first use: about a minute, from the index)."""
    payload = run("tenants.py", "--agents", "3", "--per-agent", "10", "--queries", "5", "--repeats", "1",
                  "--systems", "popoto", out_dir=tmp_path, timeout=600)
    rows = payload["results"]["popoto"]["assemble"]
    assert rows["lexical"]["queries"] == 5 and rows["lexical"]["round_trips"] >= 1


@pytest.mark.bench
def test_frames_smallest_size(tmp_path):
    """frames.py's latency part (and, with the LoCoMo file beside the repository, its quality and sequence parts)."""
    parts = "latency,quality,sequence" if LOCOMO.exists() else "latency"
    payload = run("frames.py", "--sizes", "300", "--queries", "20", "--repeats", "1", "--self-calls", "5",
                  "--vectors", "hash", "--parts", parts, "--data", str(LOCOMO), "--conversations", "1",
                  "--max-questions", "15", out_dir=tmp_path)
    figures = payload["results"]["latency"]["300"]["redmem"]
    attention, selves = figures["attention"], figures["self"]
    assert attention["queries"] == 20 and attention["p95"] >= attention["p50"] > 0
    assert 0 < attention["p50_without_embedding"] <= attention["p50"] and attention["embed_ms_p50"] > 0
    assert 1 <= attention["round_trips"] <= attention["commands"]
    assert selves["calls"] == 5 and selves["cached_share"] == 1 and selves["cached_round_trips"] >= 1
    assert figures["ingest"]["blocks_per_s"] > 0 and figures["ingest"]["bytes_per_block"] > 0
    assert len(payload["results"]["latency"]["300"]["load_before"]) == 3
    markdown = (tmp_path / "smoke_frames.md").read_text()
    assert "| 300 | redmem |" in markdown and "SELF frame from its cache" in markdown
    if LOCOMO.exists():
        results = payload["results"]["quality"]["results"]
        assert len(results) == 8 and {row["variant"] for row in results.values()} == {"turn text", "dated turn"}
        for row in results.values():
            assert row["questions"] == 15 and 0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 1
        in_sequence = payload["results"]["sequence"]["results"]
        assert len(in_sequence) == 8 and {row["scoring"] for row in in_sequence.values()} == {
            "damped (default)", "seed raw weights"}
        assert "## LoCoMo in sequence" in markdown


@pytest.mark.bench
def test_quality_quick_every_path(tmp_path):
    """quality.py --quick on hashed vectors: every path answers the scenario cases (and, with the LoCoMo
    file beside the repository, a few questions over the first 60 turns of one conversation)."""
    parts = "scenarios,locomo" if LOCOMO.exists() else "scenarios"
    payload = run("quality.py", "--quick", "--hashing", "--parts", parts, "--data", str(LOCOMO),
                  "--max-turns", "60", "--max-questions", "5", out_dir=tmp_path)
    scenarios = payload["scenarios"]["results"]
    assert len(scenarios) == 10 and payload["scenarios"]["cases"] == 10
    for row in scenarios.values():
        for half in ("dev", "held_out"):
            figures = row[half]
            assert figures["cases"] == 5 and 0 <= figures["recall@1"] <= figures["recall@3"] <= figures["recall@5"] <= 1
            assert figures["items_per_context"] > 0 and figures["round_trips_p50"] >= 1
    assert "### held_out" in (tmp_path / "smoke_quality.md").read_text()
    if LOCOMO.exists():
        for row in payload["locomo"]["results"].values():
            assert row["questions"] == 5 and 0 <= row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= 1
            assert 0 <= row["evidence_in_1000_tokens"] <= 1 and row["ms"]["p50"] > 0


@NEEDS_LOCOMO
def test_quality_skip_conversations_asks_the_held_out_half():
    """quality.py --skip-conversations 3 asks the conversations after the first three (the half not
    tuned on), and --conversations then counts from there."""
    sys.path.insert(0, str(BENCH))
    try:
        import locomo
        import quality
    finally:
        sys.path.remove(str(BENCH))
    every = [talk["agent_id"] for talk in locomo.load(LOCOMO)]
    held_out = quality.locomo_tenants(quality.parse(["--data", str(LOCOMO), "--skip-conversations", "3"]))
    assert [t["tenant"] for t in held_out] == every[3:]
    one = quality.locomo_tenants(quality.parse(["--data", str(LOCOMO), "--skip-conversations", "3",
                                                "--conversations", "1"]))
    assert [t["tenant"] for t in one] == every[3:4]


@pytest.mark.bench
def test_elfmem_runner_round_trip(tmp_path):
    """Drives elfmem 0.20.0 in its own venv (created on first use: about a minute, from the index)."""
    payload = run("frames.py", "--parts", "elfmem", "--sizes", "200", "--queries", "10", "--elfmem-queries", "5",
                  "--self-calls", "3", "--vectors", "hash", out_dir=tmp_path, timeout=600)
    figures = payload["results"]["latency"]["200"]["elfmem"]
    assert figures["attention"]["queries"] == 5 and figures["attention"]["p50"] > 0
    assert figures["attention"]["blocks_returned_p50"] >= 1
    assert figures["self"]["calls"] == 3 and figures["self"]["cached_share"] == 1
    assert figures["ingest"]["blocks_per_s"] > 0


# ----------------------------------------------------------------------------- the recipe
def test_contexts_hold_same_session_neighbours_marked_by_distance():
    turns = [Turn("Ann", "one", "s1", "Monday"), Turn("Bob", "> two\nlines", "s1"), Turn("Ann", "three", "s1"),
             Turn("Bob", "four", "s2")]
    contexts = build_contexts(turns, window=2)
    assert contexts[0] == "[Monday] Ann: one\n> two lines\n>> three"
    assert contexts[1] == "> one\nBob: two lines\n> three"
    assert contexts[3] == "Bob: four"
    assert build_contexts(turns, window=0)[2] == "Ann: three"
    with pytest.raises(ValidationError):
        build_contexts(turns, window=-1)


def test_passages_hold_the_next_door_turns_of_the_session_unmarked():
    turns = [Turn("Ann", "one", "s1", "Monday"), Turn("Bob", "> two\nlines", "s1"), Turn("Ann", "three", "s1"),
             Turn("Bob", "four", "s2")]
    assert build_passages(turns) == ["[Monday] Ann: one\ntwo lines", "one\nBob: two lines\nthree",
                                     "two lines\nAnn: three", "Bob: four"]


class RecordingEmbeddings(redmem.HashingEmbeddings):
    """Hashing vectors, remembering the document texts it embedded."""

    def __init__(self) -> None:
        super().__init__(dimensions=64)
        self.documents: list[str] = []

    def embed(self, texts, input_type="document"):
        if input_type == "document":
            self.documents += list(texts)
        return super().embed(texts, input_type)


def test_ingest_embeds_each_turns_passage_and_stores_it_unshown(db):
    provider = RecordingEmbeddings()
    redmem.configure(embedding_provider=provider)
    try:
        turns = [Turn("Mel", "Where did you go camping?", "1", "May"), Turn("Caroline", "The Rockies!", "1", "May")]
        records = ingest_conversation(turns, "agent-1")
        assert sorted(provider.documents) == sorted(build_passages(turns))
        stored = ConversationMemory.query.get(agent_id="agent-1", memory_id=records[1].memory_id)
        assert stored.passage == "Where did you go camping?\n[May] Caroline: The Rockies!"
        assert "passage" not in ContextAssembler(ConversationMemory).render(stored)
    finally:
        redmem.configure(embedding_provider=None)


def test_conversation_assembler_fuses_by_score_with_equal_fixed_weights():
    assembler = conversation_assembler(max_items=5)
    assert (assembler.model_class, assembler.mode, assembler.max_items) == (ConversationMemory, "hybrid", 5)
    assert (assembler.fusion, assembler.fusion_weights) == ("convex", {"keyword": 1.0, "vector": 1.0})
    lexical = conversation_assembler(retrieval_mode="lexical", fusion="rrf", fusion_weights=None)
    assert (lexical.mode, lexical.fusion, lexical.fusion_weights) == ("lexical", "rrf", None)


def test_analyzer_weights_lines_by_distance():
    analyzer = TurnContextAnalyzer(turn_weight=4)
    terms = analyzer.tokens(">> far\n> near\nAnn: garden")
    assert terms.count("garden") == 4 and terms.count("ann") == 4
    assert terms.count("near") == 2 and terms.count("far") == 1
    assert TurnContextAnalyzer(turn_weight=1).tokens(">>> far") == ["far"]
    with pytest.raises(ValidationError):
        TurnContextAnalyzer(turn_weight=0)


def test_ingest_and_assemble_find_a_turn_by_its_neighbour(db):
    redmem.configure(embedding_provider=redmem.HashingEmbeddings(dimensions=64))
    try:
        turns = [{"speaker": "Mel", "text": "Where did you go camping last summer?", "session": "1"},
                 {"speaker": "Caroline", "text": "The Rockies, with the whole family!", "session": "1"},
                 {"speaker": "Mel", "text": "I painted a lake at sunrise", "session": "2"}]
        records = ingest_conversation(turns, "agent-1", window=1)
        assert [r.position for r in records] == [0, 1, 2]
        found = ContextAssembler(ConversationMemory, retrieval_mode="lexical").assemble(
            "Where did Caroline go camping?", agent_id="agent-1")
        assert found.records[0].content == "The Rockies, with the whole family!"
        assert "I painted a lake at sunrise" not in [r.content for r in found.records]
        fused = conversation_assembler().assemble("Where did Caroline go camping?", agent_id="agent-1")
        assert fused.records[0].content == "The Rockies, with the whole family!"
    finally:
        redmem.configure(embedding_provider=None)


@pytest.mark.bench
def test_architecture_measures_two_revisions_and_compares_locomo_runs(tmp_path):
    """benchmarks/architecture.py: the tree's shape at HEAD on both sides (so equal), and two
    LoCoMo results that differ only in a timing are called identical, one that differs in a
    recall is not."""
    result = {"recall@1": 0.5, "recall@5": 0.7, "mrr": 0.6, "assemble_ms": {"p50": 1.0}}
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps({"results": {"a": result, "b": result}}))
    after.write_text(json.dumps({"results": {"a": {**result, "assemble_ms": {"p50": 9.0}},
                                             "b": {**result, "recall@5": 0.69}}}))
    out = tmp_path / "architecture.json"
    subprocess.run([sys.executable, str(BENCH / "architecture.py"), "--before", "HEAD", "--after", "HEAD",
                    "--no-mypy", "--locomo", str(before), str(after), "--out", str(out)],
                   cwd=REPO, check=True, capture_output=True, timeout=120)
    payload = json.loads(out.read_text())
    shape = {k: v for k, v in payload["before"].items() if k != "revision"}
    assert shape == {k: v for k, v in payload["after"].items() if k != "revision"}
    assert shape["files"] == len(list((REPO / "src" / "redmem").rglob("*.py")))
    assert shape["median_function_lines"] > 0 and shape["functions_over_8_parameters"] >= 0
    assert payload["locomo"]["a"]["identical"] and not payload["locomo"]["b"]["identical"]
    assert "| b | 0.7000 | 0.6900 |" in out.with_suffix(".md").read_text()


def test_hsca_evals_smoke(tmp_path):
    """hsca_evals.py on 3 cases a split with tiny grids (the full run is a benchmark, not a test)."""
    payload = run("hsca_evals.py", "--smoke", out_dir=tmp_path, timeout=300)
    sys.path.insert(0, str(BENCH))
    try:
        import hsca_evals
    finally:
        sys.path.remove(str(BENCH))
    assert payload["frozen_cases"] == hsca_evals.FROZEN and payload["smoke"]
    assert payload["frozen_real_cases"] == hsca_evals.FROZEN_REAL
    assert list(payload["evals_on_written_cases"]) == ["eval1_fidelity", "eval2_macro", "eval4_adversarial"]
    evals = payload["evals"]
    assert evals["eval1_fidelity"]["cases"][0]["id"].startswith("real-")
    assert set(evals["eval4_adversarial"]["baseline_passes"]) == {"constant", "word_count", "tfidf"}
    assert list(evals) == ["eval1_fidelity", "eval2_macro", "eval3_self_improvement", "eval4_adversarial",
                           "eval5_bridging"]
    for name, row in evals.items():
        assert row["verdict"] in {"PASS", "MISS"}
        if name == "eval3_self_improvement":
            assert [s["interactions"] for s in row["steps"]] == [0, 4]
            continue
        held, tuning = row["pass_rates"]["held_out"], row["pass_rates"]["tuning"]
        assert held["cases"] == tuning["cases"] == 3 and 0 <= held["rate"] <= 1
    assert evals["eval3_self_improvement"]["tuner_ceiling"]["settings"] == 2
    assert all(k["other"] > k["own"] for k in payload["keyword_audit"])
    assert payload["layer1_stuffing"]["genuine"] == payload["layer1_stuffing"]["stuffed"] == 12
    assert 0.0 <= payload["layer1_stuffing"]["auc"] <= 1.0
    for row in (evals["eval1_fidelity"], evals["eval4_adversarial"]):
        assert row["best_baseline"] in row["baselines"] and row["margin"] == 0.10
    costs = payload["costs"]
    assert costs["score_layers"]["chunks_per_s"] > 0 and costs["session"]["snapshots"] >= 40
    assert {"full_read_s", "get_macro_context_cold_s", "domain_evolution_full_read_s"} <= set(costs["session"])
    assert all(row["p50"] > 0 for row in costs["session"]["latency_ms"].values())
    assert (tmp_path / "smoke_hsca_evals.md").read_text().startswith("# HSCA evaluations")


def test_hsca_evals_refuse_changed_cases(tmp_path, monkeypatch):
    sys.path.insert(0, str(BENCH))
    try:
        import hsca_evals
    finally:
        sys.path.remove(str(BENCH))
    for name in hsca_evals.FROZEN:
        (tmp_path / name).write_bytes((hsca_evals.DATA / name).read_bytes())
    monkeypatch.setattr(hsca_evals, "DATA", tmp_path)
    assert len(hsca_evals.load_cases("eval1_fidelity.json")) == 36
    (tmp_path / "eval1_fidelity.json").write_text((tmp_path / "eval1_fidelity.json").read_text().replace("fever", "fevers", 1))
    with pytest.raises(SystemExit, match="not the frozen"):
        hsca_evals.load_cases("eval1_fidelity.json")


def test_hsca_real_cases_refuse_changed_pointers_and_shared_vocabulary(tmp_path, monkeypatch):
    sys.path.insert(0, str(BENCH))
    try:
        import hsca_evals
        import hsca_real_cases
    finally:
        sys.path.remove(str(BENCH))
    cases = hsca_evals.load_real_cases("eval2_macro")
    assert len(cases) == 30 and all(len(c["turns"]) == 10 for c in cases)
    copy = tmp_path / "real_cases.json"
    copy.write_text(hsca_real_cases.CASES.read_text().replace('"real-macro-00"', '"real-macro-0"', 1))
    monkeypatch.setattr(hsca_real_cases, "CASES", copy)
    with pytest.raises(SystemExit, match="pointers changed"):
        hsca_evals.load_real_cases("eval2_macro")
    monkeypatch.setattr(hsca_real_cases, "CLAUSES", ("the doctor said {k}",))
    with pytest.raises(SystemExit, match="keyword lists"):
        hsca_real_cases.check_vocabulary_apart()


@pytest.mark.bench
def test_filters_smallest_size(tmp_path):
    """filters.py: assemble() with no, a selective and a broad filter; every assembled record is
    checked against the filter inside the script; a filter adds no round trip."""
    payload = run("filters.py", "--sizes", "300", "--queries", "10", "--repeats", "1",
                  "--data", str(LOCOMO) if LOCOMO.exists() else "", out_dir=tmp_path)
    for mode in ("lexical", "hybrid"):
        rows = payload["results"]["300"][mode]["filters"]
        assert set(rows) == {"none", "selective", "broad"} and rows["none"]["share"] == 1
        assert 0 < rows["selective"]["share"] < rows["broad"]["share"] < 1
        assert {row["assemble"]["round_trips"] for row in rows.values()} == {rows["none"]["assemble"]["round_trips"]}
    assert (tmp_path / "smoke_filters.md").read_text().count("\n") == 2 + 6
