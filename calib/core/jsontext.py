"""Compact JSON text of a parsed value at any depth: tool arguments as part text, and the raw usage and
metadata the store keeps.

orjson writes nearly every value, ten times faster than the standard library, but refuses values nested
more than 255 deep, integers beyond 64 bits and keys that are not strings; the standard library's writer
recurses, and fails near 1,000 deep, where orjson still parses a log line (up to 1,024). `json_text`
writes what orjson refuses without recursion, so a log's value never fails the session it is in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

_dumps = orjson.dumps


class _Raw(str):
    """Text written as it is (punctuation, or a value already written), not as a JSON string."""

    __slots__ = ()


_OPEN_LIST, _CLOSE_LIST, _OPEN_DICT, _CLOSE_DICT = _Raw("["), _Raw("]"), _Raw("{"), _Raw("}")
_COMMA, _COLON = _Raw(","), _Raw(":")


def json_text(value: object) -> str:
    """`value` as compact JSON, non-ASCII kept (what orjson writes, or the same for values it refuses)."""
    try:
        return _dumps(value).decode()
    except TypeError:
        return "".join(_pieces(value))


def json_column(values: Sequence[object]) -> list[str | None]:
    """`json_text` of each of `values` (None stays None): a store column of them, written by orjson at its
    own speed, and only when it refuses a value, one value at a time by `json_text`."""
    try:
        return [None if v is None else _dumps(v).decode() for v in values]
    except TypeError:
        return [None if v is None else json_text(v) for v in values]


def _pieces(value: object) -> list[str]:
    """The JSON text of `value` in pieces, walking it with a stack of what is still to write."""
    out: list[str] = []
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if type(item) is _Raw:
            out.append(item)
        elif isinstance(item, dict):
            todo.append(_CLOSE_DICT)
            entries = list(item.items())
            for index in range(len(entries) - 1, -1, -1):
                key, child = entries[index]
                todo += (child, _COLON, _Raw(_key(key)))
                if index:
                    todo.append(_COMMA)
            out.append(_OPEN_DICT)
        elif isinstance(item, list | tuple):
            todo.append(_CLOSE_LIST)
            for index in range(len(item) - 1, -1, -1):
                todo.append(item[index])
                if index:
                    todo.append(_COMMA)
            out.append(_OPEN_LIST)
        elif isinstance(item, int) and not isinstance(item, bool) and not -(2**63) <= item < 2**64:
            out.append(str(item))  # an integer beyond 64 bits is still a JSON number
        else:
            out.append(_dumps(item).decode())  # a leaf: orjson's spelling, or its TypeError
    return out


def _key(key: object) -> str:
    """A dict key as JSON text: a string, or a number, boolean or null spelt as the standard library does."""
    if isinstance(key, str):
        return _dumps(key).decode()
    if key is None or isinstance(key, bool | int | float):
        spelt = "null" if key is None else str(key).lower() if isinstance(key, bool) else repr(key)
        return _dumps(spelt).decode()
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
