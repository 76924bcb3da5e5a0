"""Reading a transcript's bytes into its records, line by line.

- Each line is one JSON object. A line in the middle that does not parse (a torn write, a damaged
  copy) is skipped and counted (`skipped_lines` in the session meta); so is a line that is not an
  object. The first few are reported as `InputWarning`s naming their lines, the rest counted
  (`calib.importers.claude_code.session`).
- A last line without its newline that does not parse is a line still being written: it is not an
  error; reading stops before it (a warning names it), and the next read takes it once it is finished.
- A file with no Claude Code record at all is not a transcript: `InputError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError
from calib.core.tally import LinesLeftOut
from calib.importers.claude_code.sniff import is_record

DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
OTHER_FORMAT_HINT = "pass only files from ~/.claude/projects/<project>/, or another --format"


@dataclass(slots=True)
class Log:
    """A transcript read: its records with their 1-based line numbers, and what was left out."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # Lines that were not JSON objects, each with what is wrong with it (compact: a log may hold millions).
    skipped: LinesLeftOut = field(default_factory=LinesLeftOut)
    end: int = 0  # bytes of the lines read (up to and with the newline of the last finished line)
    torn_tail: int = 0  # the line still being written, left for the next read (0: none)


def read_log(path: Path, data: bytes) -> Log:
    """The records of a transcript's bytes; raises `InputError` when it holds no Claude Code record."""
    log = Log()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    chunks = data.split(b"\n")
    last = len(chunks) - 1  # the bytes after the final newline (empty when the file ends with one)
    pos = 0
    records = log.records
    loads = orjson.loads
    for index, raw in enumerate(chunks):
        start = pos
        pos += len(raw) + 1
        if not raw.strip():
            continue
        try:
            record = loads(raw)
        except orjson.JSONDecodeError as exc:
            if index == last:
                log.torn_tail = index + 1
                log.end = start
                break
            log.skipped.add(index + 1, f"not valid JSON ({exc.msg})")
            continue
        if not isinstance(record, dict):
            log.skipped.add(index + 1, "not a JSON object")
            continue
        records.append((index + 1, record))
    else:
        log.end = len(data) if data.endswith(b"\n") else len(data) - len(chunks[last])
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
