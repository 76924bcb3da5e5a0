"""Reading a JSON file the user names (a calibration config, a baseline, a windows file): one reader, so
that every way such a file can be wrong is one `CalibError` line naming the file, the line where it is
known, and what to do.

Python's `json` recurses once per level of nesting and crashes past about a thousand levels, and it
reads `NaN`, `Infinity` and `1e309` as numbers no figure can be. So before parsing, the nesting is
measured without recursion (`deeper_than`; `MAX_DEPTH` levels are read, more are refused), and while
parsing, a number that is not finite (or an integer too large for a float) is refused.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from calib.core.errors import CalibError, ConfigError
from calib.core.home import expand_home

__all__ = ["MAX_DEPTH", "deeper_than", "read_json_file"]

# Far above any file calib writes (a config nests 5 deep), far below Python's recursion limit (1,000), which
# json.loads, the JSON Schema check and the config's own checks each spend a frame or more per level of.
MAX_DEPTH = 256

# A string (closed, or running to the end of the text: brackets in it do not nest) or a bracket.
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
# A string, or a JSON number or constant (where a non-finite one is, for its line).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?(?:Infinity|NaN|\d[\d.eE+-]*))', re.DOTALL)
# The most digits an integer may have and still be a float (sys.float_info.max has 309).
_MAX_DIGITS = 309
_SHOWN = 22  # characters of a refused number shown in the message


def deeper_than(text: str, limit: int = MAX_DEPTH) -> int | None:
    """Where JSON `text` first nests deeper than `limit` arrays and objects (the offset of the bracket
    opening level `limit + 1`), or None; counted in a loop, not by recursing, and brackets in strings
    do not count."""
    if text.count("[") + text.count("{") <= limit:  # cannot nest deeper than it opens
        return None
    depth = 0
    for match in _NESTING.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif char in "]}":
            depth -= 1
    return None


class _NotFinite(ValueError):
    """A number in the document that is not finite: `token` as written."""

    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _constant(token: str) -> Any:
    raise _NotFinite(token)


def _float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NotFinite(token)
    return value


def _int(token: str) -> int:
    if len(token.lstrip("-")) > _MAX_DIGITS:  # larger than any float (and than int() reads at once)
        raise _NotFinite(token)
    return int(token)


def _not_finite_at(text: str, token: str) -> int:
    """The offset of the first number written `token` outside a string."""
    for match in _TOKENS.finditer(text):
        if match.group(1) == token:
            return match.start()
    return 0


def read_json_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    hint: str,
    fix: str,
    error: type[CalibError] = ConfigError,
    missing: str | None = None,
) -> tuple[bytes, Any]:
    """The bytes of the JSON file at `path` (`~` expanded) and the document they hold.

    Every failure raises `error` naming the file (and line): `what` names the file in the message
    ("the calibration config"), `hint` says what to do when it cannot be read and `fix` when its
    content is wrong; `missing`, if given, is the whole message for a file that does not exist.
    """
    target = expand_home(path)
    where = str(target)
    try:
        raw = target.read_bytes()
    except FileNotFoundError as exc:
        message = missing or f"cannot read {what}: {exc.strerror}"
        raise error(message, path=where, hint=hint) from None
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}", path=where, hint=hint) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            path=where,
            line=raw.count(b"\n", 0, exc.start) + 1,
            hint=fix,
        ) from None
    deep = deeper_than(text, MAX_DEPTH)
    if deep is not None:
        raise error(
            f"{what} is nested deeper than {MAX_DEPTH} levels",
            path=where,
            line=text.count("\n", 0, deep) + 1,
            hint=fix,
        )
    try:
        doc = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except _NotFinite as exc:
        shown = exc.token if len(exc.token) <= _SHOWN + 2 else exc.token[:_SHOWN] + "…"
        raise error(
            f"{what} holds a number that is not finite: {shown}",
            path=where,
            line=text.count("\n", 0, _not_finite_at(text, exc.token)) + 1,
            hint=fix,
        ) from None
    except json.JSONDecodeError as exc:
        raise error(f"{what} is not valid JSON: {exc.msg}", path=where, line=exc.lineno, hint=fix) from None
    return raw, doc
