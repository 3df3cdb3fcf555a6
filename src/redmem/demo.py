"""``redmem demo``: store a few agent memories and query them back by agent and score range."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta, timezone

from rich.console import Console
from rich.table import Table

from .model import AutoKeyField, DatetimeField, FloatField, KeyField, Model, SortedField, StringField, TagField
from .store.connection import configure, connect, server_address

__all__ = ["DemoMemory", "SAMPLE_MEMORIES", "run"]


class DemoMemory(Model):
    """A memory as an agent might keep it: text, a topic, an importance and when it was learnt."""

    memory_id = AutoKeyField()
    agent_id = KeyField()
    topic = StringField()
    content = StringField()
    importance = SortedField(partition_by="agent_id")
    learned_at = SortedField(type=datetime, partition_by="agent_id")
    tags = TagField()
    confidence = FloatField(default=0.5)
    created = DatetimeField(auto_now_add=True)


#: (agent, topic, importance, days ago, tags, text) — written for this demo.
SAMPLE_MEMORIES = [
    ("ops-bot", "deployment", 0.9, 1, ["infra", "release"],
     "Production deploys go out on Tuesdays after the 10:00 stand-up; never on Fridays."),
    ("ops-bot", "incidents", 0.8, 3, ["infra", "oncall"],
     "The March cache outage was caused by an eviction storm when maxmemory was set too low."),
    ("ops-bot", "preferences", 0.4, 10, ["team"],
     "Priya prefers short status updates with the blocking issue first."),
    ("ops-bot", "deployment", 0.7, 20, ["release"],
     "Rollbacks use the previous container tag; the migration step must be reversible."),
    ("ops-bot", "tooling", 0.3, 40, ["infra"],
     "Grafana dashboards for the queue live under the 'platform' folder."),
    ("study-buddy", "schedule", 0.6, 2, ["calendar"],
     "Exam on linear algebra is on the 14th; eigenvalues are the weak spot."),
    ("study-buddy", "preferences", 0.5, 6, ["style"],
     "Likes worked examples before definitions, and dislikes long proofs."),
    ("study-buddy", "progress", 0.9, 1, ["calendar", "style"],
     "Finished chapter 4 exercises; asked for spaced-repetition cards on determinants."),
]


def load_samples(now: datetime) -> list[DemoMemory]:
    """Save the sample memories (one atomic write each) and return them."""
    return [
        DemoMemory.create(agent_id=agent, topic=topic, importance=importance,
                          learned_at=now - timedelta(days=days), tags=tags, content=text)
        for agent, topic, importance, days, tags, text in SAMPLE_MEMORIES
    ]


def _table(title: str, records: list[DemoMemory]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("agent", "topic", "importance", "learned", "tags"):
        table.add_column(column, no_wrap=True)
    table.add_column("memory", overflow="fold", min_width=30)
    for r in records:
        table.add_row(r.agent_id, r.topic, f"{r.importance:.1f}", r.learned_at.date().isoformat(),
                      ",".join(r.tags), r.content)
    return table


def run(console: Console, args: argparse.Namespace) -> None:
    """Save the samples under a fresh key prefix, show four queries over them, delete them."""
    client = connect(args.url)
    configure(key_prefix=f"demo{datetime.now(timezone.utc):%Y%m%d%H%M%S%f}")
    console.print(f"[bold]redmem demo[/bold] on {server_address(client)}")
    now = datetime.now(timezone.utc)
    saved = load_samples(now)
    console.print(f"saved {len(saved)} memories, e.g. {saved[0].db_key.redis_key}")
    ops = DemoMemory.query.filter(agent_id="ops-bot")
    console.print(_table("ops-bot: most important first", ops.order_by("-importance").all()))
    important = ops.filter(importance__gte=0.7).order_by("-importance")
    console.print(_table("ops-bot: importance >= 0.7", important.all()))
    recent = DemoMemory.query.filter(agent_id="study-buddy", learned_at__gte=now - timedelta(days=3))
    console.print(_table("study-buddy: learned in the last 3 days", recent.order_by("-learned_at").all()))
    console.print(_table("every agent: tagged 'calendar' or 'release'",
                         DemoMemory.query.filter(tags__any=["calendar", "release"]).all()))
    removed = sum(record.delete() for record in saved)
    console.print(f"deleted the {removed} demo memories again (record and index entries)")
