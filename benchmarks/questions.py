"""The natural-language latency workload: LoCoMo dialog sentences as memories, LoCoMo questions as queries.

- :func:`dialog_corpus` — N memories of 1-3 sentences with a speaker prefix (``"Caroline: ..."``).
  Turns are split into sentences (after ``.``, ``!`` or ``?``). The first memories group each
  speaker's consecutive sentences in file order (group sizes 1-3 drawn from a seeded generator),
  about 5,000 memories from the 10,207 sentences of ``locomo-dev.json``. When N exceeds that,
  every further memory recombines sentences: 1-3 sentences drawn uniformly (seeded) from the
  whole pool, prefixed with the speaker of the first one, a text already made being drawn again
  (so the recombined memories are distinct). Same path, N and seed: same corpus.
- :func:`locomo_questions` — the questions of categories 1-4 that have 6 to 15 words, in file
  order (794 in ``locomo-dev.json``).

The data set is read from the path given and never copied (CC BY-NC 4.0).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from locomo import load

__all__ = ["dialog_corpus", "locomo_questions", "dialog_sentences"]

SEED = 20250618
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def dialog_sentences(path: Path) -> list[tuple[str, str]]:
    """(speaker, sentence) of every dialog turn, in file order."""
    out = []
    for conversation in load(path):
        for turn in conversation["turns"]:
            out += [(turn["speaker"], s) for s in _SENTENCE_END.split(turn["text"].strip()) if s]
    return out


def dialog_corpus(path: Path, n: int, seed: int = SEED) -> list[str]:
    """``n`` memory texts ``"<speaker>: <1-3 sentences>"``: file-order groups, then seeded recombinations."""
    sentences, rng, texts = dialog_sentences(path), random.Random(seed), []
    i = 0
    while i < len(sentences) and len(texts) < n:
        speaker, size = sentences[i][0], rng.randint(1, 3)
        group = [sentences[i][1]]
        while len(group) < size and i + len(group) < len(sentences) and sentences[i + len(group)][0] == speaker:
            group.append(sentences[i + len(group)][1])
        texts.append(f"{speaker}: {' '.join(group)}")
        i += len(group)
    seen = set(texts)
    while len(texts) < n:
        picked = [sentences[rng.randrange(len(sentences))] for _ in range(rng.randint(1, 3))]
        text = f"{picked[0][0]}: {' '.join(s for _, s in picked)}"
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def locomo_questions(path: Path, shortest: int = 6, longest: int = 15) -> list[str]:
    """The category 1-4 questions of ``shortest`` to ``longest`` words, in file order."""
    return [q["question"] for conversation in load(path) for q in conversation["questions"]
            if shortest <= len(q["question"].split()) <= longest]
