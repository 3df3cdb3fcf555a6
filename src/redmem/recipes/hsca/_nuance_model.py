"""Layer 3, the model flags: metaphor, sarcasm, analogy and narrative thread, asked of a chat model.

:class:`NuanceModel` asks any OpenAI-compatible endpoint through the ``openai`` SDK, in JSON mode,
which of the four properties the text has, and returns them with the ``_model`` suffix
(``metaphor_model``). Without a model the flags are omitted (unknown, not false). A failed call
or a malformed answer also omits them and never raises: the deterministic layers still score the
turn, and ``failures`` counts what was lost.
"""

from __future__ import annotations

import json
from typing import Any

from ...embeddings._openai_compatible import openai_sdk
from ...store._errors import ConfigurationError
from ._interface import MODEL_FLAGS

__all__ = ["NuanceModel", "NUANCE_PROMPT", "parse_model_flags"]

#: How many characters of a turn are sent to the model.
MAX_MODEL_CHARS = 8000

NUANCE_PROMPT = (
    "You label one conversation turn. Answer only JSON: {\"flags\": [...]} listing which of these "
    "properties the text has: \"metaphor\" (figurative language whose literal meaning is not the "
    "operative one), \"sarcasm\" (surface meaning inverted), \"analogy\" (an explicit comparison "
    "structure, A is like B), \"narrative_thread\" (continues or opens a story). An empty list when "
    "none applies."
)


def parse_model_flags(answer: str | None) -> list[str]:
    """The ``_model`` flags named by an answer ``{"flags": [...]}``, in vocabulary order; [] if malformed."""
    try:
        named = json.loads(answer or "")["flags"]
    except (ValueError, TypeError, KeyError):
        return []
    if not isinstance(named, list):
        return []
    return [flag.value for name, flag in MODEL_FLAGS.items() if name in named]


class NuanceModel:
    """The four model-dependent flags of a text, from a chat model (one request per turn).

    Args:
        client: an ``openai.OpenAI`` client; None: one built from ``OPENAI_API_KEY`` /
            ``OPENAI_BASE_URL``.
        model: the chat model's name.
    """

    def __init__(self, client: Any = None, model: str = "gpt-4.1-nano") -> None:
        self._openai = openai_sdk("NuanceModel")
        try:
            self.client = client if client is not None else self._openai.OpenAI()
        except self._openai.OpenAIError as exc:
            raise ConfigurationError(f"NuanceModel: {exc}") from exc
        self.model = model
        self.failures = 0

    def flags(self, text: str) -> list[str]:
        """The ``_model`` flags the model gives ``text``; [] (omitted) when the call fails."""
        messages = [{"role": "system", "content": NUANCE_PROMPT}, {"role": "user", "content": text[:MAX_MODEL_CHARS]}]
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, response_format={"type": "json_object"}, temperature=0,
            )
            return parse_model_flags(response.choices[0].message.content)
        except (self._openai.OpenAIError, AttributeError, IndexError):
            self.failures += 1
            return []
