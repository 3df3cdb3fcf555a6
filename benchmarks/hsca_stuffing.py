"""Layer 1 against keyword stuffing: genuine paragraphs and stuffed texts of the same length, ranked.

Genuine texts: the prose paragraphs of Python's own reference documentation as installed with
the interpreter (``pydoc_data.topics``, PSF licence): paragraphs of 50-200 words with three
sentences or more and no code lines, line breaks unwrapped. Read at run time, never copied.

Stuffed texts follow this written specification. For each genuine paragraph, in turn, one of
four forms is generated (seeded) with the paragraph's own keywords (its most frequent
non-stop words, :data:`KEYWORDS` of them) and about its word count:

- ``repeated_phrases``: short promotional phrases around a keyword pair, repeated adjacently
  ("Best {a} {b}. Cheap {a} {b} online. Buy {a} {b} today. ...");
- ``keyword_list``: the keywords and their pairs as comma-separated lists, a line at a time;
- ``spun_sentences``: one sentence about the keywords respun by swapping words from small
  synonym sets, the variants in a row;
- ``scattered``: the spec's form, one-off unrelated clauses each dropping one keyword.

The measure is the ranking AUC: ``P(layer1(genuine) > layer1(stuffed))`` over every pair, ties
counting half (target >= 0.9), overall and per form.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from redmem.text._analyzer import default_analyzer
from redmem.text._stopwords import ENGLISH_STOPWORDS

#: The keywords a stuffed text is built from.
KEYWORDS = 6
_PROMO = ("Best {a} {b}.", "Cheap {a} {b} online.", "Buy {a} {b} today.", "Top {a} {b} deals.",
          "{a} {b} for everyone.", "Get {a} {b} now.")
_SPIN = (("great", "excellent", "superb", "fantastic"), ("guide", "tutorial", "handbook", "manual"),
         ("easy", "simple", "effortless", "painless"), ("learn", "master", "understand", "discover"),
         ("today", "now", "right away", "this week"))
_CLAUSES = ("my cousin mentioned {k} at the bus stop", "the bakery ran out of bread before {k}",
            "a red kite drifted over the field near {k}", "the weather turned cold after {k}",
            "someone left an umbrella by {k}", "the radio played an old song about {k}",
            "our neighbour painted the fence while thinking of {k}", "the train was late because of {k}")


def genuine_paragraphs() -> list[str]:
    """The prose paragraphs of ``pydoc_data.topics`` (module docstring), unwrapped, in a fixed order."""
    from pydoc_data.topics import topics
    found = []
    for name in sorted(topics):
        for block in re.split(r"\n\s*\n", topics[name]):
            words = block.split()
            if 50 <= len(words) <= 200 and block.count(". ") >= 2 and not re.search(r"^\s{2,}|>>>|\*\*\*", block, re.M):
                found.append(" ".join(words))
    return list(dict.fromkeys(found))


def keywords(text: str) -> list[str]:
    """The text's most frequent words that are not stop words (ties: first seen), :data:`KEYWORDS` of them."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]{3,}", text) if w.lower() not in ENGLISH_STOPWORDS]
    return [w for w, _ in Counter(words).most_common(KEYWORDS)]


def _fill(make: Callable[[int], str], length: int) -> str:
    parts: list[str] = []
    while sum(len(p.split()) for p in parts) < length:
        parts.append(make(len(parts)))
    return " ".join(parts)


def repeated_phrases(keys: Sequence[str], length: int, rng: random.Random) -> str:
    a, b = keys[0], keys[1]
    return _fill(lambda i: _PROMO[i % len(_PROMO)].format(a=a, b=b).capitalize(), length)


def keyword_list(keys: Sequence[str], length: int, rng: random.Random) -> str:
    pairs = [f"{a} {b}" for a in keys for b in keys if a != b]
    return _fill(lambda i: ", ".join(rng.sample(list(keys) + pairs, 4)) + "\n", length).replace("\n ", "\n").strip()


def spun_sentences(keys: Sequence[str], length: int, rng: random.Random) -> str:
    def spin(_: int) -> str:
        great, guide, easy, learn, when = (rng.choice(s) for s in _SPIN)
        return f"This {great} {guide} to {keys[0]} and {keys[1]} is the {easy} way to {learn} {keys[2]} {when}."
    return _fill(spin, length)


def scattered(keys: Sequence[str], length: int, rng: random.Random) -> str:
    return _fill(lambda i: rng.choice(_CLAUSES).format(k=keys[i % len(keys)]).capitalize() + ".", length)


FORMS: dict[str, Callable[[Sequence[str], int, random.Random], str]] = {
    "repeated_phrases": repeated_phrases, "keyword_list": keyword_list,
    "spun_sentences": spun_sentences, "scattered": scattered,
}


def stuffed_texts(genuine: Sequence[str], seed: int) -> list[tuple[str, str]]:
    """One stuffed text per genuine paragraph, the forms in turn: ``(form, text)``."""
    rng = random.Random(seed)
    names = list(FORMS)
    return [(names[i % len(names)], FORMS[names[i % len(names)]](keywords(text), len(text.split()), rng))
            for i, text in enumerate(genuine)]


def auc(high: Sequence[float], low: Sequence[float]) -> float:
    """P(h > l) over every pair, ties counting half."""
    return sum(1.0 if h > lo else 0.5 if h == lo else 0.0 for h in high for lo in low) / (len(high) * len(low))


def stuffing_report(score: Callable[[str], float], seed: int, limit: int | None = None) -> dict[str, Any]:
    """Layer 1 (``score``) on the genuine and stuffed sets: sizes, AUC overall and per form, medians."""
    genuine = genuine_paragraphs()[:limit]
    stuffed = stuffed_texts(genuine, seed)
    real = [score(t) for t in genuine]
    fake = [(form, score(t)) for form, t in stuffed]
    per_form = {form: round(auc(real, [s for f, s in fake if f == form]), 4) for form in FORMS}
    ordered = sorted(real)
    return {"genuine": len(real), "stuffed": len(fake), "auc": round(auc(real, [s for _, s in fake]), 4),
            "auc_by_form": per_form, "genuine_median": round(ordered[len(ordered) // 2], 4),
            "stuffed_median_by_form": {form: round(sorted(s for f, s in fake if f == form)[
                sum(f == form for f, _ in fake) // 2], 4) for form in FORMS},
            "examples": {form: next(t for f, t in stuffed if f == form)[:200] for form in FORMS},
            "tokens": len(default_analyzer().tokens(genuine[0]))}
