"""``OpenAIJudge``: an optional chat model deciding what the rules left open (opt-in, one call per question)."""

from __future__ import annotations

from typing import Any

from ..embeddings._openai_compatible import openai_sdk
from ..store._errors import ConfigurationError

__all__ = ["OpenAIJudge", "JUDGE_PROMPT", "VERDICTS"]

VERDICTS = ("duplicate", "supersedes", "unrelated")
JUDGE_PROMPT = (
    "You compare two statements an assistant remembers about a user. Answer with one word: "
    "'duplicate' when NEW says the same fact as OLD, 'supersedes' when NEW updates OLD's fact "
    "(the same attribute of the same subject now has another value), else 'unrelated'."
)


class OpenAIJudge:
    """A judge (``Lifecycle(judge=...)``) asking a chat model through the ``openai`` SDK.

    ``client``: an ``openai.OpenAI`` client (None: one from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``).
    An answer other than the three verdicts counts as "unrelated" (nothing is merged or closed).
    """

    def __init__(self, client: Any = None, model: str = "gpt-4.1-nano") -> None:
        sdk = openai_sdk("OpenAIJudge")
        try:
            self.client = client if client is not None else sdk.OpenAI()
        except sdk.OpenAIError as exc:
            raise ConfigurationError(f"OpenAIJudge: {exc}") from exc
        self.model = model

    def __call__(self, new_text: str, old_text: str) -> str:
        messages = [{"role": "system", "content": JUDGE_PROMPT},
                    {"role": "user", "content": f"OLD: {old_text}\nNEW: {new_text}"}]
        response = self.client.chat.completions.create(model=self.model, messages=messages, temperature=0)
        answer = (response.choices[0].message.content or "").strip().strip(".'\"").casefold()
        return answer if answer in VERDICTS else "unrelated"
