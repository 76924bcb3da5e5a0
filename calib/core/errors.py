"""Errors calib raises: each renders as one line saying what went wrong, where, and what to do."""

from __future__ import annotations

from calib.core.paths import readable_path


class CalibError(Exception):
    """Base error: `what` went wrong at `path`:`line`; `hint` says what to do."""

    def __init__(
        self, what: str, *, path: str | None = None, line: int | None = None, hint: str | None = None
    ):
        super().__init__(what)
        self.what = what
        self.path = path
        self.line = line
        self.hint = hint

    @property
    def where(self) -> str | None:
        if self.path is None:
            return None
        # A file name's bytes that are not UTF-8 show as \xNN (`path` keeps the name that opens it).
        path = readable_path(self.path)
        return f"{path}:{self.line}" if self.line is not None else path

    def __str__(self) -> str:
        text = self.what
        if self.where:
            text += f" ({self.where})"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def to_dict(self) -> dict[str, object]:
        """The error as the `errors` entries of `calib ingest --json`."""
        path = readable_path(self.path) if self.path is not None else None
        return {"path": path, "line": self.line, "message": str(self)}


class InputError(CalibError):
    """A source file is not what its importer expects (truncated, corrupt, unknown version)."""


class NotASessionError(InputError):
    """A file named explicitly is not a session of any known agent."""


class StoreError(CalibError):
    """The DuckDB store cannot be opened or written."""


class EstimatorError(CalibError):
    """An estimator name is unknown or its tokenizer cannot be loaded offline."""


class ConfigError(CalibError):
    """A calibration config is missing, malformed or fails its JSON Schema."""


class UsageError(CalibError):
    """The command line or the API was called with invalid arguments (exit code 2)."""


class NotAStoreError(StoreError, UsageError):
    """`--db` names no calib store: a missing one where a command only reads, or another program's file.

    A usage error (exit code 2): the command line points at the wrong file, nothing is wrong with it.
    """


class UnknownEstimatorError(EstimatorError, UsageError):
    """An estimator name the registry does not know (exit code 2); the message lists the valid names."""


class InputWarning(CalibError):
    """Part of a source was left out while the rest of it imported (a damaged or unfinished line).

    Never raised: importers yield it among their records (see `calib.importers`), and ingest reports
    it in `IngestResult.warnings` without failing the run.
    """


class NotARegularFileWarning(InputWarning):
    """A FIFO, socket or device (`kind`) met where session files are: skipped, and never opened."""

    def __init__(self, kind: str, *, path: str | None = None) -> None:
        super().__init__(f"{kind}, not a regular file; skipped", path=path)


class FileWarning(InputWarning):
    """A warning about a source as a whole rather than one of its lines (its last line still being
    written, NUL bytes after its last line): one or two a file at most, so always given in full, never
    counted among the lines left out (`calib.core.tally.WarningTally`)."""


class MoreWarnings(InputWarning):
    """Stands for `count` more warnings about a source than the ones given in full before it.

    A log of a million damaged lines must not cost a million warnings: an importer (and ingest) keeps
    the first few of a source (`calib.core.tally.WarningTally`) and counts the rest in one of these.
    """

    def __init__(self, count: int, *, path: str | None = None) -> None:
        super().__init__(f"{count} more lines left out", path=path)
        self.count = count


class BaselineError(InputError, UsageError):
    """A regression-gate baseline (`--baseline`) that cannot be read or is malformed (exit code 2)."""
