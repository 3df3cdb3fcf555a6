"""An OpenAI-compatible chat model for the demo and ``redmem chat``, configured from the environment.

``OPENAI_BASE_URL`` (any OpenAI-compatible endpoint) and/or ``OPENAI_API_KEY`` turn it on;
``OPENAI_MODEL`` names the model (default ``gpt-4.1-nano``). With a base URL and no key, a
placeholder key is sent (local servers ignore it). Calls go through the ``openai`` SDK (the
``openai`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..store._errors import ConfigurationError

__all__ = ["ChatModel", "from_environment", "messages_for", "DEFAULT_MODEL", "SYSTEM_PROMPT"]

DEFAULT_MODEL = "gpt-4.1-nano"
#: Seconds one request may take, and retries after a failed one.
TIMEOUT = 60.0
RETRIES = 1
SYSTEM_PROMPT = (
    "You are a helpful personal assistant with a long-term memory of earlier conversations "
    "with the user. Use the memories below when they help; newer memories win over older "
    "ones that contradict them. Answer briefly.\n\nMemories:\n{context}"
)


@dataclass(frozen=True)
class ChatModel:
    """An SDK client, the model it asks, and the SDK's base error class."""

    client: Any
    model: str
    error: type[Exception]

    def describe(self) -> str:
        return f"{self.model} at {self.client.base_url}"

    def answer(self, messages: Sequence[Mapping[str, str]]) -> str:
        """The model's reply to ``messages``; ConfigurationError naming the endpoint when the call fails."""
        try:
            response = self.client.chat.completions.create(model=self.model, messages=list(messages))
        except self.error as exc:
            raise ConfigurationError(f"the chat model {self.describe()} failed: {exc}") from exc
        return response.choices[0].message.content or ""


def from_environment(environ: Mapping[str, str] = os.environ) -> ChatModel | None:
    """The chat model the environment configures, or None when neither variable is set."""
    base_url, key = environ.get("OPENAI_BASE_URL"), environ.get("OPENAI_API_KEY")
    if not base_url and not key:
        return None
    try:
        import openai  # optional dependency, needed only when a model is configured
    except ImportError as exc:
        raise ConfigurationError("calling a model needs the openai package: pip install 'redmem[openai]'") from exc
    client = openai.OpenAI(base_url=base_url or None, api_key=key or "unused", timeout=TIMEOUT, max_retries=RETRIES)
    return ChatModel(client, environ.get("OPENAI_MODEL") or DEFAULT_MODEL, openai.OpenAIError)


def messages_for(context: str, question: str, history: Sequence[Mapping[str, str]] = ()) -> list[dict[str, str]]:
    """System prompt with the memories, the recent exchanges, then the user's question."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(context=context)},
        *(dict(message) for message in history),
        {"role": "user", "content": question},
    ]
