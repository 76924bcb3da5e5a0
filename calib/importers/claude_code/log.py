"""Reading a transcript's bytes into its records, line by line.

- Each line is one JSON object. A line in the middle that does not parse (a torn write, a damaged
  copy) is skipped and counted (`skipped_lines` in the session meta); so is a line that is not an
  object. The first few are reported as `InputWarning`s naming their lines, the rest counted
  (`calib.importers.claude_code.session`).
- A last line without its newline that does not parse is a line still being written: it is not an
  error; reading stops before it (a warning names it), and the next read takes it once it is finished.
- NUL bytes at the end of the file (a crash) are not read (`calib.importers.logfile.read_log_bytes`);
  a warning says how many were left out (`nul_tail`).
- A file with no Claude Code record at all is not a transcript: `InputError` naming the file.
- The lines are read one at a time from the bytes (never split all at once), and each record drops
  `toolUseResult`, which nothing reads, as it is decoded: a transcript is held once as bytes and once
  as records, not more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError
from calib.core.tally import LinesLeftOut
from calib.importers.claude_code.sniff import is_record
from calib.importers.logfile import LogBytes, is_blank, iter_lines, out_of_memory

DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
OTHER_FORMAT_HINT = "pass only files from ~/.claude/projects/<project>/, or another --format"
# Memory a transcript takes to read and lay out, per byte of it (a 200 MB one peaks 500 MB above the
# command's own; `tests/benchmarks/bench_extremes.py`), with a margin.
READ_MEMORY_FACTOR = 3.0


@dataclass(slots=True)
class Log:
    """A transcript read: its records with their 1-based line numbers, and what was left out."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # Lines that were not JSON objects, each with what is wrong with it (compact: a log may hold millions).
    skipped: LinesLeftOut = field(default_factory=LinesLeftOut)
    end: int = 0  # bytes of the lines read (up to and with the newline of the last finished line)
    torn_tail: int = 0  # the line still being written, left for the next read (0: none)
    nul_tail: int = 0  # NUL bytes after the last line, never read (`calib.importers.logfile`)
    nul_line: int = 0  # the line they start on


def read_log(path: Path, data: bytes | LogBytes) -> Log:
    """The records of a transcript's bytes (read by `read_log_bytes`: without its NUL tail); raises
    `InputError` when it holds no Claude Code record."""
    log = Log()
    if isinstance(data, LogBytes):
        if data.nul_tail:
            log.nul_tail, log.nul_line = data.nul_tail, data.nul_line()
        data = data.data
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # skipped in place: a copy would double the log
    last = data.count(b"\n", bom)  # the index of the bytes after the final newline
    pos = start = 0
    records = log.records
    loads = orjson.loads
    for index, raw in enumerate(iter_lines(data, bom)):
        start = pos
        pos += len(raw) + 1
        if is_blank(raw):
            continue
        try:
            record = loads(raw)
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {index + 1} of {path} is too large to read") from exc
            if index == last:
                log.torn_tail = index + 1
                log.end = start
                break
            log.skipped.add(index + 1, f"not valid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict):
            log.skipped.add(index + 1, "not a JSON object")
            continue
        # the UI's structured copy of a tool's output (a file read whole, a command's output): never
        # read here, and often the largest field of a transcript
        record.pop("toolUseResult", None)
        records.append((index + 1, record))
    else:
        log.end = start  # the final newline's end (or the start of a last line without one)
    if not any(is_record(r) for _, r in records):
        if not records and not log.skipped and not log.torn_tail:
            raise InputError(
                "empty file", path=str(path), hint="it holds no session; delete it or leave it out"
            )
        line = log.skipped.first() if log.skipped and not records else (records[0][0] if records else 1)
        raise InputError(
            "not a Claude Code transcript: no line is a Claude Code record (sessionId and type)",
            path=str(path),
            line=line,
            hint=OTHER_FORMAT_HINT if records else DAMAGED_HINT,
        )
    return log
