"""Small conversions and texts the importers (and the synthetic writers that mirror them) share."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

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
    """Compact JSON with non-ASCII kept, as the part texts of tool arguments use it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
