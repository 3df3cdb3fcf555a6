"""Post-effects of one assembled context, queued in one pipeline (one round trip).

- every selected record that tracks access gets one staged read (:meth:`ObservationProtocol.queue_read`);
- every selected push record gets a pending RecallProposal (:meth:`ObservationProtocol.queue_surfaced`);
- every pull candidate that was not selected gets a mild contradiction signal on each of its
  ConfidenceFields (competitive suppression).
"""

from __future__ import annotations

from typing import Any

from ..fields._confidence import ConfidenceField
from ..model._options import shared_client
from ..observation._proposals import RecallProposal
from ..observation._protocol import ObservationProtocol
from ..store._connection import server_errors
from ..store._outcome import write_pipeline
from ..store._validation import timestamp

__all__ = ["apply_post_effects", "SURFACING_REASON"]

SURFACING_REASON = "cyclic surfacing"


def apply_post_effects(
    selected: list[Any], surfaced: list[Any], suppressed: list[Any], suppression_signal: float,
    now: float | None = None,
) -> None:
    """Queue the three effects above for these records and send them in one round trip."""
    at = timestamp("now", now)
    written = [record._meta for record in (*selected, *suppressed)] + ([RecallProposal._meta] if surfaced else [])
    client = shared_client(written)
    with server_errors(client), write_pipeline(client) as pipe:
        ObservationProtocol.queue_read(pipe, selected, at)
        ObservationProtocol.queue_surfaced(pipe, surfaced, SURFACING_REASON, now=at)
        for record in suppressed:
            for field in record._meta.fields_of(ConfidenceField):
                ConfidenceField.update_confidence(record, field.name, suppression_signal, pipeline=pipe)
        if len(pipe):
            pipe.execute()
