"""What limits HSCA eval 3 (self-improvement): the layer-1 AUC its tuned parameters can reach.

    .venv/bin/python benchmarks/hsca_eval3_ceiling.py --out hsca30k_eval3_ceiling

Eval 3's metric is eval 1's held-out layer-1 AUC of the central turns over the aside
(``hsca_evals.layer1_auc``). Layer 1 is recomputed here as the engine computes it with no flag
weights (relational weight against the last 20 turns, times originality), once per turn, and
recombined under layer 1's two conversation terms (:func:`~redmem.recipes.hsca._relational.conversation_weight`),
the parameters the tuner moves first. Reported, per split of eval 1's real cases:

- the AUC at the defaults, over the tuner's whole grid of the two terms, the pair best on the
  **tuning half** (what a tuner that read the tuning half perfectly would choose) and that pair's
  held-out AUC; the held-out best of the grid is a diagnostic (nothing is chosen on it);
- the shrink: the tuner moves ``n / (n + PRIOR_QUERIES)`` of the way with ``n <= MAX_QUERIES``
  queries read, so the held-out AUC at that share of the way to the tuning half's best pair;
- three candidate levers, each with the same grid: a conversation's short-turn threshold in
  terms (20 now), an uptake offset under which a long turn's tie is 0, and a turn without context
  of fewer than 20 terms scored as short (flat 0.2) instead of on its own structure;
- the tuning half's cases still lost at its best pair: which turns rank below the aside.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import common
import hsca_real_cases as real_cases
import redmem.recipes.hsca._relational as relational
from redmem.recipes.hsca._originality import originality
from redmem.recipes.hsca._relational import Relational, conversation_weight
from redmem.recipes.hsca._text import ParsedTurn, parse_turn
from redmem.recipes.hsca._tuning import MAX_QUERIES, PRIOR_QUERIES, SHORT_PRIOR_GRID, TIE_SATURATION_GRID

DEFAULTS = (relational.TIE_SATURATION, 0.0)
#: The engine's context: its last ``max_buffer_chunks`` turns.
CONTEXT = 20
Scored = list[tuple[Relational, float]]


def scored(cases: list[dict[str, Any]], short_terms: int = relational.SHORT_CHUNK_TERMS,
           terms_alone: bool = False, long_words: int | None = None,
           tied_words: int | None = None) -> dict[str, Scored]:
    """Each case's turns as layer 1 scores them (short-turn threshold ``short_terms``; with
    ``terms_alone`` a turn without context of fewer than that many terms is short too; with
    ``long_words`` a turn in context of that many words or more is long whatever its sentences;
    with ``tied_words`` a short turn in context of that many words or more keeps its score against
    the context but is weighed by its tie to it as a long turn is)."""
    saved = relational.SHORT_CHUNK_TERMS
    relational.SHORT_CHUNK_TERMS = short_terms
    try:
        out = {}
        for case in cases:
            parsed = [parse_turn(t) for t in case["turns"]]
            out[case["id"]] = [(tied(one(p, parsed[max(0, i - CONTEXT) : i], terms_alone, long_words),
                                     p, parsed[max(0, i - CONTEXT) : i], tied_words), originality(p))
                               for i, p in enumerate(parsed)]
        return out
    finally:
        relational.SHORT_CHUNK_TERMS = saved


def one(turn: ParsedTurn, context: list[ParsedTurn], terms_alone: bool, long_words: int | None) -> Relational:
    if terms_alone and not context and len(turn.terms) < relational.SHORT_CHUNK_TERMS:
        score = relational.SHORT_CHUNK_SCORE
        return Relational(score, (score,), (score,), True, {}, score)
    if long_words is not None and context and len(turn.words) >= long_words:
        saved = relational.SHORT_CHUNK_SENTENCES
        relational.SHORT_CHUNK_SENTENCES = 1
        try:
            return relational.relational_weight(turn, 5, context)
        finally:
            relational.SHORT_CHUNK_SENTENCES = saved
    return relational.relational_weight(turn, 5, context)


def tied(found: Relational, turn: ParsedTurn, context: list[ParsedTurn], tied_words: int | None) -> Relational:
    if tied_words is None or not context or not found.short_chunk or len(turn.words) < tied_words:
        return found
    return replace(found, uptake=relational.uptake(turn, context))


def weight(found: Relational, tie: float, prior: float, offset: float) -> float:
    """Layer 1 under the two terms; ``offset``: the uptake under which a long turn's tie is 0."""
    if found.uptake is not None and offset:
        return found.structure * min(1.0, max(0.0, found.uptake - offset) / tie)
    return conversation_weight(found, tie, prior)


def auc(cases: list[dict[str, Any]], scores: dict[str, Scored], tie: float, prior: float, offset: float = 0.0) -> float:
    """Eval 3's metric: mean over cases of P(layer1(central) > layer1(aside)), ties half."""
    per_case = []
    for case in cases:
        w = [weight(r, tie, prior, offset) * o for r, o in scores[case["id"]]]
        aside = w[case["aside_turn"]]
        per_case.append(statistics.fmean(1.0 if w[i] > aside else 0.5 if w[i] == aside else 0.0
                                         for i in case["central_turns"]))
    return statistics.fmean(per_case)


def study(tuning: list[dict[str, Any]], held_out: list[dict[str, Any]],
          scores: Callable[[list[dict[str, Any]]], dict[str, Scored]], offset: float = 0.0) -> dict[str, Any]:
    """The grid on both halves: defaults, the tuning half's best pair and its held-out AUC, the
    held-out grid's best (diagnostic), and the held-out AUC after the tuner's shrink."""
    on_tuning, on_held = scores(tuning), scores(held_out)
    pairs = sorted(itertools.product(TIE_SATURATION_GRID, SHORT_PRIOR_GRID),
                   key=lambda p: (abs(p[0] - DEFAULTS[0]), p[1]))
    grid_t = {p: auc(tuning, on_tuning, *p, offset) for p in pairs}
    grid_h = {p: auc(held_out, on_held, *p, offset) for p in pairs}
    best = max(pairs, key=lambda p: grid_t[p])
    shrink = {}
    for n in (100, 400):
        share = min(n, MAX_QUERIES) / (min(n, MAX_QUERIES) + PRIOR_QUERIES)
        pair = (DEFAULTS[0] + (best[0] - DEFAULTS[0]) * share, best[1] * share)
        shrink[f"queries {n}: share {share:.2f}"] = {"pair": [round(x, 3) for x in pair],
                                                      "held_out": round(auc(held_out, on_held, *pair, offset), 4)}
    held_best = max(pairs, key=lambda p: grid_h[p])
    return {"tuning_default": round(grid_t[DEFAULTS], 4), "tuning_best_pair": list(best),
            "tuning_best": round(grid_t[best], 4), "held_out_default": round(grid_h[DEFAULTS], 4),
            "held_out_at_tuning_best": round(grid_h[best], 4),
            "held_out_gain_at_tuning_best": round(grid_h[best] - grid_h[DEFAULTS], 4),
            "held_out_grid_best_diagnostic": {"pair": list(held_best), "auc": round(grid_h[held_best], 4)},
            "shrunk": shrink}


def losses(cases: list[dict[str, Any]], scores: dict[str, Scored], pair: tuple[float, float]) -> list[dict[str, Any]]:
    """The cases whose AUC is under 1 at ``pair``: each turn's layer 1, short or long, sentences, terms."""
    out = []
    for case in cases:
        if auc([case], scores, *pair) < 1:
            turns = [{"layer1": round(weight(r, *pair, 0.0) * o, 3), "short": r.short_chunk,
                      "context": i > 0, "aside": i == case["aside_turn"]} for i, (r, o) in enumerate(scores[case["id"]])]
            out.append({"id": case["id"], "central": case["central_topic"], "aside": case["aside_topic"],
                        "auc": round(auc([case], scores, *pair), 3), "turns": turns})
    return out


def markdown(payload: dict[str, Any]) -> str:
    lines = ["# HSCA eval 3: what the tuned parameters can reach", "",
             f"Load average {payload['load_average_start']} -> {payload['load_average_end']} (2 shared cores); "
             f"CPU {payload['cpu_s']} s. Layer-1 AUC (central over aside) of eval 1's real cases; the pair is "
             "(tie saturation, short-turn prior), chosen on the tuning half.", "",
             "| variant | tuning: default -> best (pair) | held-out: default -> at tuning's pair (gain) | "
             "held-out after the shrink | held-out grid best (diagnostic) |", "|---|---|---|---|---|"]
    for name, row in payload["variants"].items():
        shrunk = "; ".join(f"{k}: {v['held_out']:.3f}" for k, v in row["shrunk"].items())
        lines.append(f"| {name} | {row['tuning_default']:.3f} -> {row['tuning_best']:.3f} ({row['tuning_best_pair']}) | "
                     f"{row['held_out_default']:.3f} -> {row['held_out_at_tuning_best']:.3f} "
                     f"({row['held_out_gain_at_tuning_best']:+.3f}) | {shrunk} | "
                     f"{row['held_out_grid_best_diagnostic']['auc']:.3f} {row['held_out_grid_best_diagnostic']['pair']} |")
    lines += ["", "Tuning-half cases still lost at its best pair (as is):", ""]
    for case in payload["tuning_losses"]:
        turns = ", ".join(f"{'ASIDE ' if t['aside'] else ''}{t['layer1']}{' S' if t['short'] else ' L'}"
                          f"{'' if t['context'] else ' (no context)'}" for t in case["turns"])
        lines.append(f"- {case['id']} ({case['central']} thread, {case['aside']} aside) AUC {case['auc']}: {turns}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="results/<out>.json and .md")
    args = parser.parse_args(argv)
    load_start, cpu = list(os.getloadavg()), time.process_time()
    cases = real_cases.load("eval1_fidelity")
    tuning = [c for c in cases if c["split"] == "tuning"]
    held_out = [c for c in cases if c["split"] == "held_out"]
    variants = {"as is": study(tuning, held_out, scored)}
    for terms in (30, 40):
        variants[f"short-turn threshold {terms} terms"] = study(tuning, held_out, lambda c, t=terms: scored(c, t))
    for offset in (0.05, 0.1):
        variants[f"uptake offset {offset}"] = study(tuning, held_out, scored, offset)
    variants["a turn without context under 20 terms is short"] = study(tuning, held_out,
                                                                        lambda c: scored(c, terms_alone=True))
    for words in (40, 50):
        variants[f"a turn in context of {words}+ words is long"] = study(tuning, held_out,
                                                                        lambda c, w=words: scored(c, long_words=w))
    for words in (40, 50, 60):
        variants[f"a short turn in context of {words}+ words is tied"] = study(
            tuning, held_out, lambda c, w=words: scored(c, tied_words=w))
    best = tuple(variants["as is"]["tuning_best_pair"])
    payload = {"machine": common.machine(), "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
               "cpu_s": round(time.process_time() - cpu, 1), "variants": variants,
               "tuning_losses": losses(tuning, scored(tuning), (best[0], best[1]))}
    common.write_results(args.out, payload, markdown(payload))
    print(markdown(payload))


if __name__ == "__main__":
    main()
