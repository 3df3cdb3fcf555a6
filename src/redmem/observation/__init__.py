"""The observation layer: mixins that watch records (reads, writes, predictions) and the protocol
that feeds a context's outcomes back into the memory primitives.

Sits between ``redmem.fields`` and ``redmem.context``: it uses the store, the model and the
fields; nothing below it imports it.
"""

from .access import AccessTrackerMixin
from .consumer import StreamConsumer
from .events import EventStreamMixin, StreamEvent
from .outcome_map import OutcomeError
from .predictions import (
    OUTCOME_ERRORS,
    PredictionLedgerMixin,
    ResolvedPrediction,
    prediction_error,
    summarize_errors,
)
from .proposals import RecallProposal
from .protocol import OUTCOME_EFFECTS, ObservationProtocol, OutcomeEffects
from .write_filter import WriteFilterMixin, top_by_priority

__all__ = [
    "AccessTrackerMixin",
    "WriteFilterMixin",
    "top_by_priority",
    "EventStreamMixin",
    "StreamEvent",
    "StreamConsumer",
    "PredictionLedgerMixin",
    "ResolvedPrediction",
    "prediction_error",
    "summarize_errors",
    "OUTCOME_ERRORS",
    "RecallProposal",
    "ObservationProtocol",
    "OutcomeEffects",
    "OUTCOME_EFFECTS",
    "OutcomeError",
]
