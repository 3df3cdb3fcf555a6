"""What served downstream queries: one record per answered query, per agent, in Redis.

HSCA's self-tuning signal: a query asked of an agent's session and the chunks of its snapshots
that actually served the answer (the ones the agent used, not merely the ones shown), and the
chunks shown. The chunks shown that did not serve are the negative signal; a chunk never shown
is none (issue 30, eval 3: counting unshown turns that would have served as failures taught the
tuner the opposite of what served). A record without the chunks shown counts every other chunk
of the session as a negative. Records are ordered by
the time they were made, so the tuner reads an agent's history oldest first.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...store._errors import ValidationError
from ._models import ServedRecord

__all__ = ["ServedQuery", "ServedRecord", "record_served", "served_history"]


@dataclass(frozen=True)
class ServedQuery:
    """A query of the history: the session it was asked of, the chunk ids that served it and
    those shown (empty: not recorded)."""

    session_id: str
    query: str
    served: tuple[str, ...]
    shown: tuple[str, ...] = ()


def record_served(agent_id: str, session_id: str, query: str, served_chunk_ids: Sequence[str],
                  at: float | None = None, shown_chunk_ids: Sequence[str] = ()) -> None:
    """Record that ``served_chunk_ids`` (chunks of the session's snapshots) served ``query``, of
    the ``shown_chunk_ids`` shown for it (none given: not recorded); a served chunk was shown."""
    served = list(dict.fromkeys(served_chunk_ids))
    if not served or not all(isinstance(c, str) and c for c in served):
        raise ValidationError("record_served() needs the ids of the chunks that served, as non-empty str")
    shown = list(dict.fromkeys(shown_chunk_ids))
    if not all(isinstance(c, str) and c for c in shown):
        raise ValidationError("record_served() needs the ids of the chunks shown as non-empty str")
    if shown and not set(served) <= set(shown):
        raise ValidationError("record_served(): every served chunk must be among the chunks shown")
    ServedRecord.create(agent_id=agent_id, session_id=session_id, question=query, served=served, shown=shown,
                        at=time.time() if at is None else at)


def served_history(agent_id: str, limit: int | None = None) -> list[ServedQuery]:
    """The agent's recorded queries, oldest first (the first ``limit`` only, when given)."""
    query = ServedRecord.query.filter(agent_id=agent_id).order_by("at")
    records = query.limit(limit).all() if limit is not None else query.all()
    return [ServedQuery(r.session_id, r.question, tuple(r.served), tuple(r.shown or ())) for r in records]
