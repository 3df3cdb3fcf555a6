"""Plots and the Markdown summary of the benchmark results (reads results/*.json, writes PNG + .md).

    .venv/bin/python benchmarks/plots.py          # results/latency_vs_n.png, locomo_recall.png, summary.md
                                                  # and docs/img/latency_workloads.png (issue 18)

Needs matplotlib (the ``dev`` extra). Any result file that is missing is left out; the
summary checks the issue's targets against the measured values and says PASS or MISS.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, read_json


# ----------------------------------------------------------------------------- plots
def plot_latency(latency: dict, cluster: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series: dict[str, list[tuple[int, float]]] = {}
    for label, data in (("", latency), (" (cluster)", cluster or {"results": {}})):
        for n, systems in data["results"].items():
            for system, figures in systems.items():
                for mode, row in figures["assemble"].items():
                    series.setdefault(f"{system} {mode}{label}", []).append((int(n), row["p50"]))
    for name, points in sorted(series.items()):
        points.sort()
        style = "--" if "popoto" in name else (":" if "cluster" in name else "-")
        ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("memories in the partition (N)")
    ax.set_ylabel("assemble() p50 (ms)")
    ax.set_title("assemble() latency vs N (one agent, max_items=10)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def workload_series(side: dict, scale: dict | None) -> dict[str, dict[str, list[tuple[int, float, float]]]]:
    """``{workload: {system label: [(N, p50, p95)]}}`` from side_by_side.json (and scale.json's 1M lexical point)."""
    out: dict[str, dict[str, list[tuple[int, float, float]]]] = {}
    for workload, by_n in side["results"].items():
        series = out.setdefault(workload, {})
        for n, systems in by_n.items():
            rows = []
            if "redmem" in systems:
                rows += [("redmem assemble", systems["redmem"]["assemble"]),
                         ("redmem keyword_search", systems["redmem"]["keyword_search"])]
            if "popoto" in systems:
                rows.append(("popoto 1.10.1 assemble", systems["popoto"]["assemble"]))
            stack = systems.get("stack") or {}
            if "redisvl" in stack:
                rows.append(("redisvl 0.28 TextQuery", stack["redisvl"]["search"]))
            engine = (stack.get("query_engine") or {}).get("scorers", {}).get("BM25STD terms", {})
            if "search" in engine:
                rows.append(("FT.SEARCH BM25STD over redmem records", engine["search"]))
            for label, row in rows:
                series.setdefault(label, []).append((int(n), row["p50"], row["p95"]))
    lexical = (scale or {}).get("results", {}).get("lexical")
    if lexical and "questions" in out:
        timed = lexical["assemble"][0]  # the lexical kind has one row (no vector pre-scan)
        out["questions"].setdefault("redmem assemble", []).append(
            (int(scale["n"]), timed["p50_without_embedding"], timed["p95_without_embedding"]))
    return out


def plot_workloads(side: dict, scale: dict | None, path: Path) -> None:
    """p50 (solid) and p95 (dashed) against N, one panel per workload, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = workload_series(side, scale)
    fig, axes = plt.subplots(1, len(data), figsize=(6.5 * len(data), 4.8), squeeze=False)
    for ax, (workload, series) in zip(axes[0], sorted(data.items())):
        for i, (label, points) in enumerate(sorted(series.items())):
            points.sort()
            color = f"C{i}"
            xs = [p[0] for p in points]
            ax.plot(xs, [p[1] for p in points], "-", marker="o", color=color, label=f"{label} p50")
            ax.plot(xs, [p[2] for p in points], "--", marker="x", color=color, label=f"{label} p95")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in the partition (N)")
        ax.set_ylabel("ms")
        ax.set_title(f"{workload} workload: p50 (solid) / p95 (dashed)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_recall(locomo: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ["recall@1", "recall@5", "recall@10", "mrr"]
    systems = list(locomo["results"])
    fig, ax = plt.subplots(figsize=(9, 4.8))
    width = 0.8 / len(systems)
    for i, system in enumerate(systems):
        values = [locomo["results"][system][m] for m in metrics]
        ax.bar([j + i * width for j in range(len(metrics))], values, width, label=system)
    ax.axhline(0.70, color="grey", linestyle=":", linewidth=1)
    ax.axhline(0.40, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks([j + width * (len(systems) - 1) / 2 for j in range(len(metrics))], metrics)
    ax.set_ylim(0, 1)
    ax.set_title(f"LoCoMo dev ({locomo['questions']} questions, categories 1-4), any-hit, max_items=10")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- summary
def _f(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "**MISS**"


def locomo_section(data: dict) -> list[str]:
    lines = [f"## LoCoMo retrieval quality ({data['questions']} questions, {data['turns']} turns, "
             f"{len(data['conversations'])} conversations)", "",
             "| system / mode | R@1 | R@5 | R@10 | MRR | multi-hop R@5 | temporal R@5 | open-domain R@5 "
             "| single-hop R@5 | tokens/context (mean) | assemble p50 ms |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in data["results"].items():
        cats = row["by_category"]
        lines.append(
            f"| {name} | {_f(row['recall@1'])} | {_f(row['recall@5'])} | {_f(row['recall@10'])} | {_f(row['mrr'])} | "
            + " | ".join(_f(cats.get(c, {}).get("recall@5")) for c in ("multi-hop", "temporal", "open-domain", "single-hop"))
            + f" | {_f(row['tokens_per_context']['mean'], 0)} | {_f(row['assemble_ms']['p50'], 1)} |")
    for name, ref in data["reference"].items():
        lines.append(f"| {name} | {ref['recall@1']} | {ref['recall@5']} | {ref['recall@10']} | {ref['mrr']} "
                     "| | | | | | |")
    best = max((r for n, r in data["results"].items() if n.startswith("redmem")), key=lambda r: r["recall@5"], default=None)
    if best is not None:
        lines += ["", f"Target (redmem best mode): R@5 >= 0.70 -> {_f(best['recall@5'])} {_verdict(best['recall@5'] >= 0.70)}; "
                  f"R@1 >= 0.40 -> {_f(best['recall@1'])} {_verdict(best['recall@1'] >= 0.40)}."]
    return lines + [""]


def latency_section(data: dict, title: str) -> list[str]:
    lines = [f"## {title}", "", "| N | library | mode | p50 ms | p95 ms | p99 ms | p50 w/o query embedding "
             "| round trips | commands sent | single save/s | bulk/s | bytes/memory |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, systems in data["results"].items():
        for system, figures in systems.items():
            for mode, row in figures["assemble"].items():
                ingest = figures["ingest"].get("hybrid" if mode == "hybrid" else "lexical", {})
                lines.append(f"| {int(n):,} | {system} | {mode} | {_f(row['p50'], 2)} | {_f(row['p95'], 2)} | "
                             f"{_f(row['p99'], 2)} | {_f(row['p50_without_embedding'], 2)} | {_f(row['round_trips'], 0)} | "
                             f"{_f(row['commands'], 0)} | {_f(ingest.get('single_per_s'), 0)} | "
                             f"{_f(ingest.get('bulk_per_s'), 0)} | {_f(ingest.get('bytes_per_memory'), 0)} |")
    return lines + [""]


def _against_lexical(res: dict, n: str, factor: int, ours: float, p50: Any) -> str:
    """The hybrid target where popoto's hybrid model was not measured: against popoto's lexical p50,
    a lower bound of its hybrid p50 wherever both were measured (the ratios are shown)."""
    theirs = p50(n, "popoto", "lexical")
    seen = [(m, p50(m, "popoto", "hybrid") / p50(m, "popoto", "lexical")) for m in res
            if p50(m, "popoto", "hybrid") and p50(m, "popoto", "lexical")]
    bound = all(r >= 1 for _, r in seen) and bool(seen)
    shown = ", ".join(f"{r:.2f}x at {int(m):,}" for m, r in seen)
    return (f"| p50 <= 1/{factor} of popoto at {int(n):,}, hybrid | {ours:.2f} ms vs popoto's lexical {theirs:.2f} ms "
            f"({theirs / ours:.1f}x; popoto's hybrid not measured at this N, its hybrid / lexical p50: {shown}) "
            f"| {_verdict(bound and theirs / ours >= factor) if seen else 'not measured'} |")


def targets_section(latency: dict) -> list[str]:
    res = latency["results"]
    lines = ["## Latency and cost targets (same run, same server)", "", "| target | measured | verdict |", "|---|---|---|"]

    def p50(n: str, system: str, mode: str) -> float | None:
        return res.get(n, {}).get(system, {}).get("assemble", {}).get(mode, {}).get("p50")

    for n, factor in (("10000", 4), ("100000", 20)):
        for mode in ("lexical", "hybrid"):
            ours, theirs = p50(n, "redmem", mode), p50(n, "popoto", mode)
            if ours and theirs:
                ratio = theirs / ours
                lines.append(f"| p50 <= 1/{factor} of popoto at {int(n):,}, {mode} | {ours:.2f} vs {theirs:.2f} ms "
                             f"(popoto / redmem = {ratio:.1f}x) | {_verdict(ratio >= factor)} |")
            elif ours and mode == "hybrid" and p50(n, "popoto", "lexical"):
                lines.append(_against_lexical(res, n, factor, ours, p50))
    for mode in ("lexical", "hybrid"):
        a, b = p50("10000", "redmem", mode), p50("100000", "redmem", mode)
        if a and b:
            lines.append(f"| p50(100k) / p50(10k) <= 2, {mode} | {b / a:.2f} | {_verdict(b / a <= 2)} |")
    trips = [(n, m, r["round_trips_max"], r["round_trips"]) for n, s in res.items() for m, r in s.get("redmem", {}).get("assemble", {}).items()]
    for n, mode, most, median in trips:
        lines.append(f"| <= 4 round trips, {int(n):,} {mode} | median {median:.0f}, max {most} | {_verdict(median <= 4)} |")
    for n, systems in res.items():
        if "redmem" in systems and "popoto" in systems:
            for kind in ("lexical", "hybrid"):  # like for like: hybrid models against popoto's hybrid model
                if kind not in systems["popoto"]["ingest"]:
                    continue
                ours, theirs = systems["redmem"]["ingest"][kind], systems["popoto"]["ingest"][kind]
                if not (ours["single_per_s"] and theirs["single_per_s"]):
                    continue
                single = ours["single_per_s"] / theirs["single_per_s"]
                bulk = ours["bulk_per_s"] / theirs["single_per_s"]
                lines.append(f"| single save >= 1.5x popoto, {int(n):,} {kind} | {ours['single_per_s']:.0f} vs "
                             f"{theirs['single_per_s']:.0f}/s ({single:.2f}x) | {_verdict(single >= 1.5)} |")
                lines.append(f"| bulk >= 10x popoto's single save, {int(n):,} {kind} | {ours['bulk_per_s']:.0f}/s "
                             f"({bulk:.1f}x) | {_verdict(bulk >= 10)} |")
            for kind in ("lexical", "hybrid"):
                if kind not in systems["popoto"]["ingest"]:
                    continue
                a, b = systems["redmem"]["ingest"][kind]["bytes_per_memory"], systems["popoto"]["ingest"][kind]["bytes_per_memory"]
                lines.append(f"| memory per memory <= popoto's, {int(n):,} {kind} | {a:,.0f} vs {b:,.0f} bytes "
                             f"| {_verdict(a <= b)} |")
    return lines + [""]


def tenants_section(data: dict) -> list[str]:
    asked = f"{data['queries']} queries to random agents"
    if data.get("popoto_queries", data["queries"]) != data["queries"]:
        asked += f"; popoto: the first {data['popoto_queries']} of them"
    lines = [f"## Multi-tenant: {data['agents']:,} agents x {data['per_agent']} memories ({asked}, "
             f"{data['repeats']} repeats)", "", "| library | mode | p50 ms | p95 ms | p99 ms | round trips | bytes/memory |",
             "|---|---|---|---|---|---|---|"]
    for system, figures in data["results"].items():
        for mode, row in figures["assemble"].items():
            lines.append(f"| {system} | {mode} | {_f(row['p50'], 2)} | {_f(row['p95'], 2)} | {_f(row['p99'], 2)} | "
                         f"{_f(row['round_trips'], 0)} | {_f(figures['ingest'][mode]['bytes_per_memory'], 0)} |")
    return lines + [""]


def summary_markdown(directory: Path) -> str:
    locomo, latency = read_json("locomo", directory), read_json("latency", directory)
    cluster, tenants = read_json("latency_cluster", directory), read_json("tenants", directory)
    first = next((d for d in (locomo, latency, tenants, cluster) if d), None)
    lines = ["# Benchmark summary: redmem vs popoto 1.10.1", ""]
    if first:
        m = first["machine"]
        lines += [f"Machine: {m['system']}, {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB; Python {m['python']}; "
                  f"Redis {first.get('redis_version')} (private server, unix socket); load average at start "
                  f"{', '.join(f'{x:.1f}' for x in m['load_average'])}; {m['date']}; git {m.get('git')}.", ""]
    if locomo:
        lines += locomo_section(locomo)
    if latency:
        lines += targets_section(latency) + latency_section(latency, "assemble() latency and cost, one partition")
    if cluster:
        lines += latency_section(cluster, "The same on a 3-master cluster (redmem only)")
    if tenants:
        lines += tenants_section(tenants)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--docs-images", type=Path, default=RESULTS.parent.parent / "docs" / "img")
    args = parser.parse_args(argv)
    latency, locomo = read_json("latency", args.results), read_json("locomo", args.results)
    if latency:
        plot_latency(latency, read_json("latency_cluster", args.results), args.results / "latency_vs_n.png")
    if locomo:
        plot_recall(locomo, args.results / "locomo_recall.png")
    side, final = read_json("side_by_side", args.results), read_json("side_by_side_final", args.results)
    if side and final:  # the final code's run (questions, quiet host) replaces the older workloads it repeats
        side = {**side, "results": {**side["results"], **final["results"]}}
    if side:
        plot_workloads(side, read_json("scale", args.results), args.docs_images / "latency_workloads.png")
    (args.results / "summary.md").write_text(summary_markdown(args.results) + "\n")


if __name__ == "__main__":
    main()
