"""Post-effects of one assembled context, queued in one pipeline (one round trip).

- every selected record that tracks access gets one staged read (``on_read``);
- every selected push record gets a pending RecallProposal (``on_surfaced``);
- every pull candidate that was not selected gets a mild contradiction signal on each of its
  ConfidenceFields (competitive suppression).
"""

from __future__ import annotations

from typing import Any, cast

from ..fields.confidence import ConfidenceField
from ..model.dbkey import DbKey
from ..model.options import shared_client
from ..observation.access import AccessTrackerMixin
from ..observation.proposals import RecallProposal
from ..store.connection import server_errors
from ..store.validation import timestamp

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
    with server_errors(client), client.pipeline(transaction=False) as pipe:
        readers = [r for r in selected if isinstance(r, AccessTrackerMixin)]
        if readers:
            read_keys = [r._saved_key for r in readers]  # records that were read: each has its saved key
            type(readers[0]).queue_stage_reads(pipe, cast(list[DbKey], read_keys), at)
        for record in surfaced:
            RecallProposal.queue_surface(pipe, record, SURFACING_REASON, now=at)
        for record in suppressed:
            for field in record._meta.fields_of(ConfidenceField):
                ConfidenceField.update_confidence(record, field.name, suppression_signal, pipeline=pipe)
        if len(pipe):
            pipe.execute()
