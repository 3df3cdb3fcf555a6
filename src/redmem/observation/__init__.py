"""The observation layer: mixins that watch records (reads, writes, predictions) and the protocol
that feeds a context's outcomes back into the memory primitives.

Sits between ``redmem.fields`` and ``redmem.context``: it uses the store, the model and the
fields; nothing below it imports it.
"""

from .._public import publish
from ._access import AccessTrackerMixin
from ._consumer import StreamConsumer
from ._events import EventStreamMixin, StreamEvent
from ._outcome_map import OutcomeError
from ._predictions import (
    OUTCOME_ERRORS,
    PredictionLedgerMixin,
    ResolvedPrediction,
    prediction_error,
    summarize_errors,
)
from ._proposals import RecallProposal
from ._protocol import OUTCOME_EFFECTS, ObservationProtocol, OutcomeEffects
from ._write_filter import WriteFilterMixin, top_by_priority

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

publish(__name__, __all__)
