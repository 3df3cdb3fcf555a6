"""HSCA on ordinary chat: how often layer 1 says nothing and how often a snapshot says only "chat".

Every session of LoCoMo's dev conversations (read at run time from ``../shared/data``, never
copied) is ingested turn by turn into its own engine (the buffer left over taken as a last
snapshot). Reported: the share of turns with ``layer1_score == 0``, the share of snapshots
whose heaviest domain is ``conversational`` or ``unclassified``, the tag counts (issue 30.4's
targets: <= 20 % and <= 40 %), and the bridge snapshots (those holding a chunk an earlier snapshot
of the session holds: :mod:`redmem.recipes.hsca._bridging`) per beat.

``python benchmarks/hsca_chat.py --limit 10`` prints the figures over the first 10 sessions.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from redmem.recipes.hsca import HSCAEngine

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"
CHAT_DOMAINS = {"conversational", "unclassified"}


def sessions(path: Path) -> list[list[str]]:
    """The turns of every session of every LoCoMo conversation, in order."""
    found = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        for key in sorted((k for k in conversation if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
            found.append([turn["text"] for turn in conversation[key]])
    return found


def chat_signal(path: Path = LOCOMO, limit: int | None = None) -> dict[str, Any]:
    """The chat figures of the module docstring over the first ``limit`` sessions (all by default)."""
    if not path.exists():
        return {"skipped": f"LoCoMo dev data not found at {path}"}
    zero = turns = dominated = snapshots = bridges = 0
    tags: Counter[str] = Counter()
    for session in sessions(path)[:limit]:
        engine = HSCAEngine()
        for text in session:
            chunk = engine.ingest_turn(text)
            turns += 1
            zero += chunk.layer1_score == 0
            tags.update(chunk.domain_tags)
        if engine.buffer:
            engine.take_snapshot()
        seen: set[str] = set()
        for snapshot in engine.get_macro_context():
            snapshots += 1
            ids = {c.chunk_id for c in snapshot.chunks}
            bridges += bool(ids & seen)
            seen |= ids
            summary = snapshot.domain_summary
            dominated += bool(summary) and max(summary, key=lambda d: (summary[d], d)) in CHAT_DOMAINS
    return {"turns": turns, "layer1_zero_share": round(zero / turns, 4), "snapshots": snapshots,
            "chat_dominated_share": round(dominated / snapshots, 4), "bridge_snapshots": bridges,
            "bridge_snapshots_per_beat": round(bridges / (snapshots - bridges), 4),
            "tag_shares": {t: round(n / turns, 4) for t, n in tags.most_common()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N sessions (all by default)")
    print(json.dumps(chat_signal(limit=parser.parse_args(argv).limit), indent=2))


if __name__ == "__main__":
    main()
