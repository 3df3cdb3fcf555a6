"""HSCA evaluation cases from real text, generated from the written specification.

    .venv/bin/python benchmarks/hsca_real_cases.py    # rewrites data/hsca/real_cases.json (pointers
                                                      # only) and prints the hashes for FROZEN

The specification is ``docs/recipes/hsca-eval-spec.md``: sources (Python's reference docs, the
licence texts of ``/usr/share/common-licenses``, LoCoMo's dev conversations), labels from the
source, the cases of evals 1, 2 and 4. The case file holds pointers (source, document,
sentence or block numbers), never text: :func:`materialise` resolves them at run time, and
``hsca_evals.py`` checks the hash of what they resolve to.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import hsca_chat
from redmem.recipes.hsca._domains import DOMAIN_KEYWORDS, EVERYDAY_DOMAINS
from redmem.text._analyzer import default_analyzer
from redmem.text._stopwords import ENGLISH_STOPWORDS

HERE = Path(__file__).resolve().parent
CASES = HERE / "data" / "hsca" / "real_cases.json"
LICENCES = Path("/usr/share/common-licenses")
LICENCE_FILES = ("Apache-2.0", "Artistic", "GFDL-1.3", "GPL-2", "GPL-3", "LGPL-2.1", "MPL-2.0")
SEED = 30
#: The label of each source (chat: any everyday topic, see :func:`label_matches`).
LABELS = {"technical": "technical_prose", "legal": "legal", "chat": "chat"}
#: The one-off clauses of eval 4's shallow document: the generator's only own words.
CLAUSES = (
    "a stranger brought up {k} at the bus stop", "the bakery ran out of rolls before {k}",
    "a red kite drifted over the meadow near {k}", "the weather turned chilly after {k}",
    "someone left an umbrella beside {k}", "a parrot squawked {k} twice",
    "the old man mended the fence while humming {k}", "the tram was late because of {k}",
    "a postcard in the attic said {k}", "the farmer named his tractor {k}",
    "a fortune cookie promised {k}", "the ferry announcement was about {k}",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


# ----------------------------------------------------------------------------- the sources
def sentences_of(block: str) -> list[str]:
    """The block's sentences of 6-60 words (the specification's sentence)."""
    return [s for s in _SENTENCE.split(block) if 6 <= len(s.split()) <= 60 and s[-1] in ".!?"]


def _technical_blocks() -> dict[str, list[str]]:
    from pydoc_data.topics import topics
    found: dict[str, list[str]] = {}
    for name in sorted(topics):
        raw = re.split(r"\n\s*\n", topics[name])
        kept = [" ".join(b.split()) for b in raw if 50 <= len(b.split()) <= 200 and b.count(". ") >= 2
                and not re.search(r"^\s{2,}|>>>|\*\*\*", b, re.M)]
        if kept:
            found[name] = kept
    return found


def _legal_blocks() -> dict[str, list[str]]:
    found = {}
    for name in LICENCE_FILES:
        raw = re.split(r"\n\s*\n", (LICENCES / name).read_text(encoding="utf-8", errors="replace"))
        kept = [" ".join(b.split()) for b in raw if 40 <= len(b.split()) <= 250 and sentences_of(" ".join(b.split()))]
        if kept:
            found[name] = kept
    return found


def _chat_sessions() -> dict[str, list[str]]:
    found = {}
    for n, session in enumerate(hsca_chat.sessions(hsca_chat.LOCOMO)):
        found[f"session-{n}"] = [t for t in session if len(t.split()) >= 6]
    return found


@cache
def documents(source: str) -> dict[str, list[str]]:
    """Per document of ``source``, its blocks (chat: its turns of 6 words or more)."""
    return {"technical": _technical_blocks, "legal": _legal_blocks, "chat": _chat_sessions}[source]()


@cache
def sentences(source: str, doc: str) -> list[str]:
    """The document's sentences, numbered over its blocks in order (chat: its turns)."""
    blocks = documents(source)[doc]
    return list(blocks) if source == "chat" else [s for b in blocks for s in sentences_of(b)]


def resolve(ref: Sequence[Any]) -> str:
    """The text of one pointer: ``["s", source, doc, i]`` sentence i; ``["b", source, doc, i]``
    block i; ``["r", source, doc, i, j]`` turns i..j-1 of a chat session, joined."""
    kind, source, doc, *at = ref
    if kind == "s":
        return sentences(source, doc)[at[0]]
    if kind == "b":
        return documents(source)[doc][at[0]]
    return " ".join(sentences(source, doc)[at[0] : at[1]])


def turn_text(refs: Sequence[Sequence[Any]]) -> str:
    return " ".join(resolve(r) for r in refs)


# ----------------------------------------------------------------------------- building blocks
def _pick_doc(rng: random.Random, source: str, need: int, exclude: frozenset[str] = frozenset()) -> str:
    docs = [d for d in sorted(documents(source)) if len(sentences(source, d)) >= need and d not in exclude]
    return rng.choice(docs)


def _run(rng: random.Random, source: str, length: int, exclude: frozenset[str] = frozenset()) -> tuple[str, int]:
    """A document of ``source`` (none of ``exclude``) and a start with ``length`` consecutive sentences."""
    doc = _pick_doc(rng, source, length, exclude)
    return doc, rng.randrange(len(sentences(source, doc)) - length + 1)


def _passage(rng: random.Random, source: str) -> list[Any]:
    """A passage pointer: a block of 50-200 words, or chat turns from a seeded start until 50 words."""
    if source != "chat":
        doc = rng.choice(sorted(documents(source)))
        blocks = [i for i, b in enumerate(documents(source)[doc]) if 50 <= len(b.split()) <= 200]
        if not blocks:
            return _passage(rng, source)
        return ["b", source, doc, rng.choice(blocks)]
    doc = _pick_doc(rng, source, 12)
    turns = sentences(source, doc)
    start = rng.randrange(len(turns) - 11)
    stop = start + 1
    while sum(len(t.split()) for t in turns[start:stop]) < 50 and stop < len(turns):
        stop += 1
    return ["r", source, doc, start, stop]


def split_halves(cases: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    order = list(range(len(cases)))
    rng.shuffle(order)
    tuning = set(order[: len(cases) // 2])
    for i, case in enumerate(cases):
        case["split"] = "tuning" if i in tuning else "held_out"
    return cases


def fidelity_cases(rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for central in LABELS:
        for aside in LABELS:
            if aside == central:
                continue
            for _ in range(6):
                doc, start = _run(rng, central, 4)
                turns: list[list[Any]] = [[["s", central, doc, start + k]] for k in range(4)]
                at = rng.randint(1, 3)
                turns.insert(at, [_passage(rng, aside)])
                cases.append({"id": f"real-fidelity-{len(cases):02d}", "central_topic": LABELS[central],
                              "aside_topic": LABELS[aside], "turns": turns,
                              "central_turns": [k for k in range(5) if k != at], "aside_turn": at})
    return split_halves(cases, rng)


def macro_cases(rng: random.Random) -> list[dict[str, Any]]:
    """Eval 2's cases: each cross turn's sentences come from *another* A and *another* B document
    than the A and B blocks' own (the specification; before issue 30's round k a quarter of them
    came from the blocks' own documents)."""
    cases = []
    for a, b in (("technical", "legal"), ("legal", "technical")):
        for _ in range(15):
            doc_a, start_a = _run(rng, a, 5)
            doc_b, start_b = _run(rng, b, 3)
            cross = []
            for _ in range(2):
                other_a, at_a = _run(rng, a, 1, frozenset({doc_a}))
                other_b, at_b = _run(rng, b, 1, frozenset({doc_b}))
                cross.append([["s", a, other_a, at_a], ["s", b, other_b, at_b]])
            turns = ([[["s", a, doc_a, start_a + k]] for k in range(3)] + [[["s", b, doc_b, start_b + k]] for k in range(3)]
                     + cross + [[["s", a, doc_a, start_a + k]] for k in (3, 4)])
            labels = [LABELS[a]] * 3 + [LABELS[b]] * 3 + ["cross_domain"] * 2 + [LABELS[a]] * 2
            cases.append({"id": f"real-macro-{len(cases):02d}", "turns": turns, "turn_labels": labels,
                          "transitions": [LABELS[a], LABELS[b], "cross_domain", LABELS[a]]})
    return split_halves(cases, rng)


def query_words(text: str, n: int = 4) -> list[str]:
    """The text's ``n`` most frequent words of 4 letters or more that are not stop words (ties: first seen)."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", text) if w.lower() not in ENGLISH_STOPWORDS]
    return [w for w, _ in Counter(words).most_common(n)]


def shallow_document(words: Sequence[str], order: Sequence[int], length: int) -> str:
    """Eval 4's shallow document: clauses in ``order`` (cycling), clause ``i`` holding query word
    ``i % 4``, until it has ``length`` words (the target passage's)."""
    parts: list[str] = []
    while sum(len(p.split()) for p in parts) < length:
        i = len(parts)
        parts.append(CLAUSES[order[i % len(order)]].format(k=words[i % len(words)]).capitalize() + ".")
    return " ".join(parts)


def adversarial_cases(rng: random.Random) -> list[dict[str, Any]]:
    cases = []
    for source in LABELS:
        for _ in range(12):
            target = _passage(rng, source)
            others = [_passage(rng, rng.choice(list(LABELS))) for _ in range(7)]
            documents_ = [{"id": "target", "ref": target}] + [{"id": f"other-{k}", "ref": r} for k, r in enumerate(others)]
            documents_.insert(rng.randint(0, 8), {"id": "adversarial", "clauses": rng.sample(range(len(CLAUSES)), 8)})
            cases.append({"id": f"real-adversarial-{len(cases):02d}", "target_source": source, "documents": documents_})
    return split_halves(cases, rng)


# ----------------------------------------------------------------------------- resolving
def label_matches(found: str, truth: str) -> bool:
    """Whether a found label is the truth's: a chat truth matches any everyday topic."""
    return found == truth or (truth == "chat" and found in {d.value for d in EVERYDAY_DOMAINS})


def materialise(name: str, case: dict[str, Any]) -> dict[str, Any]:
    """A pointer case as the evals read cases: the turns' (or documents') text, and eval 4's query."""
    out = {k: v for k, v in case.items() if k not in ("turns", "documents")}
    if "turns" in case:
        out["turns"] = [turn_text(refs) for refs in case["turns"]]
    if name == "eval1_fidelity":
        out["query"] = query_words(" ".join(out["turns"][i] for i in case["central_turns"]), 3)
    if name == "eval4_adversarial":
        texts = {d["id"]: resolve(d["ref"]) for d in case["documents"] if "ref" in d}
        query = query_words(texts["target"])
        out["query"] = " ".join(query)
        length = len(texts["target"].split())
        out["documents"] = [{"id": d["id"], "text": texts[d["id"]] if "ref" in d
                             else shallow_document(query, d["clauses"], length)} for d in case["documents"]]
    return out


def load(name: str) -> list[dict[str, Any]]:
    """The materialised real cases of ``name`` (an eval, e.g. ``eval1_fidelity``)."""
    return [materialise(name, c) for c in json.loads(CASES.read_text())[name]]


def text_hash(cases: list[dict[str, Any]]) -> str:
    """sha256 of the materialised cases (their JSON, keys sorted)."""
    return hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()


def check_vocabulary_apart() -> None:
    """Refuse when a word of :data:`CLAUSES` is, as a stem, in one of the engine's keyword lists."""
    analyse = default_analyzer()
    clause_stems = set(analyse.tokens(" ".join(c.replace("{k}", "") for c in CLAUSES)))
    keyword_stems = {s for words in DOMAIN_KEYWORDS.values() for s in analyse.tokens(words)}
    shared = clause_stems & keyword_stems
    if shared:
        raise SystemExit(f"the clauses share stems with the engine's keyword lists: {sorted(shared)}")


def build() -> dict[str, list[dict[str, Any]]]:
    check_vocabulary_apart()
    rng = random.Random(SEED)
    return {"eval1_fidelity": fidelity_cases(rng), "eval2_macro": macro_cases(rng),
            "eval4_adversarial": adversarial_cases(rng)}


if __name__ == "__main__":
    CASES.write_text(json.dumps(build(), indent=1) + "\n")
    print("file", hashlib.sha256(CASES.read_bytes()).hexdigest())
    for eval_name in ("eval1_fidelity", "eval2_macro", "eval4_adversarial"):
        print(eval_name, text_hash(load(eval_name)))
