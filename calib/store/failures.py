"""What a DuckDB error says about the store, as one true line: another process holding its file, a damaged
file, or the operating system failing under it (a full disk, a read-only medium, a folder not allowed).

DuckDB words its errors for its own users: a full disk can read "database has been invalidated because of
a previous fatal error", with the cause on a later line, and a damaged block mentions a "block", which a
test for "lock" would take for a lock. These functions read the whole message, and match DuckDB's lock
message exactly. `calib.store.store` raises what they make when the store fails to open or fails under a
command; the CLI reads the same (`calib.cli.common.environment_error`) for errors raised elsewhere.
"""

from __future__ import annotations

import errno
import os
import re

from calib.core.errors import StoreError

# DuckDB's message when another process holds a lock on the file that this open conflicts with.
_LOCK = re.compile(r"Could not set lock on file \"[^\"]*\": Conflicting lock is held(?:[^(]*\(PID (\d+)\))?")
# A block whose checksum does not match: the file was damaged (or written by something else).
_CORRUPT = re.compile(r"Corrupt database file:.*? in block at location (\d+)")
# The file an OS error names: `Could not write file "/x/calib.duckdb": No space left on device`.
_FILE = re.compile(r"(?:file|directory) \"([^\"]+)\"", re.I)
# The OS errors DuckDB repeats in its messages, as strerror words them, with what to do about each.
_OS_HINTS = {
    errno.ENOSPC: "free space on that disk, or pass --db a store on another",
    errno.EDQUOT: "free space within your quota, or pass --db a store on another disk",
    errno.EROFS: "that disk cannot be written: pass --db a store on one that can",
    errno.EACCES: "pass --db a store you can write, or change the file's permissions",
}
# (longest first: no shorter text found inside a longer one is taken for it)
_OS_ERRORS = dict(sorted(((os.strerror(c), c) for c in errno.errorcode), key=lambda e: -len(e[0])))
_RESTORE = "restore it from a backup, or ingest the sessions again into a new --db"
LOCK_HINT = "close the other calib or DuckDB session, or use --db to pick another store"


def is_lock_conflict(exc: BaseException) -> bool:
    """Whether `exc` is DuckDB refusing a file because another process holds a conflicting lock on it."""
    return _LOCK.search(str(exc)) is not None


def locked(exc: BaseException, path: str | None) -> StoreError | None:
    """The error for another process holding the store (`exc` is DuckDB's refusal), else None."""
    match = _LOCK.search(str(exc))
    if match is None:
        return None
    who = f"process {match.group(1)}" if match.group(1) else "another process"
    return StoreError(f"the store is locked by {who}", path=path, hint=LOCK_HINT)


def os_cause(exc: BaseException) -> tuple[str, int, str | None] | None:
    """The OS error a DuckDB message reports on any of its lines: (strerror, errno, the file it names)."""
    for line in str(exc).splitlines():
        for text, code in _OS_ERRORS.items():
            if text and text in line:
                file = _FILE.search(line)
                return text, code, file.group(1) if file else None
    return None


def explain(exc: BaseException, path: str | None = None, *, doing: str = "") -> StoreError | None:
    """The one-line error a DuckDB error `exc` means for the store at `path`, or None when it is none of
    the failures known here (then its own first line is what calib can say). `doing` ("cannot open the
    store: ") goes before an operating system's error, which by itself does not say what failed."""
    if not type(exc).__module__.startswith(("duckdb", "_duckdb")):
        return None
    failure = locked(exc, path)
    if failure is not None:
        return failure
    damage = _CORRUPT.search(str(exc))
    if damage is not None:
        return StoreError(
            f"the store is damaged: the block at byte {damage.group(1)} fails its checksum",
            path=path,
            hint=_RESTORE,
        )
    cause = os_cause(exc)
    if cause is not None:
        text, code, file = cause
        return StoreError(doing + text, path=file or path, hint=_OS_HINTS.get(code))
    return None
