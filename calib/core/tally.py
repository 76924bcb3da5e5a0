"""The warnings about one source, bounded: the first few in full, and a count of the rest.

A copied log can hold millions of damaged lines. A warning for each would cost about 1 KB of memory and
one line of output apiece, so importers and ingest keep `KEPT_WARNINGS` of a source in full and count
the others (`WarningTally`); the count travels as one `MoreWarnings`. A reader that must know every
line it left out (to warn, on a later read, only about the lines after those already read) keeps
them compactly (`LinesLeftOut`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable, Iterator

from calib.core.errors import FileWarning, InputWarning, MoreWarnings

# Warnings kept in full per source; the rest are counted.
KEPT_WARNINGS = 3


class WarningTally:
    """The warnings about one source: the first `KEPT_WARNINGS` in full, and how many more there were.

    Iterating gives the kept warnings, then one `MoreWarnings` naming `path` for the rest (when there
    are more).
    """

    __slots__ = ("kept", "more", "path")

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.kept: list[InputWarning] = []
        self.more = 0

    def append(self, warning: InputWarning) -> None:
        """Keep `warning` in full while fewer than `KEPT_WARNINGS` are kept, else count it (a
        `MoreWarnings` counts as as many as it stands for; a `FileWarning` is always kept)."""
        if isinstance(warning, MoreWarnings):
            self.more += warning.count
        elif len(self.kept) < KEPT_WARNINGS or isinstance(warning, FileWarning):
            self.kept.append(warning)
        else:
            self.more += 1

    def extend(self, warnings: Iterable[InputWarning]) -> None:
        """`append` each of `warnings`."""
        for warning in warnings:
            self.append(warning)

    def __len__(self) -> int:
        return len(self.kept) + self.more

    def __iter__(self) -> Iterator[InputWarning]:
        yield from self.kept
        if self.more:
            yield MoreWarnings(self.more, path=self.path)


class LinesLeftOut:
    """Which lines a reader of a log left out, and why, in about 12 bytes a line (not a warning each).

    Line numbers (ascending, as a log is read) sit in an array; each line's reason is an index into
    the few distinct reasons met (a parser's messages name no position).
    """

    __slots__ = ("_codes", "_index", "_lines", "_reasons")

    def __init__(self) -> None:
        self._lines = array("q")
        self._codes = array("I")
        self._reasons: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, line: int, reason: str) -> None:
        """Line `line` was left out because of `reason` (lines come in ascending order)."""
        code = self._index.get(reason)
        if code is None:
            code = self._index[reason] = len(self._reasons)
            self._reasons.append(reason)
        self._lines.append(line)
        self._codes.append(code)

    def __len__(self) -> int:
        return len(self._lines)

    def first(self) -> int | None:
        """The first line left out, if any."""
        return self._lines[0] if self._lines else None

    def after(self, line: int = 0) -> tuple[list[tuple[int, str]], int]:
        """The first `KEPT_WARNINGS` lines left out after line `line`, each with its reason, and how
        many more there are after them."""
        start = bisect_right(self._lines, line)
        stop = min(start + KEPT_WARNINGS, len(self._lines))
        kept = [(self._lines[i], self._reasons[self._codes[i]]) for i in range(start, stop)]
        return kept, len(self._lines) - stop
