"""Which sources the given paths hold: every file or folder an importer claims, and what is known of each.

A folder an importer reads as a whole (OpenCode's JSON `storage/` tree) is one source; any other
folder is walked, hidden folders included, in name order so that every run finds the same order.
Symbolic links to folders are followed, each real folder once (a link loop ends there). A file or
folder that cannot be read (permissions) is an error naming the OS's reason, never skipped silently:
the others are still imported. What is neither a regular file nor a folder (a FIFO, a socket, a
device) is never opened, not even to sniff it: found while walking it is skipped with a warning,
named explicitly it is an error.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from calib.core.errors import CalibError, InputError, NotARegularFileWarning, NotASessionError
from calib.core.paths import NotARegularFileError, file_kind, open_regular, readable_path
from calib.importers import HEAD_BYTES, Importer, all_importers, get_importer, sniff_dir
from calib.ingest.cache import dir_fingerprint, file_fingerprint
from calib.store.writes import FileState


@dataclass(slots=True)
class Source:
    """One unit an importer parses: a session file, a database, or a folder read as a whole."""

    path: Path
    importer: Importer


@dataclass(frozen=True, slots=True)
class AgentFolder:
    """One folder where an agent keeps its sessions on this machine (its environment variables read)."""

    tool: str
    path: Path
    exists: bool

    def to_dict(self) -> dict[str, str | bool]:
        return {"tool": self.tool, "path": str(self.path), "exists": self.exists}


def agent_folders() -> list[AgentFolder]:
    """Every default data folder of every registered agent, found or not, in the registry's order."""
    return [
        AgentFolder(importer.name, path, path.exists())
        for importer in all_importers()
        for path in importer.default_paths()
    ]


def default_paths() -> list[Path]:
    """Every existing default data folder of every registered agent."""
    return [folder.path for folder in agent_folders() if folder.exists]


def find_sources(
    paths: Sequence[Path], format: str | None = None, warnings: list[CalibError] | None = None
) -> tuple[list[Source], list[str], list[CalibError]]:
    """Resolve paths into sources; returns (sources, skipped files, errors for unusable explicit paths).

    What walking skipped for a reason the user should hear (a FIFO named like a log) is added to
    `warnings` when given.
    """
    forced = get_importer(format) if format else None
    sources: list[Source] = []
    skipped: list[str] = []
    errors: list[CalibError] = []
    warned = warnings if warnings is not None else []
    for path in paths:
        try:
            st = path.stat()
        except FileNotFoundError:
            errors.append(InputError("no such file or folder", path=str(path), hint="check the path"))
            continue
        except OSError as exc:
            errors.append(_unreadable(path, exc))
            continue
        if stat.S_ISDIR(st.st_mode):
            sources.extend(_walk(path, forced, skipped, errors, warned))
            continue
        if not stat.S_ISREG(st.st_mode):
            errors.append(not_regular_error(path, file_kind(st.st_mode)))
            continue
        head = _head(path)
        if isinstance(head, NotARegularFileError):  # replaced since the check above
            errors.append(not_regular_error(path, head.kind))
            continue
        if isinstance(head, OSError):
            errors.append(_unreadable(path, head))
            continue
        importer = forced or _claim(path, head)
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


def _unreadable(path: Path, exc: OSError) -> InputError:
    return InputError(
        f"cannot read: {exc.strerror or exc}",
        path=str(path),
        hint="check its permissions; other files were still imported",
    )


def _claim(path: Path, head: bytes) -> Importer | None:
    for importer in all_importers():
        if importer.sniff_file(path, head):
            return importer
    return None


def not_regular_error(path: str | os.PathLike[str], kind: str) -> InputError:
    """The error for a FIFO, socket or device named as a source: it is never opened."""
    return InputError(
        f"{kind}, not a regular file",
        path=os.fspath(path),
        hint="name a session file or a folder; the other paths were still imported",
    )


def _walk(
    root: Path,
    forced: Importer | None,
    skipped: list[str],
    errors: list[CalibError],
    warnings: list[CalibError],
) -> Iterator[Source]:
    claim = sniff_dir(root) if forced is None else (forced if forced.sniff_dir(root) else None)
    if claim is not None:
        yield Source(root, claim)
        return

    def unreadable(exc: OSError) -> None:
        errors.append(_unreadable(Path(exc.filename or root), exc))

    seen: set[tuple[int, int]] = set()  # real folders walked: each once, however many links lead there
    # os.walk includes hidden folders (such as .gemini and .opencode); sorted for a stable order.
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=True):
        here = Path(dirpath)
        try:
            st = os.stat(dirpath)
        except OSError as exc:
            errors.append(_unreadable(here, exc))
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []  # a link back to a folder already walked (or a loop)
            continue
        seen.add((st.st_dev, st.st_ino))
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
            head = _head(file)
            if isinstance(head, NotARegularFileError):
                skipped.append(readable_path(file))
                warnings.append(NotARegularFileWarning(head.kind, path=str(file)))
                continue
            if isinstance(head, OSError):
                if not os.path.lexists(file) or (os.path.islink(file) and not file.exists()):
                    skipped.append(readable_path(file))  # a dangling link, or gone since the listing
                else:
                    errors.append(_unreadable(file, head))
                continue
            if forced is not None:
                owner = forced if forced.sniff_file(file, head) else None
            else:
                owner = _claim(file, head)
            if owner is None:
                skipped.append(readable_path(file))
            else:
                yield Source(file, owner)


def real_path(path: Path, real_folders: dict[str, str] | None = None) -> str:
    """`str(path.resolve())` as the store keeps it (`readable_path`); for a file that is no link, its
    folder's real path (kept in `real_folders`) and its name: resolving walks every folder of the
    path, for every source."""
    return readable_path(_real_path(path, real_folders))


def _real_path(path: Path, real_folders: dict[str, str] | None) -> str:
    if real_folders is None or path.name in ("", ".", ".."):
        return str(path.resolve())
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return str(path.resolve())
    except OSError:
        return str(path.resolve())
    folder = str(path.parent)
    real = real_folders.get(folder)
    if real is None:
        real = real_folders[folder] = str(path.parent.resolve())
    return os.path.join(real, path.name)


def _head(path: Path) -> bytes | OSError:
    """The first bytes the sniffers see, or the error reading them (`NotARegularFileError` for a FIFO,
    a socket or a device, which is never opened)."""
    try:
        with open_regular(path) as fh:
            return fh.read(HEAD_BYTES)
    except OSError as exc:
        return exc


def file_state(source: Source, real_folders: dict[str, str] | None = None) -> FileState:
    """Size, modification time and a content fingerprint of a source (a folder: of every file in it).

    A SQLite database's `-wal` file holds commits not yet in the database file, so its size and
    modification time are part of the database's fingerprint. `real_folders` keeps the real path of
    each folder resolved, for the next source in it.
    """
    path = source.path
    measure = dir_fingerprint if path.is_dir() else file_fingerprint
    size, mtime, fingerprint = measure(str(path))
    return FileState(
        path=real_path(path, real_folders),
        importer=source.importer.name,
        size=size,
        mtime_ns=mtime,
        fingerprint=fingerprint,
        session_uids=[],
        read_offset=None,
    )
