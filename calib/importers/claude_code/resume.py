"""Reading a transcript again after it grew, storing only what is new (`calib ingest`).

Claude Code appends to its transcripts. The file is read whole each time (the tree decides which
path every line belongs to, and a late line can change an earlier call: a larger `output_tokens`, a
fork, a microcompaction), and the result is compared with what the last read stored: when the bytes
read before are unchanged (a hash of them), no session appeared or vanished, and every session's
stored parts and calls are exactly the first ones of the new read, only the new parts and calls are
handed back (`appended`). Anything else hands back the whole read. So the stored rows always equal
those of one whole `parse`, and an append costs the store only its new rows. A last line still being
written is left out with a warning, and the next read takes it once finished. A damaged line is warned
about by the read that first reaches it, and again by every read handed back whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calib.core.records import ParsedSession
from calib.importers import Increment
from calib.importers.claude_code.log import READ_MEMORY_FACTOR, read_log
from calib.importers.claude_code.session import line_warnings, parse_sessions
from calib.importers.logfile import read_log_bytes

_RESUME_VERSION = 1


def _prefix_digest(data: bytes, offset: int, start: int = 0) -> str:
    return hashlib.blake2b(memoryview(data)[start : start + offset], digest_size=16).hexdigest()


def _rows_digest(rows: Sequence[object]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for row in rows:
        digest.update(repr(row).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _state(prefix: str, sessions: list[ParsedSession]) -> dict[str, Any]:
    return {
        "v": _RESUME_VERSION,
        "prefix": prefix,
        "sessions": [
            [p.session.uid, len(p.parts), len(p.calls), _rows_digest([*p.parts, *p.calls])] for p in sessions
        ],
    }


def _appended(sessions: list[ParsedSession], state: dict[str, Any]) -> list[ParsedSession] | None:
    """The new rows of each session when the stored ones are the start of this read, else None."""
    stored = state.get("sessions")
    if not isinstance(stored, list) or len(stored) != len(sessions):
        return None
    out = []
    for entry, parsed in zip(stored, sessions, strict=True):
        uid, n_parts, n_calls, digest = entry
        if parsed.session.uid != uid or len(parsed.parts) < n_parts or len(parsed.calls) < n_calls:
            return None
        if _rows_digest([*parsed.parts[:n_parts], *parsed.calls[:n_calls]]) != digest:
            return None
        out.append(ParsedSession(parsed.session, parsed.calls[n_calls:], parsed.parts[n_parts:]))
    return out


def read_increment(path: Path, offset: int = 0, state: dict[str, Any] | None = None) -> Increment:
    """Read a transcript; only its new rows when it grew at the end of what the last read stored."""
    source = read_log_bytes(path, READ_MEMORY_FACTOR)
    log = read_log(path, source)
    # What the resume needs of the bytes is taken now, so that they are freed before the sessions are
    # laid out (offsets count from after a byte-order mark, as `read_log`'s do).
    data = source.data
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    prefix = _prefix_digest(data, log.end, bom)
    stored = state or None  # what the last read stored (None: read whole)
    if stored is not None and not (
        stored.get("v") == _RESUME_VERSION
        and 0 < offset <= log.end
        and _prefix_digest(data, offset, bom) == stored.get("prefix")
    ):
        stored = None
    # The lines before `offset` were read, and warned about, by the read that gave `state`.
    warned_lines = data.count(b"\n", bom, bom + offset) if stored is not None else 0
    del source, data
    sessions = parse_sessions(path, log=log)
    resume = _state(prefix, sessions)
    if stored is not None:
        new = _appended(sessions, stored)
        if new is not None:
            warned = line_warnings(path, log, after=warned_lines)
            return Increment([*new, *warned], appended=True, offset=log.end, state=resume)
    return Increment([*sessions, *line_warnings(path, log)], appended=False, offset=log.end, state=resume)
