"""Writing calib's output files: never over what they must not replace, and always whole.

Every file or folder calib writes for the user (`calib fit --out`, `calib export --runtime`, `calib
score --calls`, `calib report --out`) goes through `check_output` before any work starts and again
as it is written. It refuses (a `UsageError`: the command line names the wrong path) the store in
use, through any name (a symbolic or hard link, `..`) and its companion files; any database; an
agent's session; and any existing file or folder that calib did not write as an output of that very
kind, which each kind recognises by its content (`OutputKind.foreign`).

Then the output is written whole: a file through a temporary file beside it, renamed over the
target (`write_atomically`, `output_file`); a folder built beside it and swapped in at the end
(`output_folder`). On failure the earlier output stays as it was, nothing temporary is left behind,
and the error names the file that failed (`write_error`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from calib.core.errors import CalibError, UsageError
from calib.core.home import expand_home

__all__ = [
    "STORE_COMPANIONS",
    "OutputKind",
    "Sniff",
    "check_output",
    "output_file",
    "output_folder",
    "write_atomically",
    "write_error",
    "write_output",
]

# Files beside a store `X` that belong to it: DuckDB's write-ahead log, and the record of the last
# ingest (`calib.ingest.cache.manifest_path`).
STORE_COMPANIONS = (".wal", ".ingest.json")

_DUCKDB_MAGIC = b"DUCK"  # at byte 8 of a DuckDB database
_SQLITE_MAGIC = b"SQLite format 3\x00"
_NOTHING_WRITTEN = "nothing was written"


class _Named(Protocol):
    name: str


# What a session file is, for a clearer refusal: `calib.importers.sniff_file` (the importer that
# claims it, by its `name`), passed in by the layers above the importers.
Sniff = Callable[[Path], _Named | None]


@dataclass(frozen=True)
class OutputKind:
    """A kind of output calib writes, and how to tell an existing one calib wrote from anything else."""

    name: str  # what is written, in a sentence: "the calibration config"
    foreign: Callable[[Path], str | None]  # why an existing path is not one calib wrote; None when it is
    hint: str  # what to do instead: "name a new file or an earlier calibration config"
    folder: bool = False  # written as a folder of files (a report) rather than one file


def check_output(
    path: str | os.PathLike[str],
    kind: OutputKind,
    *,
    store: str | os.PathLike[str] | None = None,
    sniff: Sniff | None = None,
) -> Path:
    """The path to write `kind` to, once it is safe; else a `UsageError` naming the path and why.

    Refused: `store` (the store in use) or a companion of it, under any name; a path inside a store
    that is a folder; a path under a file; an existing path of the wrong type (a folder for a file);
    and an existing file or folder that `kind.foreign` does not recognise as calib's, described as a
    database, an agent's session (by `sniff`) or what the kind says. Nothing is created or written.
    """
    target = expand_home(path)
    refusal = _refusal(target, kind, store, sniff)
    if refusal is not None:
        what, where = refusal
        raise UsageError(
            f"will not write {kind.name} {what}", path=str(where), hint=f"{kind.hint}; {_NOTHING_WRITTEN}"
        )
    return target


def write_output(
    path: str | os.PathLike[str],
    data: bytes | str,
    kind: OutputKind,
    *,
    store: str | os.PathLike[str] | None = None,
    sniff: Sniff | None = None,
) -> Path:
    """`check_output`, then `write_atomically`: the one call for an output that is one small file."""
    target = check_output(path, kind, store=store, sniff=sniff)
    write_atomically(target, data)
    return target


def write_atomically(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write `path` (its folder created if missing) through a new temporary file beside it, renamed over
    it: no reader sees half a file, a failure leaves the earlier file as it was and no temporary file,
    and it raises a `CalibError` naming the file (`write_error`). Text is written as UTF-8."""
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _temporary(target) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(payload)
            os.replace(tmp, _real(target))
    except OSError as exc:
        raise write_error(exc, target) from None


@contextlib.contextmanager
def output_file(
    path: str | os.PathLike[str],
    kind: OutputKind,
    *,
    store: str | os.PathLike[str] | None = None,
    sniff: Sniff | None = None,
) -> Iterator[Path]:
    """For an output written a piece at a time: yields a new empty temporary file beside `path` to
    write, which replaces `path` (checked again) when the block ends without an error; on an error
    it is removed and `path` stays as it was. An `OSError` of the rename names `path`."""
    target = check_output(path, kind, store=store, sniff=sniff)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, target) from None
    with _temporary(target) as tmp:
        yield tmp
        check_output(target, kind, store=store, sniff=sniff)
        try:
            os.replace(tmp, _real(target))
        except OSError as exc:
            raise write_error(exc, target) from None


@contextlib.contextmanager
def output_folder(
    path: str | os.PathLike[str],
    kind: OutputKind,
    *,
    store: str | os.PathLike[str] | None = None,
    sniff: Sniff | None = None,
) -> Iterator[Path]:
    """For an output that is a folder: yields a new empty folder beside `path` to fill, swapped in for
    `path` (checked again) when the block ends without an error; until then the earlier folder stays
    as it was, and on an error the new one is removed. Files written into it should name the final
    path in their errors (`write_error(exc, path / name)`)."""
    target = check_output(path, kind, store=store, sniff=sniff)
    real = _real(target)
    work = real.with_name(f".{real.name}.{os.urandom(6).hex()}.tmp")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
        work.mkdir()  # mode 0o777 under the umask, like any folder the user makes
    except OSError as exc:
        raise write_error(exc, target) from None
    try:
        yield work
        check_output(target, kind, store=store, sniff=sniff)
        _swap_in(work, real)
    except OSError as exc:
        raise write_error(exc, target) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_error(exc: OSError, path: str | os.PathLike[str]) -> CalibError:
    """The one-line error of a failed write of the output `path`: which file, and the OS's reason."""
    target = Path(path)
    return CalibError(
        f"cannot write {target.name}: {exc.strerror or exc}",
        path=str(target),
        hint="check the folder's permissions and free space; nothing was changed",
    )


# -- what may be replaced --------------------------------------------------------------------------


def _refusal(
    target: Path, kind: OutputKind, store: str | os.PathLike[str] | None, sniff: Sniff | None
) -> tuple[str, Path] | None:
    """Why `target` may not receive `kind` (a phrase after "will not write KIND", and the path it is
    about), or None."""
    if store is not None:
        what = _of_store(target, expand_home(store))
        if what is not None:
            return f"over {what}", target
    for parent in target.parents:
        if parent.is_dir():
            break
        if parent.exists():
            return "under a file", parent
    if not (target.exists() or target.is_symlink()):
        return None
    if target.is_dir() != kind.folder:
        return ("over a folder" if target.is_dir() else "over a file"), target
    if kind.folder and not any(target.iterdir()):
        return None  # an empty folder holds nothing to lose
    reason = kind.foreign(target)
    if reason is None:
        return None
    return f"over {_describe(target, sniff) or reason}", target


def _of_store(target: Path, store: Path) -> str | None:
    """What `target` is of the store `store` (itself, a companion file, a path inside it), or None."""
    if _same(target, store):
        return "the calib store in use"
    if any(_same(target, Path(f"{store}{suffix}")) for suffix in STORE_COMPANIONS):
        return "a file of the calib store in use"
    if store.is_dir() and store.resolve() in target.resolve().parents:
        return "a path inside the calib store in use"  # a Parquet export, read as a store
    return None


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same inode when both exist, else the same real path."""
    with contextlib.suppress(OSError):
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def _describe(target: Path, sniff: Sniff | None) -> str | None:
    """What a file of another program is, when it says so: a database, or an agent's session."""
    if target.is_dir():
        return None
    try:
        with open(target, "rb") as fh:
            head = fh.read(16)
    except OSError:
        return None
    if head[8:12] == _DUCKDB_MAGIC:
        return "a DuckDB database"
    if head.startswith(_SQLITE_MAGIC):
        return "a SQLite database"
    claimed = sniff(target) if sniff is not None else None
    return f"a {claimed.name} session" if claimed is not None else None


# -- writing whole ---------------------------------------------------------------------------------


def _real(target: Path) -> Path:
    """Where writing `target` lands: through a symbolic link to its file, which the link keeps naming."""
    return target.resolve() if target.is_symlink() else target


@contextlib.contextmanager
def _temporary(target: Path) -> Iterator[Path]:
    """A new empty file beside `target` (never an existing one: O_EXCL), removed unless renamed; a
    failure to make it is an error naming `target`."""
    real = _real(target)
    tmp = real.with_name(f".{real.name}.{os.urandom(6).hex()}.tmp")
    try:
        # mode 0o666 under the umask, like any file the user writes
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as exc:
        raise write_error(exc, target) from None
    try:
        yield tmp
    finally:
        tmp.unlink(missing_ok=True)


def _swap_in(work: Path, out: Path) -> None:
    """Put the finished folder `work` at `out`, then delete the earlier `out` (an empty folder or an
    earlier output): if the last rename fails, the earlier folder is put back."""
    if not out.exists():
        work.rename(out)
        return
    old = work.with_name(work.name[: -len(".tmp")] + ".old")
    out.rename(old)
    try:
        work.rename(out)
    except BaseException:
        old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)
