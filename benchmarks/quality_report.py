"""quality.py's results as Markdown tables: LoCoMo per path, then the scenario suite per split."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown"]


def _num(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _head(payload: dict[str, Any]) -> list[str]:
    m = payload["machine"]
    load = payload["load_average"]
    return [f"# Every path side by side ({payload['vectors']} vectors{', quick' if payload['quick'] else ''})", "",
            f"{m['system']}, {m['cores']} cores, Python {m['python']}, Redis {payload.get('redis_version')}; "
            f"load average {load['before'][0]:.1f} at the start, {load['after'][0]:.1f} at the end; "
            f"git {m['git']}, {m['date']}; {payload['seconds'] / 60:.1f} minutes in all.", "",
            "| path | what is called |", "|---|---|",
            *[f"| `{name}` | {what} |" for name, what in payload["paths"].items()], ""]


def _locomo(part: dict[str, Any]) -> list[str]:
    lines = [f"## LoCoMo ({part['questions']} questions of categories 1-4, {part['turns']} turns, "
             f"{len(part['conversations'])} conversations)", "",
             "R@k: an evidence turn among the first k memories returned (an HCE interaction holds two turns); "
             "in 1,000 tokens: an evidence turn inside a 1,000-token context; ms: the answering call, "
             "query embedding included.", "",
             "| system | R@1 | R@5 | R@10 | MRR | evidence in 1,000 tokens | items / context | items in 1,000 tokens "
             "| p50 ms | p95 ms | round trips | below floor |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in part["results"].items():
        lines.append(f"| {name} | {r['recall@1']:.3f} | {r['recall@5']:.3f} | {r['recall@10']:.3f} | {r['mrr']:.3f} | "
                     f"{r['evidence_in_1000_tokens']:.3f} | {r['items_per_context']:.1f} | "
                     f"{r['items_in_1000_tokens']:.1f} | {r['ms']['p50']:.1f} | {r['ms']['p95']:.1f} | "
                     f"{r['round_trips_p50']:g} | {_num(r['below_floor_mean'], 1)} |")
    categories = sorted({c for r in part["results"].values() for c in r["by_category"]})
    lines += ["", "R@5 per category:", "", "| system | " + " | ".join(categories) + " |",
              "|---|" + "---|" * len(categories)]
    for name, r in part["results"].items():
        lines.append(f"| {name} | " + " | ".join(_num(r["by_category"].get(c, {}).get("recall@5"))
                                               for c in categories) + " |")
    return lines + [""]


def _scenarios(part: dict[str, Any]) -> list[str]:
    lines = [f"## User scenarios ({part['cases']} cases, scenarios/SPEC.md)", ""]
    splits = [s for s in ("dev", "held_out") if any(s in r for r in part["results"].values())]
    for split in splits:
        lines += [f"### {split}", "",
                  "| system | R@1 | R@3 | R@5 | all@5 | paraphrase in top 3 | newer first | irrelevant / context "
                  "| traps / context | items / context | p50 ms | p95 ms | round trips |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, result in part["results"].items():
            r = result[split]
            lines.append(f"| {name} | {r['recall@1']:.2f} | {r['recall@3']:.2f} | {r['recall@5']:.2f} | "
                         f"{r['all@5']:.2f} | {_num(r['paraphrase_top3'], 2)} | {_num(r['newer_first'], 2)} | "
                         f"{r['irrelevant_per_context']:.1f} | {r['traps_per_context']:.1f} | "
                         f"{r['items_per_context']:.1f} | {r['ms']['p50']:.1f} | {r['ms']['p95']:.1f} | "
                         f"{r['round_trips_p50']:g} |")
        categories = sorted({c for res in part["results"].values() for c in res[split]["by_category"]})
        lines += ["", f"R@1 / R@3 per category ({split}):", "", "| system | " + " | ".join(categories) + " |",
                  "|---|" + "---|" * len(categories)]
        for name, result in part["results"].items():
            found = result[split]["by_category"]
            lines.append(f"| {name} | " + " | ".join(
                f"{found[c]['recall@1']:.2f} / {found[c]['recall@3']:.2f}" if c in found else "-"
                for c in categories) + " |")
        lines.append("")
    return lines


def markdown(payload: dict[str, Any]) -> str:
    """The report: the paths, then LoCoMo and the scenario suite when they ran."""
    lines = _head(payload)
    if "locomo" in payload:
        lines += _locomo(payload["locomo"])
    if "scenarios" in payload:
        lines += _scenarios(payload["scenarios"])
    return "\n".join(lines)
