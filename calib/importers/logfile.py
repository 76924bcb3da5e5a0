"""Reading an agent's line log (JSONL) into memory: its bytes once, its lines one at a time.

- `read_log_bytes` reads a log up to the NUL bytes a crash can leave at its end (the file system
  extended the file but the data never landed). Those bytes are never read into memory: the end of the
  file is searched backwards, block by block, for the last byte that is not NUL, and only the bytes
  before it are read. The importers leave the tail out with a warning (`nul_tail_warning`). A log
  whose read would take more memory than is available fails first, with its size and the bound.
- `iter_lines` gives the lines of the bytes read one at a time, as views of them: a log is never held
  twice (a `split` would copy every line at once), nor is its longest line (a tool's output of 200 MB
  is decoded from the log's own bytes; `is_blank` tells an empty line without copying it).
- `out_of_memory` tells orjson's failure to allocate from a line that is not JSON: the importers raise
  `MemoryError` for it rather than call a line damaged that is not.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from calib.core import memory
from calib.core.errors import FileWarning, InputWarning
from calib.core.paths import open_regular

# The first block read backwards from the end of a file in search of its last byte that is not NUL;
# each further block is twice as large, up to `_NUL_BLOCK_MAX`.
_NUL_BLOCK = 64 << 10
_NUL_BLOCK_MAX = 8 << 20


@dataclass(slots=True)
class LogBytes:
    """A log's bytes up to its NUL tail (`data`) and how many NUL bytes followed them (`nul_tail`)."""

    data: bytes
    nul_tail: int = 0

    def nul_line(self) -> int:
        """The line the NUL tail starts on (1-based)."""
        return self.data.count(b"\n") + 1


def read_log_bytes(path: Path, memory_factor: float) -> LogBytes:
    """The bytes of the log at `path` without the NUL bytes at its end, which are never read.

    `memory_factor` is how many times its size in memory the importer takes to read a log and lay out
    its rows (measured by `tests/benchmarks/bench_extremes.py`): a log that needs more than the memory
    available fails before it is read (`calib.core.memory.check_fits`)."""
    with open_regular(path) as fh:  # a FIFO put in its place is never opened
        size = os.fstat(fh.fileno()).st_size
        end = _data_end(fh.fileno(), size)
        memory.check_fits(path, end, memory_factor)
        data = fh.read(end) if end else b""
    if len(data) < end:  # the file shrank meanwhile: what is there is the log
        end = len(data)
    return LogBytes(data, max(0, size - end))


def _data_end(fd: int, size: int) -> int:
    """The offset just past the last byte of the file that is not NUL (0: none)."""
    end = size
    block = _NUL_BLOCK
    while end > 0:
        start = max(0, end - block)
        chunk = os.pread(fd, end - start, start)
        if not chunk:  # the file shrank meanwhile
            end = start
            continue
        kept = len(chunk.rstrip(b"\0"))
        if kept:
            return start + kept
        end = start
        block = min(block * 2, _NUL_BLOCK_MAX)
    return 0


def iter_lines(data: bytes, start: int = 0, stop: int | None = None) -> Iterator[memoryview]:
    """The lines of `data[start:stop]`, one at a time, without their newline, as views of `data` (no
    copy); the last one is what follows the final newline (empty when the range ends with one), as
    `data[start:stop].split(b"\\n")` would give them all at once."""
    find = data.find
    view = memoryview(data)
    end = len(data) if stop is None else stop
    pos = start
    while True:
        nl = find(b"\n", pos, end)
        if nl < 0:
            yield view[pos:end]
            return
        yield view[pos:nl]
        pos = nl + 1


# What `bytes.strip` strips.
_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]*")


def is_blank(line: bytes | memoryview) -> bool:
    """True for a line of nothing but white space (`not line.strip()`, without copying it)."""
    return _BLANK.fullmatch(line) is not None


def out_of_memory(exc: orjson.JSONDecodeError) -> bool:
    """True when orjson failed for want of memory, not because the text is not JSON."""
    return exc.msg.startswith("Not enough memory")


def nul_tail_warning(path: Path, nbytes: int, line: int, agent: str) -> FileWarning:
    """The warning for the `nbytes` NUL bytes from line `line` on, after a log's last line, left out."""
    return FileWarning(
        f"{nbytes:,} NUL bytes after the last line ({agent} may have crashed); left out",
        path=str(path),
        line=line,
        hint="the lines before them were imported",
    )


def tail_warnings(path: Path, log: LogBytes, agent: str) -> list[InputWarning]:
    """`nul_tail_warning` of a log read with a NUL tail, else nothing."""
    return [nul_tail_warning(path, log.nul_tail, log.nul_line(), agent)] if log.nul_tail else []
