"""The base every recipe's result shares: its text, its token count, its items with their scores
and explanations, and the outcome path.

:class:`ContextResult` is what :class:`~redmem.recipes.context_assembler.AssemblyResult` (the
assembler, and HSCA's region assembly), :class:`~redmem.recipes.frames.FrameResult` (frames) and
:class:`~redmem.recipes.hce.RetrievedContext` (HCE) have in common:

- ``text``: what goes into the prompt; ``token_count``: its tokens by the recipe's counter;
- ``explain()``: an :class:`~redmem.context._explain.Explanation` built from what the recipe
  computed on its way (no I/O), and ``items``: its items (record id, rank, score, the arms or
  terms that scored it with their contributions, boosts);
- ``report(outcome)``: what the agent did with the context, fed to
  :meth:`~redmem.observation._protocol.ObservationProtocol.on_context_used`.

Each recipe keeps its own names beside these (``formatted``, ``records``, ``blocks``,
``block``, ``selected``, ...).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ._explain import Explanation, ItemExplanation

__all__ = ["ContextResult", "Trail", "Explained"]


class Trail(Protocol):
    """What a recipe kept of one retrieval's stages, enough to explain it with no I/O."""

    def explain(self) -> Explanation:
        """The explanation of that retrieval."""


@dataclass(frozen=True)
class Explained:
    """A trail whose explanation was computed before (a cached result keeps it)."""

    explanation: Explanation

    def explain(self) -> Explanation:
        return self.explanation


class ContextResult(ABC):
    """A recipe's context for one turn (see the module docstring)."""

    if TYPE_CHECKING:  # each result supplies these as a field or a property
        @property
        def text(self) -> str:
            """The context as the prompt receives it."""

        @property
        def token_count(self) -> int:
            """The tokens of :attr:`text` by the recipe's counter."""

    @abstractmethod
    def explain(self) -> Explanation:
        """Why each item is in the context and why the other candidates are not (no round trip)."""

    @abstractmethod
    def report(self, outcome: str | Mapping[Any, str], *, now: float | None = None) -> dict[str, str]:
        """Report what the agent did with this context (``"acted"`` for every item, or
        ``{item: outcome}``); returns ``{redis key: outcome}``."""

    @property
    def items(self) -> tuple[ItemExplanation, ...]:
        """The items in context order, each with its score and explanation (:meth:`explain`)."""
        return self.explain().items
