"""Time formats and database set-up the synthetic writers share."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc(ts: datetime) -> datetime:
    """`ts` as an aware UTC datetime (naive means UTC)."""
    return ts.astimezone(UTC) if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def epoch_ms(ts: datetime) -> int:
    """A datetime (naive = UTC) as JavaScript's `Date.now()` would have read it: epoch milliseconds, floored."""
    return (_utc(ts) - _EPOCH) // timedelta(milliseconds=1)


def iso_ms(ts: datetime) -> str:
    """A datetime (naive = UTC) as JavaScript's `toISOString()`: UTC, milliseconds, `Z`."""
    utc = _utc(ts)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@contextmanager
def wal_database(path: Path, ddl: Iterable[str]) -> Iterator[sqlite3.Connection]:
    """A SQLite database in WAL mode, as the agents keep theirs, with `ddl` run; one transaction, then closed."""
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode = WAL")
        for statement in ddl:
            con.execute(statement)
        with con:
            yield con
    finally:
        con.close()
