"""Memory extractors: from a text (an assistant's reply, a user's message) to facts worth keeping.

An extractor is any ``callable(text: str) -> list[ExtractedMemory | str]``; a plain str gets its
entities from :func:`find_entities`. Two are provided:

- :class:`HeuristicExtractor` (the default, no model call): splits the text into sentences
  (code blocks dropped, list markers and Markdown emphasis stripped, a break after ``.``, ``!``
  or ``?`` followed by a capital, digit or quote, and at every line) and keeps a sentence when it

  1. is not a question (ends with ``?``);
  2. does not open with a greeting, thanks, an offer or other pleasantry (:data:`SKIPPED_OPENERS`:
     "hi", "thanks", "sure", "let me", "I can", "feel free", "I hope"...);
  3. has 3 to 60 words;
  4. has a subject and a verb: its first word is a pronoun, determiner or possessive
     (:data:`SUBJECT_WORDS`) or is capitalised (a name) or a number, and a later word is a form
     of be/have/do, a modal, a common verb (:data:`COMMON_VERBS`), or ends in ``-s`` / ``-ed``
     (third person or past tense).

  Entities are runs of capitalised words ("GitHub Actions", "Paris", "CI"); a sentence's first
  word counts only when it is not a pronoun, determiner or other function word.
- :class:`LLMExtractor`: asks a chat model through the ``openai`` SDK (any OpenAI-compatible
  endpoint) for ``{"memories": [{"content": ..., "entities": [...]}]}`` in JSON mode.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...embeddings._openai_compatible import openai_sdk
from ...store._errors import ConfigurationError, ExtractionError
from ...text._sentences import MAX_ENTITIES, find_entities, is_fact, split_sentences

__all__ = [
    "ExtractedMemory", "ExtractionError", "HeuristicExtractor", "LLMExtractor", "find_entities",
    "split_sentences", "is_fact", "parse_extraction", "EXTRACTION_PROMPT",
]

@dataclass(frozen=True)
class ExtractedMemory:
    """One fact to remember and the named entities it mentions."""

    content: str
    entities: tuple[str, ...] = ()


class HeuristicExtractor:
    """Declarative sentences with a subject/verb shape, and their capitalised entities."""

    def __call__(self, text: str) -> list[ExtractedMemory]:
        return [ExtractedMemory(s, find_entities(s)) for s in split_sentences(text) if is_fact(s)]


# -- the model -------------------------------------------------------------------------------------
EXTRACTION_PROMPT = (
    "You extract long-term memories from a conversation turn. Return a JSON object "
    '{"memories": [{"content": "...", "entities": ["..."]}]}. Each content is one short, '
    "self-contained factual statement worth remembering later (preferences, decisions, facts about "
    "people, projects, places, schedules); entities are the proper names it mentions. Leave out "
    'greetings, questions, offers of help and small talk. Return {"memories": []} when nothing '
    "is worth keeping."
)


def parse_extraction(answer: str | None) -> list[ExtractedMemory]:
    """Memories from the model's JSON answer (items may be strings); ExtractionError if malformed."""
    try:
        items = json.loads(answer or "")["memories"]
    except (ValueError, TypeError, KeyError) as exc:
        raise ExtractionError(f"the model's answer is not {{\"memories\": [...]}}: {answer!r:.200}") from exc
    if not isinstance(items, list):
        raise ExtractionError(f"\"memories\" must be a list, got {items!r:.200}")
    memories = []
    for item in items:
        if isinstance(item, str):
            item = {"content": item, "entities": list(find_entities(item))}
        content, entities = (item.get("content"), item.get("entities") or []) if isinstance(item, dict) else (None, [])
        if not isinstance(content, str) or not isinstance(entities, list):
            raise ExtractionError(f"a memory is {{\"content\": str, \"entities\": [str]}}, got {item!r:.200}")
        if content.strip():
            names = tuple(e.strip() for e in entities if isinstance(e, str) and e.strip())
            memories.append(ExtractedMemory(" ".join(content.split()), names[:MAX_ENTITIES]))
    return memories


class LLMExtractor:
    """Memories extracted by a chat model in JSON mode, through the ``openai`` SDK.

    Args:
        client: an ``openai.OpenAI`` client; None: one built from ``OPENAI_API_KEY`` /
            ``OPENAI_BASE_URL`` (any OpenAI-compatible endpoint).
        model: the chat model's name.
        prompt: the system prompt (default :data:`EXTRACTION_PROMPT`).

    One request per call; service errors and malformed answers raise :class:`ExtractionError`.
    """

    def __init__(self, client: Any = None, model: str = "gpt-4.1-nano", *, prompt: str = EXTRACTION_PROMPT) -> None:
        self._openai = openai_sdk("LLMExtractor")
        try:
            self.client = client if client is not None else self._openai.OpenAI()
        except self._openai.OpenAIError as exc:
            raise ConfigurationError(f"LLMExtractor: {exc}") from exc
        self.model, self.prompt = model, prompt

    def __call__(self, text: str) -> list[ExtractedMemory]:
        messages = [{"role": "system", "content": self.prompt}, {"role": "user", "content": text}]
        try:
            response = self.client.chat.completions.create(
                model=self.model, messages=messages, response_format={"type": "json_object"}, temperature=0,
            )
        except self._openai.OpenAIError as exc:
            raise ExtractionError(f"the extraction model failed: {exc}") from exc
        return parse_extraction(response.choices[0].message.content)
