"""What one ingest did, and the one way it is told: the summary line and the `--json` document.

Errors (a source that could not be imported at all) and warnings (lines left out of a source that
was imported: `calib.core.errors.InputWarning`) are both listed with path, line and message; only
errors fail the run. Of each source's warnings only the first few are kept (`calib.core.tally`); how
many more each source had is `warnings_left_out`.

Standard library only (and `calib.core.errors`): `calib ingest` with nothing to do answers from
`calib.ingest.cache` and this module without loading the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calib.core.errors import CalibError, InputError

if TYPE_CHECKING:
    from calib.store.writes import WriteCounts


@dataclass(repr=False)
class IngestResult:
    """What one ingest did: rows added, files skipped (unknown or unchanged), files that failed, and
    lines left out of files that were imported (`warnings`: the first few of each source in full, and
    in `warnings_left_out` how many more each source had, by path). `masked` counts the masked tool
    outputs (gemini-cli's `<tool_output_masked>`) in the sessions read, and `recovered` those of them
    whose full output was read back from the agent's own files.

    A failed source never stops the others, so check `ok`, or call `raise_for_errors()`: its repr
    shows the errors too.
    """

    files: int = 0
    sessions: int = 0
    calls: int = 0
    parts: int = 0
    estimates: int = 0
    unchanged: int = 0
    read: int = 0  # sources parsed this run (whole or on from where the last run stopped)
    resumed: int = 0  # of those, logs read on from where the last run stopped
    masked: int = 0  # masked tool outputs in the sessions read
    recovered: int = 0  # of those, the ones whose full output was read back
    skipped: list[str] = field(default_factory=list)
    errors: list[CalibError] = field(default_factory=list)
    warnings: list[CalibError] = field(default_factory=list)
    warnings_left_out: dict[str, int] = field(default_factory=dict)

    @property
    def warning_count(self) -> int:
        """Every warning, the ones left out of `warnings` included."""
        return len(self.warnings) + sum(self.warnings_left_out.values())

    @property
    def ok(self) -> bool:
        """True when no source failed (warnings do not count)."""
        return not self.errors

    def raise_for_errors(self) -> IngestResult:
        """Raise the first error (saying how many sources failed in all) if any source failed; else self."""
        if not self.errors:
            return self
        first = self.errors[0]
        if len(self.errors) == 1:
            raise first
        more = len(self.errors) - 1
        error = InputError(
            f"{len(self.errors)} sources failed; the first: {first.what}",
            path=first.path,
            line=first.line,
            hint=f"see .errors for the other {more}; other files were still imported",
        )
        raise error from first

    def __repr__(self) -> str:
        shown = "; ".join(str(e) for e in self.errors[:3]) + ("; ..." if len(self.errors) > 3 else "")
        return f"<IngestResult {self.summary()}" + (f"; errors: {shown}" if self.errors else "") + ">"

    def add(self, counts: WriteCounts | IngestResult) -> None:
        """Count the rows a write (or another result) added, and the masked and recovered outputs it
        read (where it counts them)."""
        self.sessions += counts.sessions
        self.calls += counts.calls
        self.parts += counts.parts
        self.estimates += counts.estimates
        self.masked += getattr(counts, "masked", 0)
        self.recovered += getattr(counts, "recovered", 0)

    def merge(self, other: IngestResult) -> None:
        """Add what `other` wrote and read (rows, sources read, errors) to this result."""
        self.add(other)
        self.read += other.read
        self.resumed += other.resumed
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)
        self.warnings_left_out.update(other.warnings_left_out)

    def summary(self) -> str:
        """The one line `calib ingest` prints without --json."""
        return (
            f"{self.files} files: added {self.sessions} sessions, {self.calls} calls, {self.parts} parts"
            + (
                f"; {self.masked} masked tool {_plural(self.masked, 'output')}, {self.recovered} read back"
                if self.masked
                else ""
            )
            + (f"; {self.unchanged} unchanged" if self.unchanged else "")
            + (f"; skipped {len(self.skipped)} files that are not sessions" if self.skipped else "")
            + (f"; {len(self.errors)} failed" if self.errors else "")
            + (
                f"; {self.warning_count} {_plural(self.warning_count, 'warning')}"
                if self.warning_count
                else ""
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """The `calib ingest --json` document."""
        return {
            "files": self.files,
            "sessions": self.sessions,
            "calls": self.calls,
            "parts": self.parts,
            "estimates": self.estimates,
            "unchanged": self.unchanged,
            "read": self.read,
            "resumed": self.resumed,
            "masked": self.masked,
            "recovered": self.recovered,
            "skipped": self.skipped,
            "errors": [e.to_dict() for e in self.errors],
            "warnings": [w.to_dict() for w in self.warnings],
            "warnings_left_out": self.warnings_left_out,
        }


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"
