"""The ingest pipeline: find sources, pick an importer for each, parse, and write each file atomically."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calib.errors import CalibError, InputError, NotASessionError, UsageError
from calib.importers import Importer, all_importers, get_importer, sniff_dir, sniff_file
from calib.records import ParsedSession, Record
from calib.store import FileState, Store, WriteCounts, open_store

# Bytes read from each end of a file for its fingerprint.
_FINGERPRINT_SPAN = 1 << 16


@dataclass(slots=True)
class Source:
    """One unit an importer parses: a session file, a database, or a folder read as a whole."""

    path: Path
    importer: Importer


@dataclass
class IngestResult:
    """What one ingest did: rows added, files skipped (unknown or unchanged) and files that failed."""

    files: int = 0
    sessions: int = 0
    calls: int = 0
    parts: int = 0
    estimates: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    errors: list[CalibError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, counts: WriteCounts) -> None:
        self.sessions += counts.sessions
        self.calls += counts.calls
        self.parts += counts.parts
        self.estimates += counts.estimates

    def to_dict(self) -> dict[str, Any]:
        """The `calib ingest --json` document."""
        return {
            "files": self.files,
            "sessions": self.sessions,
            "calls": self.calls,
            "parts": self.parts,
            "estimates": self.estimates,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "errors": [e.to_dict() for e in self.errors],
        }


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
    from calib.importers import HEAD_BYTES

    try:
        with path.open("rb") as fh:
            return fh.read(HEAD_BYTES)
    except OSError:
        return None


def file_state(source: Source) -> FileState:
    """Size, modification time and a content fingerprint of a source (a folder: of every file in it)."""
    path = source.path
    digest = hashlib.blake2b(digest_size=16)
    if path.is_dir():
        size = 0
        mtime = 0
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for name in sorted(filenames):
                st = os.stat(os.path.join(dirpath, name))
                size += st.st_size
                mtime = max(mtime, st.st_mtime_ns)
                digest.update(f"{os.path.join(dirpath, name)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    else:
        st = path.stat()
        size, mtime = st.st_size, st.st_mtime_ns
        with path.open("rb") as fh:
            digest.update(fh.read(_FINGERPRINT_SPAN))
            if size > _FINGERPRINT_SPAN:
                fh.seek(max(_FINGERPRINT_SPAN, size - _FINGERPRINT_SPAN))
                digest.update(fh.read(_FINGERPRINT_SPAN))
    return FileState(
        path=str(path.resolve()),
        importer=source.importer.name,
        size=size,
        mtime_ns=mtime,
        fingerprint=digest.hexdigest(),
        session_uids=[],
        read_offset=None,
    )


def parse_source(source: Source) -> list[Record]:
    """Parse a whole source into records, turning unexpected failures into one-line input errors."""
    try:
        return list(source.importer.parse(source.path))
    except CalibError:
        raise
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"cannot read this {source.importer.name} source: {type(exc).__name__}: {exc}",
            path=str(source.path),
            hint="the file may be damaged or from an unsupported version; other files were still imported",
        ) from exc


Progress = Callable[[int, int, str], None]


def ingest(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    store: Store | None = None,
    db: str | os.PathLike[str] | None = None,
    format: str | None = None,
    full: bool = False,
    progress: Progress | None = None,
) -> IngestResult:
    """Import the given files and folders (or every agent's default folders) into the store.

    Each source is parsed completely before anything is written, and written in one transaction,
    so a bad file adds nothing and never stops the others. Unchanged files (same size, modification
    time and fingerprint as at the last ingest) are not parsed again unless `full` is set.
    """
    owned = store is None
    store = store or open_store(db)
    try:
        resolved = [Path(p) for p in paths] if paths else default_paths()
        if not resolved:
            raise UsageError(
                "no path given and no agent data found in the default folders",
                hint="pass the folder that holds your sessions, e.g. `calib ingest ~/.gemini`",
            )
        sources, skipped, errors = find_sources(resolved, format)
        result = IngestResult(skipped=skipped, errors=errors)
        known = store.file_states()
        for index, source in enumerate(sources):
            if progress is not None:
                progress(index, len(sources), str(source.path))
            result.files += 1
            try:
                state = file_state(source)
            except OSError as exc:
                result.errors.append(InputError(f"cannot read: {exc.strerror}", path=str(source.path)))
                continue
            before = known.get(state.path)
            if (
                not full
                and before is not None
                and (before.size, before.mtime_ns, before.fingerprint, before.importer)
                == (state.size, state.mtime_ns, state.fingerprint, state.importer)
            ):
                result.unchanged += 1
                continue
            try:
                records = parse_source(source)
            except CalibError as exc:
                result.errors.append(exc)
                continue
            state.session_uids = [r.session.uid for r in records if isinstance(r, ParsedSession)]
            result.add(store.write(records, file=state))
        if progress is not None:
            progress(len(sources), len(sources), "")
        return result
    finally:
        if owned:
            store.close()
