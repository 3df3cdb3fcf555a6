"""Topic summaries of the semantic tree: a few sentences per topic, at most ``max_tokens`` tokens.

The default is extractive and LLM-free (:func:`extractive_summary`): a topic's members are ranked
by the cosine of their vector with the topic's centroid (the mean of its members' unit vectors),
and their sentences are taken round by round, each member's first sentence (closest member
first), then each member's second, ..., a sentence kept only when the summary with it still
counts at most ``max_tokens`` (a sentence already taken is not repeated). A summariser callable
``(texts closest first, max_tokens) -> str`` replaces that rule (an LLM call, for instance); what it
returns is cut to ``max_tokens`` (:func:`~redmem.context._oversize.truncate_text`).

Summaries are stored in one hash beside the tree's keys (:attr:`HCEKeyKind.TOPIC_SUMMARIES`):
topic id -> :class:`TopicSummary` JSON, with the member count summarised, so
:func:`summarise_topics` rewrites only the topics that gained members since.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...context._oversize import truncate_text
from ...fields.search_protocol import run_searches
from ...store._connection import server_errors
from ...store._validation import positive_int
from ._keys import HCEKeyKind
from ._models import HCEInteraction
from ._tree import SemanticTree

__all__ = [
    "TopicSummary",
    "Summariser",
    "extractive_summary",
    "summarise_topics",
    "read_summaries",
    "SUMMARY_TOKENS",
    "SUMMARY_MEMBERS",
]

#: The default token bound of a topic summary.
SUMMARY_TOKENS = 80
#: How many of a topic's members closest to its centroid a summary draws on.
SUMMARY_MEMBERS = 8
#: A summariser: the member texts, closest to the centroid first, and the token bound -> a summary.
Summariser = Callable[[list[str], int], str]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_ROLE = re.compile(r"^(user|assistant):\s*")


@dataclass(frozen=True)
class TopicSummary:
    """A topic's summary: its text, how many members the topic had when it was written, its token count."""

    text: str
    members: int
    tokens: int

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | bytes) -> TopicSummary:
        data = json.loads(raw)
        return cls(str(data["text"]), int(data["members"]), int(data["tokens"]))


def sentences(text: str) -> list[str]:
    """A member's sentences: each line split after ``.``, ``!`` or ``?``, the role prefix dropped."""
    out = []
    for line in text.splitlines():
        out += [s.strip() for s in _SENTENCE_END.split(_ROLE.sub("", line.strip())) if s.strip()]
    return out


def closest_first(vectors: np.ndarray) -> list[int]:
    """Positions of ``vectors`` by cosine with their centroid (the mean of their unit vectors),
    closest first (ties by position)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    units = vectors / np.where(norms == 0, 1, norms)
    cosines = units @ units.mean(axis=0)
    return sorted(range(len(units)), key=lambda n: (-float(cosines[n]), n))


def extractive_summary(texts: Sequence[str], count: Callable[[str], int], max_tokens: int) -> str:
    """The summary of ``texts`` (closest to the centroid first): their sentences round by round,
    each kept when the summary so far with it counts at most ``max_tokens`` (see the module docs)."""
    per_member = [sentences(t) for t in texts]
    chosen: list[str] = []
    for depth in range(max((len(s) for s in per_member), default=0)):
        for member in per_member:
            if (
                depth < len(member)
                and member[depth] not in chosen
                and count(" ".join([*chosen, member[depth]])) <= max_tokens
            ):
                chosen.append(member[depth])
    return " ".join(chosen)


def read_summaries(tree: SemanticTree, topic_ids: Sequence[str] | None = None) -> dict[str, TopicSummary]:
    """The stored summaries of ``topic_ids`` (None: every topic summarised), one round trip."""
    client, key = HCEInteraction._meta.client, tree.space.key(HCEKeyKind.TOPIC_SUMMARIES)
    with server_errors(client):
        if topic_ids is None:
            raw = client.hgetall(key)
            return {k.decode(): TopicSummary.from_json(v) for k, v in raw.items()}
        wanted = list(topic_ids)
        values = client.hmget(key, wanted) if wanted else []
    return {t: TopicSummary.from_json(v) for t, v in zip(wanted, values) if v is not None}


def summarise_topics(
    tree: SemanticTree,
    count: Callable[[str], int],
    max_tokens: int = SUMMARY_TOKENS,
    summariser: Summariser | None = None,
) -> dict[str, TopicSummary]:
    """Write the summary of every topic that gained members since its summary (or has none);
    returns those written. Round trips: the member index and vectors with the stored summaries,
    the texts of the members drawn on (current ones only), then the writes."""
    max_tokens = positive_int("max_tokens", max_tokens)
    client = HCEInteraction._meta.client
    leaves = tree.leaf_sync()
    _, index = run_searches(client, [leaves, tree.member_reader()])
    stored = read_summaries(tree)
    stale = {t: m for t, m in index.by_topic.items() if t not in stored or stored[t].members != len(m)}
    drawn: dict[str, list[str]] = {}
    for topic, members in stale.items():
        units = leaves.matrix.unit_vectors(members)
        ids = list(units)
        order = closest_first(np.stack([units[i] for i in ids])) if ids else []
        drawn[topic] = [ids[n] for n in order[:SUMMARY_MEMBERS]]
    texts = _current_texts(tree, [m for members in drawn.values() for m in members])
    written = {}
    for topic, members in drawn.items():
        shown = [texts[m] for m in members if m in texts]
        if not shown:
            continue
        text = (
            extractive_summary(shown, count, max_tokens)
            if summariser is None
            else truncate_text(summariser(shown, max_tokens), max_tokens, count)
        )
        written[topic] = TopicSummary(text, len(index.by_topic[topic]), count(text))
    if written:
        with server_errors(client):
            client.hset(
                tree.space.key(HCEKeyKind.TOPIC_SUMMARIES), mapping={t: s.to_json() for t, s in written.items()}
            )
    return written


def _current_texts(tree: SemanticTree, ids: list[str]) -> dict[str, str]:
    """The text of each current (not superseded) interaction of ``ids``: one pipelined round trip."""
    client = HCEInteraction._meta.client
    fields = [HCEInteraction.text.name, HCEInteraction.valid_to.name]
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        for rid in ids:
            pipe.hmget(tree.space.record(rid), *fields)
        replies: list[Any] = pipe.execute()
    return {
        rid: HCEInteraction.text.decode(text)
        for rid, (text, end) in zip(ids, replies)
        if text is not None and (end is None or HCEInteraction.valid_to.decode(end) is None)
    }
