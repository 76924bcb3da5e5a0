"""Timestamps of transcript lines (ISO-8601, `Z`) as naive UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

_CACHE: dict[str, datetime | None] = {}


def timestamp(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as naive UTC (None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    if value in _CACHE:
        return _CACHE[value]
    try:
        parsed: datetime | None = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    if len(_CACHE) >= 1 << 16:
        _CACHE.clear()
    _CACHE[value] = parsed
    return parsed
