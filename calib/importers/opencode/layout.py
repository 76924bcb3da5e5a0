"""Laying a session's parts out in conversation order while its messages are read (both OpenCode versions).

A builder appends parts and `Mark`s (positions between parts: where a call's prompt starts and ends)
as it reads; `Layout.number` then gives every part its `seq` and every mark the seq of the part after
it, so a call's prompt bounds are known only once the whole session is laid out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from calib.core.records import Part, Session
from calib.importers.common import PRUNED_TEXT


class Mark:
    """A position between parts; its seq is fixed when the session is numbered."""

    __slots__ = ("seq",)

    def __init__(self) -> None:
        self.seq = 0


def as_int(value: object) -> int | None:
    """A JSON integer (a float with no fraction counts; booleans do not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_str(value: object) -> str | None:
    """A non-empty JSON string, else None."""
    return value if isinstance(value, str) and value else None


@dataclass
class Layout:
    """The parts of one session in order, with marks between them; `start` is where the history begins."""

    session: Session
    items: list[Part | Mark] = field(default_factory=list)
    start: Mark = field(default_factory=Mark)

    def __post_init__(self) -> None:
        self.items.append(self.start)

    @property
    def uid(self) -> str:
        return self.session.uid

    def mark(self) -> Mark:
        """A new mark after the parts added so far."""
        mark = Mark()
        self.items.append(mark)
        return mark

    def add(
        self,
        part_id: str,
        role: str,
        kind: str,
        text: str,
        message_id: str | None,
        *,
        tool_name: str | None = None,
        call_uid: str | None = None,
        ts: datetime | None = None,
        resent: bool = True,
        pruned_at: datetime | None = None,
    ) -> None:
        """Append a part (uid `<session uid>:<part_id>`); a pruned one is sent as `PRUNED_TEXT` from `pruned_at`."""
        self.items.append(
            Part(
                uid=f"{self.uid}:{part_id}",
                session_uid=self.uid,
                seq=0,
                role=role,
                kind=kind,
                text=text,
                message_id=message_id,
                tool_name=tool_name,
                call_uid=call_uid,
                ts=ts,
                resent=resent,
                pruned_at=pruned_at,
                pruned_text=PRUNED_TEXT if pruned_at is not None else None,
            )
        )

    def number(self) -> list[Part]:
        """The parts with their seqs, every mark set to the seq of the part that follows it."""
        parts: list[Part] = []
        for item in self.items:
            item.seq = len(parts)
            if isinstance(item, Part):
                parts.append(item)
        return parts
