"""What one ingest did, and the one way it is told: the summary line and the `--json` document.

Standard library only (and `calib.core.errors`): `calib ingest` with nothing to do answers from
`calib.ingest.cache` and this module without loading the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calib.core.errors import CalibError

if TYPE_CHECKING:
    from calib.store.writes import WriteCounts


@dataclass
class IngestResult:
    """What one ingest did: rows added, files skipped (unknown or unchanged) and files that failed."""

    files: int = 0
    sessions: int = 0
    calls: int = 0
    parts: int = 0
    estimates: int = 0
    unchanged: int = 0
    read: int = 0  # sources parsed this run (whole or on from where the last run stopped)
    resumed: int = 0  # of those, logs read on from where the last run stopped
    skipped: list[str] = field(default_factory=list)
    errors: list[CalibError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, counts: WriteCounts | IngestResult) -> None:
        """Count the rows a write (or another result) added."""
        self.sessions += counts.sessions
        self.calls += counts.calls
        self.parts += counts.parts
        self.estimates += counts.estimates

    def merge(self, other: IngestResult) -> None:
        """Add what `other` wrote and read (rows, sources read, errors) to this result."""
        self.add(other)
        self.read += other.read
        self.resumed += other.resumed
        self.errors.extend(other.errors)

    def summary(self) -> str:
        """The one line `calib ingest` prints without --json."""
        return (
            f"{self.files} files: added {self.sessions} sessions, {self.calls} calls, {self.parts} parts"
            + (f"; {self.unchanged} unchanged" if self.unchanged else "")
            + (f"; skipped {len(self.skipped)} files that are not sessions" if self.skipped else "")
            + (f"; {len(self.errors)} failed" if self.errors else "")
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
            "skipped": self.skipped,
            "errors": [e.to_dict() for e in self.errors],
        }
