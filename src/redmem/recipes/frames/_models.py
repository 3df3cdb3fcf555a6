"""The frames recipe's memory block: a redmem model partitioned by agent, and its decay tiers.

A block's decay tier sets the lambda of its recency ``exp(-lambda * active hours since reinforced)``:

| tier | lambda per active hour | blocks |
|---|---|---|
| permanent | 1e-5 | tagged ``self/constitutional`` |
| durable | 1e-3 | tagged ``self/value``, ``self/constraint`` or ``self/goal`` |
| ephemeral | 5e-2 | category ``observation`` |
| standard | 1e-2 | every other block |

The slowest tier among a block's tags wins (then its category).
"""

from __future__ import annotations

from collections.abc import Iterable

from ...context._neighbours import SearchText, TurnContextAnalyzer
from ...fields._bm25 import BM25Field
from ...fields._confidence import ConfidenceField
from ...fields._cooccurrence import CoOccurrenceField
from ...fields._embedding import EmbeddingField
from ...lifecycle import Lifecycle, LifecycleMixin
from ...model._base import Model
from ...model._fields import FloatField, IntField, ListField, StringField
from ...model._indexed import AutoKeyField, KeyField, SortedField
from ._prefix_index import PrefixIndexField
from ._wiring import DEGREE_CAP

__all__ = ["Block", "DECAY_TIERS", "TAG_TIERS", "CATEGORY_TIERS", "decay_tier", "STATUSES"]

#: lambda per active hour of each decay tier.
DECAY_TIERS = {"permanent": 1e-5, "durable": 1e-3, "standard": 1e-2, "ephemeral": 5e-2}
#: The tier a tag puts its block in.
TAG_TIERS = {"self/constitutional": "permanent", "self/value": "durable", "self/constraint": "durable",
             "self/goal": "durable"}
#: The tier a category puts its block in.
CATEGORY_TIERS = {"observation": "ephemeral"}
#: A block is retrieved while active; archived blocks stay stored but leave every frame.
STATUSES = ("active", "archived")


def decay_tier(tags: Iterable[str], category: str) -> str:
    """The slowest-decaying tier among the block's tags, else its category's, else ``standard``."""
    tiers = [TAG_TIERS[tag] for tag in tags if tag in TAG_TIERS]
    if tiers:
        return min(tiers, key=DECAY_TIERS.__getitem__)
    return CATEGORY_TIERS.get(category, "standard")


class Block(LifecycleMixin, Model):
    """One memory block of one agent.

    ``last_reinforced`` and ``reinforcement_count`` change when :meth:`FrameMemory.frame` returns
    the block; ``window`` holds ``last_reinforced`` while the block is active (the pre-filter's
    index: archived blocks leave it); ``tag_index`` / ``category_index`` answer tag patterns
    (``self/%``) by range; ``embedding`` (of ``content``) and ``keywords`` (BM25 of ``context``:
    the block's text between the blocks learned just before and after it in the same
    ``session``, :mod:`.neighbours`) rank blocks for a query; ``edges`` is the co-occurrence
    graph whose per-node weighted degree gives centrality; the fact lifecycle's fields
    (:class:`~redmem.lifecycle.LifecycleMixin`: ``valid_from``, ``valid_to``, ``superseded_by``
    ...) say which blocks a newer one superseded (:mod:`.wiring`). Counters and status are
    written by the recipe's scripts. No write re-saves a loaded block whole: ``learn()`` gives
    the earlier blocks of the session their new ``context`` entry alone (:mod:`.learning`), and
    a supersede writes the closed block's ``valid_to`` and the links alone, every other field
    as read under its WATCH (:func:`redmem.lifecycle.supersede`); so a reinforcement landing
    while either runs is never lost.
    """

    block_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField(null=False)
    category = StringField(default="knowledge")
    tags = ListField(default=list)
    status = StringField(default="active")
    decay_lambda = SortedField(float, default=DECAY_TIERS["standard"])
    reinforcement_count = SortedField(int, default=0)
    last_reinforced = FloatField(default=0.0)
    window = SortedField(float)
    tag_index = PrefixIndexField(source="tags")
    category_index = PrefixIndexField(source="category")
    confidence = ConfidenceField(partition_by="agent_id")
    session = StringField(default="")
    position = IntField()
    context = SearchText()
    embedding = EmbeddingField(source="content")
    keywords = BM25Field(source="context", analyzer=TurnContextAnalyzer())
    edges = CoOccurrenceField(max_edges=DEGREE_CAP)

    #: The fact lifecycle's fields and reads, without its merge-on-write: :meth:`FrameMemory.learn`
    #: keeps every block and flags duplicates and updates through its wiring (:mod:`.wiring`).
    lifecycle = Lifecycle(merge=False, supersede=False)

    class Meta:
        name = "FrameBlock"
