"""Small conversions and texts the importers (and the synthetic writers that mirror them) share."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from calib.core.errors import FileWarning, InputWarning
from calib.core.jsontext import json_text

# What OpenCode and Dexto both send in place of a pruned tool output (the same text in both agents).
PRUNED_TEXT = "[Old tool result content cleared]"

# What building records raises on parsed data of a shape it does not expect (a field of the wrong type,
# a value nested deeper than a recursive walk goes): damage in the source, not a defect of calib's.
DAMAGE = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)
_REST = "the rest of the database was imported"
_Item = TypeVar("_Item")
_Built = TypeVar("_Built")

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


def unfinished_line(path: Path, lineno: int, agent: str) -> FileWarning:
    """The warning for a log's last line that has no newline and does not parse: `agent` is likely
    still writing it, so it is left out, and a later read adds it once it is complete."""
    return FileWarning(
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


def damaged_row(path: Path, table: str, row: str, what: str, lost: str) -> InputWarning:
    """The warning for a damaged row of an agent's database (`what` says how: "not a JSON object"), and
    what was left out with it (`lost`: "this message was left out, the rest of the database was imported")."""
    return InputWarning(f"row {row} of table `{table}` is {what}; {lost}", path=str(path))


def damaged_file(path: str | Path, what: str, lost: str, line: int | None = None) -> InputWarning:
    """The warning for a damaged file of an agent's storage tree (`what` says how: "not a JSON object"),
    and what was left out with it (`lost`: "this message and its parts were left out, ...")."""
    return InputWarning(f"this file is {what}; {lost}", path=str(path), line=line)


def _detail(exc: BaseException) -> str:
    """`exc` in one line: its type, and the first line of its message."""
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def build_leaving_out(
    build: Callable[[list[_Item]], _Built],
    items: list[_Item],
    *,
    damaged: Callable[[_Item, str], InputWarning],
    path: str | Path,
    session: str,
    rest: str = _REST,
    stand_in: Callable[[_Item], _Item] | None = None,
) -> list[_Built | InputWarning]:
    """`[build(items)]`, the records of one session from its messages (`items`: rows of a database,
    files of a storage tree).

    If building fails on damaged data (`DAMAGE`), the messages it fails on alone are left out (or
    replaced by their `stand_in`, where positions count), each with the warning `damaged(item, what)`
    (`damaged_row`, `damaged_file`), and the rest is built again; if that still fails (the damage lies
    between messages), the session is left out with one warning naming `path` and saying `rest` (what
    was imported). Costs nothing while the data is sound.
    """
    try:
        return [build(items)]
    except DAMAGE:
        pass
    out: list[_Built | InputWarning] = []
    kept: list[_Item] = []
    for item in items:
        try:
            build([item])
        except DAMAGE as exc:
            out.append(damaged(item, f"a message calib cannot read ({_detail(exc)})"))
            if stand_in is not None:
                kept.append(stand_in(item))
        else:
            kept.append(item)
    try:
        out.append(build(kept))
    except DAMAGE as exc:
        what = f"session {session} cannot be read ({_detail(exc)}); left out, {rest}"
        return [InputWarning(what, path=str(path))]
    return out


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
