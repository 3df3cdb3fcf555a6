"""Sample data bundled with redmem, written for this project (see ``conversation.json``).

``conversation.json`` is a five-session conversation between a user, Maya, and her assistant
over about six weeks: her work on a billing service, a trip to Lisbon, food (she turns
vegetarian halfway through), and her rescue greyhound Biscuit. Its ``questions`` drive
``redmem demo``. The shape is the one ``redmem ingest`` reads (docs/cli.md).
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

__all__ = ["SAMPLE_CONVERSATION", "load_sample"]

#: File name of the bundled conversation inside this package.
SAMPLE_CONVERSATION = "conversation.json"


def load_sample() -> dict[str, Any]:
    """The bundled conversation, parsed."""
    sample: dict[str, Any] = json.loads(files(__name__).joinpath(SAMPLE_CONVERSATION).read_text(encoding="utf-8"))
    return sample
