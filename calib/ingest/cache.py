"""What the last ingest saw, kept beside the store, so that an ingest with nothing to do is instant.

Standard library only, and nothing of calib but `calib.core.paths` (standard library only itself):
`calib ingest` checks it before loading anything. The record (`<store>.ingest.json`) holds the paths
given, every folder's modification time and every file's size and modification time under them
(taken before that ingest read anything), each source's fingerprint, and the store file's identity
once that ingest closed it. When all of it is the same again, every source would be found unchanged,
so the store is not even opened. Anything different (a file, a folder, the store written by anything
else, calib's own code) means a normal ingest.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import zlib
from collections.abc import Sequence
from typing import Any

from calib.core.paths import NotARegularFileError, file_kind

# As `calib.core.paths.open_regular` opens: a FIFO put in place after the check returns at once.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)

# (No pathlib, glob or re at run time: each costs milliseconds of the few an unchanged ingest takes.)

# Bytes read from each end of a file for its fingerprint (size and mtime catch nearly every change;
# the ends catch a rewrite that kept both, at a cost that stays small for thousands of files).
FINGERPRINT_SPAN = 1 << 12
_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"
# The layers whose code can change what an ingest finds: records, importers, the store, ingest itself.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CODE = ("core", "importers", "store", "ingest")


def file_fingerprint(name: str) -> tuple[int, int, str]:
    """(size, mtime_ns, fingerprint) of one file; a SQLite `-wal` beside it counts as its content.

    Raises OSError (`NotARegularFileError`) for what is not a regular file: a FIFO put in a source's
    place is never opened (its open would wait for a writer).
    """
    mode = os.stat(name).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFileError(name, file_kind(mode))
    # Raw descriptors: this runs for every source on every ingest, and file objects cost more than
    # the reads themselves.
    fd = os.open(name, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # replaced since the check above
            raise NotARegularFileError(name, file_kind(st.st_mode))
        head = os.pread(fd, FINGERPRINT_SPAN, 0)
        tail = b""
        if st.st_size > FINGERPRINT_SPAN:
            start = max(FINGERPRINT_SPAN, st.st_size - FINGERPRINT_SPAN)
            tail = os.pread(fd, FINGERPRINT_SPAN, start)
    finally:
        os.close(fd)
    # CRCs of both ends: a change detector beside size and mtime, not a defence against tampering,
    # and several times cheaper than a cryptographic hash (whose OpenSSL import alone costs more).
    fingerprint = f"{zlib.crc32(head):08x}{zlib.crc32(tail):08x}"
    if head.startswith(_SQLITE_MAGIC):
        try:
            wal = os.stat(name + "-wal")
        except OSError:
            pass
        else:
            fingerprint += f"-wal{wal.st_size:x}.{wal.st_mtime_ns:x}"
    return st.st_size, st.st_mtime_ns, fingerprint


def dir_fingerprint(name: str) -> tuple[int, int, str]:
    """(total size, newest mtime_ns, fingerprint of every file's name, size and mtime) of a folder."""
    crc = 0
    size = mtime = 0
    for dirpath, dirnames, filenames in os.walk(name):
        dirnames.sort()
        for file in sorted(filenames):
            st = os.stat(os.path.join(dirpath, file))
            size += st.st_size
            mtime = max(mtime, st.st_mtime_ns)
            # The name's bytes (a Linux name need not be UTF-8; for those that are, the same bytes).
            entry = os.fsencode(os.path.join(dirpath, file))
            crc = zlib.crc32(b"%s\0%d\0%d\n" % (entry, st.st_size, st.st_mtime_ns), crc)
    return size, mtime, f"{crc:08x}"


def manifest_path(db: str | os.PathLike[str]) -> str:
    """Where the record of the last ingest into the store `db` is kept."""
    return f"{os.fspath(db)}.ingest.json"


def tree_snapshot(paths: Sequence[str | os.PathLike[str]]) -> dict[str, list[int] | None]:
    """Modification time of every folder, size and modification time of every file, under `paths`."""
    snap: dict[str, list[int] | None] = {}
    for root in paths:
        top = os.fspath(root)
        try:
            st = os.stat(top)
        except OSError:
            snap[top] = None
            continue
        if not os.path.isdir(top):
            snap[top] = [st.st_size, st.st_mtime_ns]
            continue
        seen: set[tuple[int, int]] = set()
        # Links to folders are followed, each real folder once, as `calib.ingest.sources` walks them.
        for dirpath, dirnames, filenames in os.walk(top, followlinks=True):
            try:
                st = os.stat(dirpath)
            except OSError:
                snap[dirpath + os.sep] = None
                continue
            if (st.st_dev, st.st_ino) in seen:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirnames.sort()
            snap[dirpath + os.sep] = [st.st_mtime_ns]
            for name in filenames:
                full = os.path.join(dirpath, name)
                try:
                    st = os.stat(full)
                except OSError:
                    snap[full] = None
                else:
                    snap[full] = [st.st_size, st.st_mtime_ns]
    return snap


def _store_stamp(db: str | os.PathLike[str]) -> list[int] | None:
    """What changes whenever the store file is written; None while it has a write-ahead log."""
    if os.path.exists(f"{os.fspath(db)}.wal"):
        return None
    try:
        st = os.stat(db)
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _code_stamp() -> list[list[Any]]:
    stamp: list[list[Any]] = []
    for name in _CODE:
        entries = []
        for dirpath, dirnames, filenames in os.walk(os.path.join(_PACKAGE, name)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")  # compiled copies, not code
            entries += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith((".py", ".sql"))]
        for entry in entries:
            with contextlib.suppress(OSError):
                st = os.stat(entry)
                stamp.append([os.path.relpath(entry, _PACKAGE), st.st_size, st.st_mtime_ns])
    return stamp


def _key(paths: Sequence[str | os.PathLike[str]], format: str | None) -> dict[str, Any]:
    # Absolute: the same relative path from another folder is another tree.
    where = [os.path.abspath(p) for p in paths]
    return {"v": _VERSION, "code": _code_stamp(), "paths": where, "format": format}


def write_manifest(
    db: str | os.PathLike[str],
    paths: Sequence[str | os.PathLike[str]],
    format: str | None,
    tree: dict[str, list[int] | None],
    sources: list[tuple[str, str, int, int, str]],
    skipped: list[str],
    *,
    ok: bool,
) -> None:
    """Record an ingest that has closed the store; with `ok` False only remove the old record."""
    target = manifest_path(db)
    with contextlib.suppress(OSError):
        os.unlink(target)
    stamp = _store_stamp(db)
    if not ok or stamp is None:
        return
    document = {
        **_key(paths, format),
        "store": stamp,
        "tree": tree,
        "sources": [list(s) for s in sources],
        "skipped": skipped,
    }
    tmp = target + ".tmp"
    with contextlib.suppress(OSError):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(document))
        os.replace(tmp, target)


def unchanged_since_last_ingest(
    paths: Sequence[str | os.PathLike[str]], db: str | os.PathLike[str], format: str | None = None
) -> dict[str, Any] | None:
    """The counts of an ingest with nothing to do (as `IngestResult` fields) if nothing changed, else None.

    Nothing changed when the store file is exactly as the last ingest left it, the same paths hold
    the same folders and files with the same sizes and modification times, and every source has the
    same fingerprint: then every source would be found unchanged, so the store need not be opened.
    """
    try:
        with open(manifest_path(db), encoding="utf-8") as fh:
            document = json.loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict):
        return None
    stamp = _store_stamp(db)
    if stamp is None or document.get("store") != stamp:
        return None
    if any(document.get(k) != v for k, v in _key(paths, format).items()):
        return None
    if document.get("tree") != tree_snapshot(paths):
        return None
    sources = document.get("sources") or []
    for path, _importer, size, mtime_ns, fingerprint in sources:
        try:
            now = (dir_fingerprint if os.path.isdir(path) else file_fingerprint)(path)
        except OSError:
            return None
        if list(now) != [size, mtime_ns, fingerprint]:
            return None
    return {"files": len(sources), "unchanged": len(sources), "skipped": list(document.get("skipped") or [])}
