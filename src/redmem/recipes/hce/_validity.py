"""Which interactions an HCE read sees: the current ones, or those valid at an ``as_of`` time.

Interactions are lifecycle records (:class:`~redmem.recipes.hce._models.HCEInteraction`): one
superseded (:func:`redmem.lifecycle.supersede`) has a closed window. The keyword list and the
graph check the window inside their scripts (:attr:`Visibility.where`); the tree's members and
anything else loaded are checked when loaded (:meth:`Visibility.__call__`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ...lifecycle import ALL_TIMES, AS_OF, visible_at
from ...model._filters import Where, compile_superseded, compile_where
from ...store._validation import epoch_of
from ._models import HCEInteraction

__all__ = ["Visibility"]


class Visibility:
    """The validity rule of one read: ``as_of`` None (current interactions), epoch seconds or a
    datetime (those valid then), or ``"all"``; a bad ``as_of`` is refused here, before any request.
    ``superseded``: the filter of the interactions it leaves out as superseded (None for ``"all"``)."""

    def __init__(self, as_of: Any = None) -> None:
        read = None if as_of is None else {AS_OF: as_of}
        self.where: Where | None = compile_where(HCEInteraction, read)
        self.superseded: Where | None = compile_superseded(HCEInteraction, read)
        self.at: float | None = None
        self.every = as_of == ALL_TIMES
        if as_of is not None and not self.every:
            self.at = epoch_of(as_of) if isinstance(as_of, datetime) else float(as_of)

    def __call__(self, valid_from: float, valid_to: float | None) -> bool:
        """Whether an interaction of that window is seen."""
        if self.every:
            return True
        if self.at is None:
            return valid_to is None
        return visible_at(valid_from, valid_to, self.at)

    def closed(self, valid_to: float | None) -> bool:
        """Whether an interaction whose window ends at ``valid_to`` is left out as superseded: its
        window closed (by ``as_of`` for a read at a time; never for ``"all"``)."""
        if self.every or valid_to is None:
            return False
        return self.at is None or valid_to <= self.at
