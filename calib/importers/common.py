"""Small conversions and texts the importers (and the synthetic writers that mirror them) share."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import orjson

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
    # orjson writes what `json.dumps(value, ensure_ascii=False, separators=(",", ":"))` writes, but for
    # the spelling of some floats (1e-7 for 1e-07), ten times faster; it refuses integers beyond
    # 64 bits and keys that are not strings, which the standard library still writes.
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
