"""wrap_chat: a decorator that gives a chat function the pipeline's memory.

The wrapped function is called with its input enriched and its reply stored:

- ``chat(prompt: str)`` (first argument, or ``prompt=``): the prompt becomes
  ``pipeline.build_prompt(prompt)`` (context block, focus buffer, query);
- ``chat(messages=[...])`` (OpenAI-style, first argument or ``messages=``): the caller's messages
  already carry the conversation, so only the context block is added, as a system message just
  before the last user message (none when the block is empty); the focus buffer's interactions
  are left out of it.

The reply may be a ``str``, an OpenAI ``ChatCompletion`` or its dict; its text and the query are
stored with ``pipeline.update``. An ``async def`` function gets an async wrapper. When the chat
function raises, nothing is stored and the exception reaches the caller; a reply whose text
cannot be found is returned unstored, with a RuntimeWarning.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ...store._errors import ArgumentTypeError, ValidationError

__all__ = ["wrap_chat", "reply_text", "ChatPipeline"]


class _Retrieved(Protocol):
    @property
    def block(self) -> str: ...


class ChatPipeline(Protocol):
    """What a wrapped chat function needs of its pipeline (an ``HCEPipeline``, which calls
    :func:`wrap_chat`, so this module does not import it)."""

    def build_prompt(self, user_query: str) -> str: ...

    def retrieve_candidates(self, query: str, *, for_prompt: bool = False) -> _Retrieved: ...

    def update(self, user_query: str, ai_response: str) -> str: ...


@dataclass(frozen=True)
class _Call:
    """The enriched call: its arguments and the query to store."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    query: str


def wrap_chat(pipeline: ChatPipeline, chat_func: Callable[..., Any]) -> Callable[..., Any]:
    """``chat_func`` wrapped (see the module docs)."""
    if not callable(chat_func):
        raise ArgumentTypeError(f"wrap_chat needs a callable, not {type(chat_func).__name__}")
    if inspect.iscoroutinefunction(chat_func):
        @functools.wraps(chat_func)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            call = _enriched(pipeline, args, kwargs)
            reply = await chat_func(*call.args, **call.kwargs)
            _store(pipeline, call.query, reply)
            return reply
        return async_wrapper

    @functools.wraps(chat_func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        call = _enriched(pipeline, args, kwargs)
        reply = chat_func(*call.args, **call.kwargs)
        _store(pipeline, call.query, reply)
        return reply
    return wrapper


def _enriched(pipeline: ChatPipeline, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Call:
    name = next((n for n in ("prompt", "messages") if n in kwargs), None)
    if name is None and not args:
        raise ArgumentTypeError("the wrapped chat function needs a prompt (str) or messages (list) first")
    value = args[0] if name is None else kwargs[name]
    enriched: str | list[Any]
    if isinstance(value, list):
        query, enriched = _with_context(pipeline, value)
    elif isinstance(value, str):
        query, enriched = value, pipeline.build_prompt(value)
    else:
        raise ArgumentTypeError(f"a prompt is a str and messages a list, not {type(value).__name__}")
    if name is None:
        return _Call((enriched, *args[1:]), kwargs, query)
    return _Call(args, {**kwargs, name: enriched}, query)


def _with_context(pipeline: ChatPipeline, messages: list[Any]) -> tuple[str, list[Any]]:
    """The last user message's text, and the messages with the context block before it."""
    users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
    if not users or not isinstance(messages[users[-1]].get("content"), str):
        raise ValidationError("messages need a last user message whose content is a str")
    last = users[-1]
    query = messages[last]["content"]
    block = pipeline.retrieve_candidates(query, for_prompt=True).block
    if not block:
        return query, list(messages)
    return query, [*messages[:last], {"role": "system", "content": f"[Context Block]\n{block}"}, *messages[last:]]


def reply_text(reply: Any) -> str | None:
    """The text of a chat reply: a str, an OpenAI ChatCompletion or its dict (None: not found)."""
    if isinstance(reply, str):
        return reply
    try:
        choice = reply["choices"][0] if isinstance(reply, dict) else reply.choices[0]
        message = choice["message"] if isinstance(choice, dict) else choice.message
        content = message["content"] if isinstance(message, dict) else message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    return "" if content is None else content if isinstance(content, str) else None


def _store(pipeline: ChatPipeline, query: str, reply: Any) -> None:
    text = reply_text(reply)
    if text is None:
        warnings.warn(f"the chat reply {type(reply).__name__} has no text to store; this turn is not remembered",
                      RuntimeWarning, stacklevel=3)
        return
    pipeline.update(query, text)
