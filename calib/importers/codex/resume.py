"""Reading a rollout on from where the last read (`calib ingest`) stopped.

Codex only appends to a rollout. A read keeps, as its resume state, the offset just past the last
complete line, a hash of every byte before it and the builder's state. The next read lays out only
the new lines from there when the earlier bytes are unchanged, and reads the file whole otherwise
(rewritten, shortened, or a last line that had no newline yet parsed). Two cases would change rows
already stored (`Builder.touched_stored`), and then the file is read whole too: model output written
before the last read, still waiting for its `token_count`, that a new line now gives a call; and a new
turn starting after reasoning of the open turn that an earlier read stored (that reasoning now gets
its `pruned_at`). A new turn whose open turn's reasoning is all among the new lines, or that follows
no reasoning, is read on from the offset. So the stored rows after any sequence of reads equal those
of one whole read. A line cut off at the end is
left for the next read (the offset stays before it), with a warning each time it is met. A damaged
line is warned about by the read that reads it: the first one to reach it, and every whole read.

An archived rollout whose `sessions/` copy exists yields nothing (`calib.importers.codex.home`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from calib.core.records import ParsedSession
from calib.importers import Increment
from calib.importers.codex.builder import Builder
from calib.importers.codex.home import live_counterpart
from calib.importers.codex.identity import NAME, session_uid
from calib.importers.codex.reader import READ_MEMORY_FACTOR, Lines, read_lines
from calib.importers.codex.session import build, head_record, line_warnings, session_row
from calib.importers.logfile import read_log_bytes, tail_warnings

_RESUME_VERSION = 2  # 2: the builder keeps the open turn and its reasoning


def _digest(data: bytes, offset: int) -> str:
    return hashlib.blake2b(memoryview(data)[:offset], digest_size=16).hexdigest()


def _state(data: bytes, lines: Lines, builder: Builder) -> tuple[int, dict[str, Any]]:
    if lines.unterminated:
        return len(data), {}  # the last line may still change: read whole next time
    return lines.end, {
        "v": _RESUME_VERSION,
        "prefix": _digest(data, lines.end),
        "lines": lines.lines,
        "builder": builder.state(),
    }


def _appended(path: Path, data: bytes, offset: int, state: dict[str, Any]) -> Increment | None:
    """The increment of the lines after `offset`, or None when the file must be read whole."""
    if state.get("v") != _RESUME_VERSION or not (0 < offset <= len(data)):
        return None
    if _digest(data, offset) != state.get("prefix"):
        return None
    # The first line is in the unchanged prefix: it names the session and holds the system prompt.
    head = read_lines(data[: data.find(b"\n") + 1])
    _, record, meta = head_record(path, head)
    saved = dict(state["builder"])
    builder = Builder(session_uid(str(meta.get("id") or meta.get("session_id"))), meta, saved)
    lines = read_lines(data, offset, int(state["lines"]))
    for lineno, rec in lines.records:
        builder.feed(lineno, rec)
    if builder.touched_stored:
        return None
    builder.count("skipped_lines", len(lines.skipped))
    session = session_row(path, record, meta, builder)
    offset, resume = _state(data, lines, builder)
    parsed = ParsedSession(session, builder.calls, builder.parts)
    return Increment([parsed, *line_warnings(path, lines)], True, offset, resume)


def read_increment(path: Path, offset: int = 0, state: dict[str, Any] | None = None) -> Increment:
    """Read a rollout whole, or on from `offset` when it only gained lines since the read that gave `state`."""
    if live_counterpart(path) is not None:
        return Increment([], appended=False, offset=0, state={})
    source = read_log_bytes(path, READ_MEMORY_FACTOR)
    data = source.data
    tail = tail_warnings(path, source, NAME)
    if state and offset:
        found = _appended(path, data, offset, state)
        if found is not None:
            found.records.extend(tail)
            return found
    parsed, builder, lines = build(path, data)
    offset, resume = _state(data, lines, builder)
    warned = [*line_warnings(path, lines), *tail]
    return Increment([parsed, *warned], appended=False, offset=offset, state=resume)
