"""Reading a rollout's bytes into its records, line by line.

- Each line is one `{timestamp, type, payload}` record. A line that does not parse (or is no JSON
  object) in the middle of the file is skipped and counted (`skipped`, with what is wrong with
  each); the rest of the file is kept.
- A last line with no newline that does not parse is a record still being written: reading stops
  before it (`end`; its line is `torn_tail`), and the next read picks it up. A last line with no
  newline that parses is taken (`unterminated`: a later read starts from the beginning, since it may
  yet change).
- The bytes are those of `calib.importers.logfile.read_log_bytes`: NUL bytes at the end of the file
  (a crash) are never read, and the importer warns about them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from calib.core.tally import LinesLeftOut
from calib.importers.logfile import is_blank, out_of_memory

# Memory a rollout takes to read and lay out, per byte of it (a 200 MB one peaks 900 MB above the
# command's own; `tests/benchmarks/bench_extremes.py`), with a margin.
READ_MEMORY_FACTOR = 5.0


@dataclass(slots=True)
class Lines:
    """The records of a range of a rollout: (1-based line number, record) in file order."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # Damaged lines, each with what is wrong with it (compact: a rollout may hold millions).
    skipped: LinesLeftOut = field(default_factory=LinesLeftOut)
    end: int = 0  # offset just past the last line read
    lines: int = 0  # newline-terminated lines read (the line number the next read starts after)
    unterminated: bool = False  # the last record read has no newline after it
    torn_tail: int = 0  # the unfinished last line left for the next read (0: none)


def read_lines(data: bytes, offset: int = 0, first_line: int = 0) -> Lines:
    """The records of `data[offset:]`, whose first line is line `first_line + 1` of the file."""
    out = Lines(end=offset, lines=first_line)
    records = out.records
    loads = orjson.loads
    pos = offset
    size = len(data)
    view = memoryview(data)  # each line decoded from the log's bytes, never copied
    lineno = first_line
    while pos < size:
        nl = data.find(b"\n", pos)
        last = nl < 0
        stop = size if last else nl
        raw = view[pos:stop]
        blank = is_blank(raw)
        lineno += 1
        wrong = None  # what is wrong with a damaged line
        try:
            record = loads(raw) if not blank else None
            if not blank and not isinstance(record, dict):
                wrong = "not a JSON object"
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {lineno} is too large to read") from exc
            record, wrong = None, f"not valid JSON ({exc.msg})"
        bad = wrong is not None
        if last:
            if bad:
                out.torn_tail = lineno
                break  # being written: the next read starts here
            out.unterminated = record is not None
            out.end = size
        else:
            out.end = nl + 1
            out.lines = lineno
        if wrong is not None:
            out.skipped.add(lineno, wrong)
        elif record is not None:
            records.append((lineno, record))
        if last:
            break
        pos = nl + 1
    return out
