"""Which sources the given paths hold: every file or folder an importer claims, and what is known of each.

A folder an importer reads as a whole (OpenCode's JSON `storage/` tree) is one source; any other
folder is walked, hidden folders included, in name order so that every run finds the same order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from calib.core.errors import CalibError, InputError, NotASessionError
from calib.importers import HEAD_BYTES, Importer, all_importers, get_importer, sniff_dir, sniff_file
from calib.ingest.cache import dir_fingerprint, file_fingerprint
from calib.store.writes import FileState


@dataclass(slots=True)
class Source:
    """One unit an importer parses: a session file, a database, or a folder read as a whole."""

    path: Path
    importer: Importer


def default_paths() -> list[Path]:
    """Every existing default data folder of every registered agent."""
    return [p for importer in all_importers() for p in importer.default_paths() if p.exists()]


def find_sources(
    paths: Sequence[Path], format: str | None = None
) -> tuple[list[Source], list[str], list[CalibError]]:
    """Resolve paths into sources; returns (sources, skipped files, errors for unusable explicit paths)."""
    forced = get_importer(format) if format else None
    sources: list[Source] = []
    skipped: list[str] = []
    errors: list[CalibError] = []
    for path in paths:
        if not path.exists():
            errors.append(InputError("no such file or folder", path=str(path), hint="check the path"))
            continue
        if path.is_dir():
            sources.extend(_walk(path, forced, skipped))
            continue
        importer = forced or sniff_file(path)
        if importer is None:
            errors.append(
                NotASessionError(
                    "not a session file of any known agent",
                    path=str(path),
                    hint=f"pass --format with one of: {', '.join(i.name for i in all_importers())}",
                )
            )
            continue
        sources.append(Source(path, importer))
    return sources, skipped, errors


def _walk(root: Path, forced: Importer | None, skipped: list[str]) -> Iterator[Source]:
    claim = sniff_dir(root) if forced is None else (forced if forced.sniff_dir(root) else None)
    if claim is not None:
        yield Source(root, claim)
        return
    # os.walk includes hidden folders (such as .gemini and .opencode); sorted for a stable order.
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames.sort()
        kept = []
        for name in dirnames:
            sub = here / name
            owner = sniff_dir(sub) if forced is None else (forced if forced.sniff_dir(sub) else None)
            if owner is not None:
                yield Source(sub, owner)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            file = here / name
            if forced is not None:
                head = _head(file)
                owner = forced if head is not None and forced.sniff_file(file, head) else None
            else:
                owner = sniff_file(file)
            if owner is None:
                skipped.append(str(file))
            else:
                yield Source(file, owner)


def _head(path: Path) -> bytes | None:
    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


def file_state(source: Source) -> FileState:
    """Size, modification time and a content fingerprint of a source (a folder: of every file in it).

    A SQLite database's `-wal` file holds commits not yet in the database file, so its size and
    modification time are part of the database's fingerprint.
    """
    path = source.path
    measure = dir_fingerprint if path.is_dir() else file_fingerprint
    size, mtime, fingerprint = measure(str(path))
    return FileState(
        path=str(path.resolve()),
        importer=source.importer.name,
        size=size,
        mtime_ns=mtime,
        fingerprint=fingerprint,
        session_uids=[],
        read_offset=None,
    )
