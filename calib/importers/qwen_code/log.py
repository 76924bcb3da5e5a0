"""Reading a chat log's bytes into its records, line by line (the rules of the package docstring).

- A line that does not parse, is not a JSON object or is not a `ChatRecord` is left out and counted;
  the first few are warned about by line, the rest counted (`line_warnings`).
- A last line without its newline that does not parse is still being written: reading stops before
  it, with a warning; a later read takes it once it is finished.
- NUL bytes after the last line (a crash) are never read; a warning says how many.
- A file with no `ChatRecord` at all is not a chat log, and one written by a Qwen Code whose major
  version calib does not know is not read: `InputError` naming the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning, MoreWarnings
from calib.core.tally import LinesLeftOut
from calib.importers.common import damaged_line, unfinished_line
from calib.importers.logfile import LogBytes, is_blank, iter_lines, nul_tail_warning, out_of_memory
from calib.importers.qwen_code.sniff import is_record

NAME = "qwen-code"
# The Qwen Code releases whose chat log calib reads: 0.x (the `version` field of every record).
KNOWN_MAJOR = 0
_VERSION = re.compile(r"^v?(\d+)\.\d+")
DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
# Memory a log takes to read and lay out, per byte of it (as for Claude Code's transcripts), with a margin.
READ_MEMORY_FACTOR = 3.0


@dataclass(slots=True)
class Log:
    """A chat log read: its records with their 1-based line numbers, and what was left out."""

    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    skipped: LinesLeftOut = field(default_factory=LinesLeftOut)
    torn_tail: int = 0  # the line still being written (0: none)
    nul_tail: int = 0
    nul_line: int = 0


def read_log(path: Path, data: LogBytes) -> Log:
    """The records of a chat log's bytes; raises `InputError` when it holds none, or holds a version
    calib does not know."""
    log = Log(nul_tail=data.nul_tail, nul_line=data.nul_line() if data.nul_tail else 0)
    raw_bytes = data.data
    bom = 3 if raw_bytes.startswith(b"\xef\xbb\xbf") else 0
    last = raw_bytes.count(b"\n", bom)
    for index, raw in enumerate(iter_lines(raw_bytes, bom)):
        if is_blank(raw):
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {index + 1} of {path} is too large to read") from exc
            if index == last:
                log.torn_tail = index + 1
                break
            log.skipped.add(index + 1, f"not valid JSON ({exc.msg})")
            continue
        if not is_record(record):
            what = "not a JSON object" if not isinstance(record, dict) else "not a Qwen Code chat record"
            log.skipped.add(index + 1, what)
            continue
        log.records.append((index + 1, record))
    if not log.records:
        if not log.skipped and not log.torn_tail:
            raise InputError(
                "empty file", path=str(path), hint="it holds no session; delete it or leave it out"
            )
        raise InputError(
            "not a Qwen Code chat log: no line is a chat record (uuid, sessionId, type)",
            path=str(path),
            line=log.skipped.first() or log.torn_tail or None,
            hint=DAMAGED_HINT,
        )
    for lineno, record in log.records:
        version = record.get("version")
        match = _VERSION.match(version) if isinstance(version, str) else None
        if match is not None and int(match.group(1)) > KNOWN_MAJOR:
            raise InputError(
                f"written by Qwen Code {version}, whose chat log format calib does not know "
                f"(it reads {KNOWN_MAJOR}.x)",
                path=str(path),
                line=lineno,
                hint="update calib, or leave this file out (the other files were still imported)",
            )
    return log


def line_warnings(path: Path, log: Log) -> list[InputWarning]:
    """A warning for each of the first few lines left out and a count of the rest, then one for an
    unfinished last line and one for NUL bytes after the last line."""
    kept, more = log.skipped.after(0)
    out: list[InputWarning] = [damaged_line(path, n, why) for n, why in kept]
    if more:
        out.append(MoreWarnings(more, path=str(path)))
    if log.torn_tail:
        out.append(unfinished_line(path, log.torn_tail, NAME))
    if log.nul_tail:
        out.append(nul_tail_warning(path, log.nul_tail, log.nul_line, NAME))
    return out
