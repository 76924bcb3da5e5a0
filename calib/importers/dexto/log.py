"""Dexto's log files: JSON lines whose `Context estimation accuracy` entries pair its estimate with the actual.

Layouts (reference/formats.md section 3.1): `logs/<agentId>/<sessionId>.log` (1.5.7+),
`logs/<agentId>.log` (1.2.5-1.5.6) and `logs/dexto.log` (winston, up to 1.2.4), each rotated to `.1`...
A line is `{level, message, timestamp, component, agentId, sessionId?, context?}`; lines that are not
JSON objects (older or foreign formats, a line cut by a crash) are skipped, not errors. A last line
without its newline that does not parse is one Dexto is still writing: it is left out with a warning
(`InputWarning`), and the next ingest reads it once it is complete. A pair whose numbers are not token
counts (`calib.core.usage.token_counts`: negative, or beyond 2**53) is left out with a warning too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson

from calib.core.errors import InputWarning
from calib.core.records import AgentEstimate
from calib.core.usage import token_counts
from calib.importers.common import damaged_line, timestamp, unfinished_line

TOOL = "dexto"
_NAME = re.compile(r"^(?P<stem>.+)\.log(?:\.\d+)?$")
_ACCURACY = re.compile(r"Context estimation accuracy: estimated=(-?\d+), actual=(-?\d+)")
_MARKER = b"Context estimation accuracy"
_SHARED_LOG = "dexto"  # logs/dexto.log: one file for every agent and session
_NOT_COUNTS = "an estimate pair whose numbers are not token counts"


def looks_like_log(path: Path, head: bytes) -> bool:
    """A `.log` file (or rotation) under a `logs` folder whose first line is a JSON log entry."""
    if not _NAME.match(path.name):
        return False
    parents = [p.name for p in path.parents][:2]
    if "logs" not in parents:
        return False
    first = head.lstrip().split(b"\n", 1)[0]
    if not first.startswith(b"{"):
        return False
    try:
        entry = orjson.loads(first)
    except orjson.JSONDecodeError:
        # The first entry may be longer than the sniffed head; its keys still show its shape.
        return b'"level":' in first and b'"message":' in first
    return isinstance(entry, dict) and "level" in entry and "message" in entry


def _file_context(path: Path) -> tuple[str | None, str | None]:
    """(agent, session id) implied by where the file is, when its lines do not say."""
    match = _NAME.match(path.name)
    stem = match.group("stem") if match else path.stem
    if path.parent.name == "logs":
        return (None if stem == _SHARED_LOG else stem), None
    if path.parent.parent.name == "logs":
        # Session ids are sanitised in file names (non [A-Za-z0-9._-] became "_"); a line's own
        # sessionId wins over this.
        return path.parent.name, stem
    return None, None


def parse_log(path: Path) -> Iterator[AgentEstimate | InputWarning]:
    """Every estimate-versus-actual pair Dexto logged in one file (and a warning for an unfinished last line)."""
    file_agent, file_session = _file_context(path)
    source = str(path)
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):  # the last line, still being written unless it parses
                try:
                    orjson.loads(raw)
                except orjson.JSONDecodeError:
                    if raw.strip():
                        yield unfinished_line(path, number, TOOL)
                    continue
            if _MARKER not in raw:
                continue
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(entry, dict):
                continue
            message = entry.get("message")
            match = _ACCURACY.search(message) if isinstance(message, str) else None
            if match is None:
                continue
            context = entry.get("context")
            if not isinstance(context, dict):
                context = {}
            session_id = entry.get("sessionId") or context.get("sessionId") or file_session
            agent = entry.get("agentId") or file_agent
            pair = token_counts(int(match.group(1)), int(match.group(2)))
            if pair is None:
                yield damaged_line(path, number, _NOT_COUNTS, "the other pairs were imported")
                continue
            estimated, actual = pair
            # Lines of the shared per-agent logs may name no session; they still count as pairs.
            session_uid = f"{TOOL}:{session_id}" if isinstance(session_id, str) and session_id else None
            yield AgentEstimate(
                session_uid=session_uid,
                source_path=source,
                line=number,
                estimated=estimated or 0,
                actual=actual or 0,
                ts=timestamp(entry.get("timestamp")),
                agent=agent if isinstance(agent, str) else None,
            )
