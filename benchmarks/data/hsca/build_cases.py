"""Compose the hand-written material (``material.py``) into the frozen HSCA case files.

    python benchmarks/data/hsca/build_cases.py      # rewrites eval*.json here; then update FROZEN
                                                    # in benchmarks/hsca_evals.py on purpose

Deterministic (one seeded RNG per file). Every case carries ``split``: ``tuning`` (what the
engine may be tuned or calibrated on) or ``held_out`` (what the results report), half each.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

from material import ASIDES, BRIDGES, CROSS, FILLERS, THREADS

HERE = Path(__file__).resolve().parent
SEED = 17
STOP = frozenset(
    ["a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "and", "or", "but", "if", "so", "is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those", "with", "from", "as", "into", "than", "then", "there", "their", "they", "them", "he", "she", "his", "her", "him", "we", "our", "you", "your", "i", "my", "me", "not", "no", "only", "every", "each", "all", "any", "some", "one", "two", "first", "second", "after", "before", "until", "when", "while", "which", "who", "what", "how", "why", "does", "do", "did", "done", "can", "could", "may", "might", "must", "should", "would", "will", "up", "out", "over", "under", "about", "again"]
)


def split_halves(cases: list[dict], rng: random.Random) -> list[dict]:
    """Mark a seeded half of ``cases`` ``tuning`` and the rest ``held_out`` (order kept)."""
    order = list(range(len(cases)))
    rng.shuffle(order)
    tuning = set(order[: len(cases) // 2])
    for i, case in enumerate(cases):
        case["split"] = "tuning" if i in tuning else "held_out"
    return cases


def threads() -> list[tuple[str, int, list[str]]]:
    return [(domain, i, turns) for domain, group in THREADS.items() for i, turns in enumerate(group)]


def fidelity_cases() -> list[dict]:
    """Eval 1: a thread's four short turns with a long aside of another domain among them."""
    rng, domains, cases = random.Random(SEED), list(THREADS), []
    for n, (domain, i, turns) in enumerate(threads()):
        aside_domain = domains[(domains.index(domain) + 1 + i * 2) % len(domains)]
        if aside_domain == domain:
            aside_domain = domains[(domains.index(domain) + 1) % len(domains)]
        at = rng.randint(1, 3)
        conversation = [*turns[:at], ASIDES[aside_domain], *turns[at:]]
        central = [k for k in range(len(conversation)) if k != at]
        cases.append({"id": f"fidelity-{n:02d}", "central_topic": domain, "aside_topic": aside_domain,
                      "turns": conversation, "central_turns": central, "aside_turn": at,
                      "query": keywords(turns, 3)})
    return split_halves(cases, rng)


def macro_cases() -> list[dict]:
    """Eval 2: topic A, then B, then a turn pair joining them, then A resumed."""
    rng, cases = random.Random(SEED + 2), []
    for pair, cross_turns in CROSS.items():
        first, second = pair.split("+")
        for variant in range(2):
            a, b = (first, second) if variant == 0 else (second, first)
            a_turns, b_turns = THREADS[a][variant], THREADS[b][(variant + 1) % 4]
            split_at = 2 if variant == 0 else 3
            segments = [(a, a_turns[:split_at]), (b, b_turns[: 3 + variant]), ("cross_domain", cross_turns),
                        (a, a_turns[split_at:])]
            turns = [t for _, seg in segments for t in seg]
            labels = [label for label, seg in segments for _ in seg]
            cases.append({"id": f"macro-{len(cases):02d}", "turns": turns, "turn_labels": labels,
                          "transitions": [a, b, "cross_domain", a]})
    return split_halves(cases, rng)


def keywords(turns: list[str], n: int) -> list[str]:
    """The ``n`` most frequent content words of a thread (ties by first appearance)."""
    words = [w for t in turns for w in re.findall(r"[a-z]+", t.lower()) if w not in STOP and len(w) > 2]
    counts = Counter(words)
    return sorted(dict.fromkeys(words), key=lambda w: (-counts[w], words.index(w)))[:n]


def adversarial_cases() -> list[dict]:
    """Eval 4: a query, a keyword-stuffed shallow document and eight real passages."""
    rng, cases = random.Random(SEED + 4), []
    pool = [(f"{d}-{i}", " ".join(t)) for d, i, t in threads()] + [(f"aside-{d}", text) for d, text in ASIDES.items()]
    fillers = list(FILLERS)
    for n, (domain, i, turns) in enumerate(threads()):
        query = keywords(turns, 4)
        rng.shuffle(fillers)
        slots = [k for k in query for _ in range(2)]
        rng.shuffle(slots)
        adversarial = " ".join(f.format(k=k) for f, k in zip(fillers, slots, strict=False))
        own = f"{domain}-{i}"
        others = rng.sample([p for p in pool if p[0] != own], 7)
        documents = [{"id": "adversarial", "text": adversarial}, {"id": own, "text": " ".join(turns)},
                     *({"id": pid, "text": text} for pid, text in others)]
        rng.shuffle(documents)
        cases.append({"id": f"adversarial-{n:02d}", "query": " ".join(query), "documents": documents})
    return split_halves(cases, rng)


def bridging_cases() -> list[dict]:
    """Eval 5: concept A in one domain, concept B in another, related by meaning; the bridge domain."""
    rng = random.Random(SEED + 5)
    cases = [{"id": f"bridging-{n:02d}", "domain_a": x, "turns_a": a, "domain_b": y, "turns_b": b, "bridge": z}
             for n, (x, a, y, b, z) in enumerate(BRIDGES)]
    return split_halves(cases, rng)


def main() -> None:
    for name, cases in [("eval1_fidelity", fidelity_cases()), ("eval2_macro", macro_cases()),
                        ("eval4_adversarial", adversarial_cases()), ("eval5_bridging", bridging_cases())]:
        (HERE / f"{name}.json").write_text(json.dumps({"cases": cases}, indent=1, ensure_ascii=False) + "\n")
        print(name, len(cases))


if __name__ == "__main__":
    main()
