"""Small conversions and texts the importers (and the synthetic writers that mirror them) share."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from calib.core.errors import InputWarning
from calib.core.jsontext import json_text

# What OpenCode and Dexto both send in place of a pruned tool output (the same text in both agents).
PRUNED_TEXT = "[Old tool result content cleared]"

_EPOCH = datetime(1970, 1, 1)


def ms_to_datetime(value: object) -> datetime | None:
    """Epoch milliseconds as a naive UTC datetime (None when not a number or out of range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return _EPOCH + timedelta(milliseconds=value)
    except (OverflowError, ValueError):
        return None


def compact_json(value: object) -> str:
    """Compact JSON with non-ASCII kept, as the part texts of tool arguments use it (at any depth)."""
    return json_text(value)


def unfinished_line(path: Path, lineno: int, agent: str) -> InputWarning:
    """The warning for a log's last line that has no newline and does not parse: `agent` is likely
    still writing it, so it is left out, and a later read adds it once it is complete."""
    return InputWarning(
        f"the last line is unfinished ({agent} may still be writing it); left out",
        path=str(path),
        line=lineno,
        hint="ingest again once it is complete to add it",
    )


def damaged_line(
    path: Path, lineno: int, what: str, rest: str = "the rest of the session was imported"
) -> InputWarning:
    """The warning for a damaged line (`what` says how: "not a JSON object") left out of a log whose
    other lines were imported (`rest` says what they hold)."""
    return InputWarning(f"this line is {what}; left out, {rest}", path=str(path), line=lineno)


# Each timestamp string read, parsed (and None, the usual value that is not a string).
_TS_CACHE: dict[Any, datetime | None] = {None: None}


def timestamp(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as naive UTC (None when absent or unreadable); each string is parsed once."""
    # Logs repeat a timestamp on every part or line of a message: one lookup answers all but the first.
    try:
        return _TS_CACHE[value]
    except (KeyError, TypeError):  # not seen yet, or not hashable (then not a string either)
        pass
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed: datetime | None = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    if len(_TS_CACHE) >= 1 << 16:
        _TS_CACHE.clear()
        _TS_CACHE[None] = None
    _TS_CACHE[value] = parsed
    return parsed
