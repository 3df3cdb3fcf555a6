"""FocusBuffer: the short-term memory of a session, a capped Redis list of its latest entries.

``add`` is one script call (``focus_push.lua``: RPUSH then LTRIM to ``max_size``, atomic), so
concurrent writers never lose an entry that the cap keeps, and a resent call is applied once.
Entries are JSON ``{"role", "content", "timestamp", "interaction_id"}``, oldest first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ...fields.search_protocol import run_search
from ...store._connection import server_errors
from ...store._errors import ValidationError
from ...store._scripts import ScriptCall
from ...store._validation import non_negative_int, positive_int, utf8_text
from ._keys import HCEKeyKind
from ._models import HCEInteraction

__all__ = ["FocusBuffer", "FocusEntry", "FocusRead", "ROLES"]

ROLES = ("user", "assistant", "system")


@dataclass(frozen=True)
class FocusEntry:
    """One message of the buffer; ``interaction_id`` names the stored interaction it belongs to."""

    role: str
    content: str
    timestamp: float
    interaction_id: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValidationError(f"a focus entry's role is one of {list(ROLES)}, not {self.role!r}")
        if not isinstance(self.content, str):
            raise ValidationError(f"a focus entry's content is a str, not {type(self.content).__name__}")
        utf8_text("content", self.content)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: bytes | str) -> FocusEntry:
        data = json.loads(raw)
        return cls(data["role"], data["content"], float(data["timestamp"]), data.get("interaction_id"))

    @property
    def line(self) -> str:
        """``role: content``, as the buffer is shown to the model."""
        return f"{self.role}: {self.content}"


@dataclass(frozen=True)
class FocusRead:
    """The search reading the buffer's newest entries, to share a round trip with other searches."""

    call: ScriptCall

    def calls(self) -> list[ScriptCall]:
        return [self.call]

    def finish(self, replies: list[Any]) -> list[FocusEntry]:
        return [FocusEntry.from_json(raw) for raw in replies[0]]


class FocusBuffer:
    """The latest ``max_size`` entries of a session, oldest first (default 10).

    Args:
        max_size: how many entries the buffer keeps; adding beyond drops the oldest.
        session_id: the session whose buffer this is (its keys share the session's hash tag).
    """

    def __init__(self, max_size: int = 10, *, session_id: str = "default") -> None:
        self.max_size = positive_int("max_size", max_size)
        self.session_id = session_id
        self.key = HCEInteraction._meta.keyspace((HCEInteraction.session_id.validate(session_id),)).key(
            HCEKeyKind.FOCUS_BUFFER)

    @property
    def client(self) -> Any:
        return HCEInteraction._meta.client

    def push_call(self, entries: Iterable[FocusEntry]) -> ScriptCall:
        """The script call appending ``entries`` (for a caller's own transaction)."""
        return ScriptCall("focus_push", [self.key], [self.max_size, *(e.to_json() for e in entries)])

    def add(self, role: str, content: str, *, interaction_id: str | None = None) -> FocusEntry:
        """Append one entry (one round trip); the oldest drops off when the buffer is full."""
        entry = FocusEntry(role, content, time.time(), interaction_id)
        with server_errors(self.client):
            self.push_call([entry]).run(self.client)
        return entry

    def reader(self, n: int | None = None) -> FocusRead:
        """The search of :meth:`get_recent` (``n`` None or positive)."""
        return FocusRead(ScriptCall("focus_read", [self.key], [0 if n is None else positive_int("n", n)]))

    def get_recent(self, n: int | None = None) -> list[FocusEntry]:
        """The last ``n`` entries (all when None), oldest first."""
        if n is not None and non_negative_int("n", n) == 0:
            return []
        return run_search(self.client, self.reader(n))

    def clear(self) -> None:
        """Empty the buffer."""
        with server_errors(self.client):
            self.client.delete(self.key)

    @property
    def size(self) -> int:
        """How many entries the buffer holds."""
        with server_errors(self.client):
            return int(self.client.llen(self.key))

    def to_text(self, entries: Iterable[FocusEntry] | None = None) -> str:
        """The entries (default: the whole buffer) as ``role: content`` lines, oldest first."""
        return "\n".join(entry.line for entry in (self.get_recent() if entries is None else entries))
