"""The node and edge types of the HCE entity graph.

Nodes are the session's interactions (records) and the entities they mention; an entity's type
is the extractor rule that first found it. Edge types follow from the nodes they join, so the
graph stores weights only: interaction - entity is ``MENTIONS``, entity - entity is ``CO_OCCURS``.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["NodeType", "EdgeType"]


class NodeType(StrEnum):
    """What a graph node is."""

    #: a stored user/assistant turn pair
    INTERACTION = "interaction"
    #: a run of capitalised words: "Acme", "Lisbon", "Ana Sousa"
    NAME = "name"
    #: a quoted phrase: "the blue notebook"
    PHRASE = "phrase"
    #: a number: "42", "3.5", "20%"
    NUMBER = "number"
    #: a date or time word: "2024-05-01", "March", "7 May 2023", "Friday"
    DATE = "date"


class EdgeType(StrEnum):
    """What an edge means (and the weight it is made with, see ``redmem.recipes.hce._graph``)."""

    #: interaction - entity: the interaction mentions the entity
    MENTIONS = "mentions"
    #: entity - entity: both were mentioned in one interaction (strengthened each time)
    CO_OCCURS = "co_occurs"
