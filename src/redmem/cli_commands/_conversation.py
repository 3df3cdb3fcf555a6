"""Conversation files: what ``redmem ingest`` reads and ``redmem demo`` replays.

A JSON conversation (the shape of ``redmem/samples/conversation.json``)::

    {"sessions": [{"session": "s1", "date": "2026-09-07T08:15:00+00:00",
                   "turns": [{"speaker": "Maya", "text": "...",
                              "importance": 1.0, "recurring": false}, ...]}, ...],
     "questions": [{"text": "...", "uses": ["..."], "contradicts": ["..."]}]}

``date`` is ISO 8601 (a date alone means noon UTC; no zone means UTC) or LoCoMo's
``1:56 pm on 8 May, 2023``; a turn's own ``said_at`` (same forms) overrides it, else the turns
of a session are one second apart from its date. ``importance`` (default 1.0) and
``recurring`` (default false) are optional; ``questions`` is read by the demo only. A plain
text file holds one memory per non-blank line, said now (or at ``redmem ingest --said-at``) by
nobody.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from ..store._errors import ValidationError
from ..store._validation import is_int_or_float

__all__ = ["ChatTurn", "Question", "Conversation", "parse_conversation", "read_conversation", "from_lines",
           "parse_when", "spoken_form", "read_text_file", "SPOKEN_FORMAT", "DEFAULT_ENCODING"]

#: How input files are read unless ``--encoding`` says otherwise: UTF-8, a byte-order mark dropped.
DEFAULT_ENCODING = "utf-8-sig"

#: The other form a time may be given in: LoCoMo's ``1:56 pm on 8 May, 2023`` (``strptime``).
SPOKEN_FORMAT = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True)
class ChatTurn:
    """One thing said: by whom, when, in which session, and how it should be remembered."""

    text: str
    at: datetime
    session: str | None = None
    speaker: str | None = None
    importance: float = 1.0
    recurring: bool = False


@dataclass(frozen=True)
class Question:
    """A demo question, with phrases marking the memories that answer it and those it contradicts."""

    text: str
    uses: tuple[str, ...] = ()
    contradicts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conversation:
    """The turns of a conversation in order, and its demo questions."""

    turns: list[ChatTurn]
    questions: list[Question] = field(default_factory=list)

    def shifted_to(self, last: datetime) -> Conversation:
        """The same conversation moved in time so that its last turn was said at ``last``."""
        if not self.turns:
            return self
        delta = last - max(turn.at for turn in self.turns)
        return replace(self, turns=[replace(turn, at=turn.at + delta) for turn in self.turns])


def parse_when(value: Any, where: str) -> datetime:
    """An aware datetime from ISO 8601 text (a date alone is noon UTC, no zone is UTC), or from
    LoCoMo's ``1:56 pm on 8 May, 2023`` (:data:`SPOKEN_FORMAT`, UTC); ValidationError otherwise."""
    if not isinstance(value, str):
        raise ValidationError(f"{where}: a time must be ISO 8601 text, got {value!r}")
    value = value.strip()
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        try:
            return datetime.strptime(value, SPOKEN_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            raise ValidationError(
                f"{where}: {value!r} is not a time: use ISO 8601 (2023-05-08, 2023-05-08T13:56:00+00:00) "
                "or '1:56 pm on 8 May, 2023'"
            ) from None
    if len(value) == 10:
        parsed = datetime.combine(date.fromisoformat(value), time(12))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def spoken_form(at: datetime) -> str:
    """``at`` in words, as LoCoMo dates its sessions: ``1:56 pm on 8 May, 2023`` (the header of a
    turn's search context, so a question naming the month or year finds it)."""
    hour = at.hour % 12 or 12
    return f"{hour}:{at.minute:02d} {'am' if at.hour < 12 else 'pm'} on {at.day} {at:%B}, {at.year}"


def _turn(raw: Any, session: dict[str, Any], where: str, at: datetime) -> ChatTurn:
    if not isinstance(raw, dict) or not isinstance(raw.get("text"), str) or not raw["text"].strip():
        raise ValidationError(f"{where}: a turn is an object with a non-empty \"text\"")
    importance = raw.get("importance", 1.0)
    if not is_int_or_float(importance) or importance < 0:
        raise ValidationError(f"{where}: importance must be a number >= 0, got {importance!r}")
    speaker = raw.get("speaker")
    return ChatTurn(
        text=raw["text"].strip(), at=at, session=str(session.get("session", "")) or None,
        speaker=None if speaker is None else str(speaker), importance=float(importance),
        recurring=bool(raw.get("recurring", False)),
    )


def parse_conversation(data: Any, now: datetime | None = None) -> Conversation:
    """A Conversation from parsed JSON (module docstring); ValidationError naming what is wrong.

    Turns of a session are one second apart from the session's date (``now`` when it has none),
    so their order survives in time-ordered indexes.
    """
    sessions = data.get("sessions") if isinstance(data, dict) else None
    if not isinstance(sessions, list):
        raise ValidationError("a conversation is a JSON object with a \"sessions\" list")
    start = now or datetime.now(UTC)
    turns = []
    for s, session in enumerate(sessions, 1):
        if not isinstance(session, dict) or not isinstance(session.get("turns"), list):
            raise ValidationError(f"session {s}: expected an object with a \"turns\" list")
        began = parse_when(session["date"], f"session {s}") if "date" in session else start
        for t, raw in enumerate(session["turns"]):
            where = f"session {s}, turn {t + 1}"
            said = raw.get("said_at") if isinstance(raw, dict) else None
            at = began + timedelta(seconds=t) if said is None else parse_when(said, where)
            turns.append(_turn(raw, session, where, at))
    questions = [
        Question(q["text"], tuple(q.get("uses", ())), tuple(q.get("contradicts", ())))
        for q in data.get("questions", ()) if isinstance(q, dict) and q.get("text")
    ]
    return Conversation(turns, questions)


def from_lines(text: str, now: datetime | None = None, session: str | None = None) -> Conversation:
    """One turn per non-blank line, all said at ``now`` (default: now), in ``session``, without speaker.

    Turns of one session are one second apart from ``now``, so their order survives in
    time-ordered indexes.
    """
    at = now or datetime.now(UTC)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    step = timedelta(seconds=1 if session else 0)
    return Conversation([ChatTurn(line, at + i * step, session) for i, line in enumerate(lines)])


def read_text_file(path: str | Path, encoding: str = DEFAULT_ENCODING) -> str:
    """The text of ``path`` in ``encoding`` (default UTF-8, a byte-order mark dropped); ValidationError
    for a file that cannot be read, is not in that encoding, or holds nothing but blanks."""
    path = Path(path)
    try:
        text = path.read_text(encoding=encoding)
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except LookupError:
        raise ValidationError(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not {exc.encoding} text (byte 0x{exc.object[exc.start]:02x} at offset "
                              f"{exc.start}): convert it to UTF-8, or name its encoding with --encoding") from None
    if not text.strip():
        raise ValidationError(f"{path} is empty: nothing to read")
    return text


def read_conversation(path: str | Path, now: datetime | None = None, session: str | None = None,
                      encoding: str = DEFAULT_ENCODING) -> Conversation:
    """A ``.json`` file as a JSON conversation, any other file as one memory per line.

    ``now``: when the turns without a date of their own were said (default: now); ``session``:
    the session of the lines of a text file; ``encoding``: the file's (:func:`read_text_file`).
    """
    path = Path(path)
    text = read_text_file(path, encoding)
    if path.suffix.lower() != ".json":
        return from_lines(text, now, session)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not valid JSON: {exc}") from None
    return parse_conversation(data, now)
