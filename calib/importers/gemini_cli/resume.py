"""Reading a JSONL log on from where the last read (`calib ingest`) stopped.

A log whose earlier bytes are unchanged (a hash of everything read before) and whose new lines are
only finished `MessageRecord`s with new ids (and metadata patches that keep the session's identity)
is laid out from where the last read stopped, with the builder state it ended with. Anything else (a
re-appended id, a rewind, a checkpoint, a tool-result turn that would drop tool results already
stored, a damaged line) reads the file whole, so the rows always equal those of a whole read. So does
a log holding a masked output (stored or new): whether and where one is read back from gemini-cli's
`tool-outputs/` files depends on the calls after it, which only a whole read sees.

A last line without its newline that does not parse is one gemini-cli is still writing: both reads
leave it out with a warning and stop before it, so the next read, once it is finished, appends it.
(A last line that parses without its newline is taken, as a whole read takes it; the log is then read
whole next time.)
"""

from __future__ import annotations

import hashlib
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from calib.importers import Increment
from calib.importers.common import unfinished_line
from calib.importers.gemini_cli.builder import Builder
from calib.importers.gemini_cli.content import has_function_response
from calib.importers.gemini_cli.document import (
    LAYOUT_JSONL,
    READ_MEMORY_FACTOR,
    SENT_TYPES,
    Document,
    Segment,
    read_document,
)
from calib.importers.gemini_cli.identity import NAME
from calib.importers.gemini_cli.session import build, session_row, ui_counts, uid_of
from calib.importers.logfile import is_blank, iter_lines, read_log_bytes, tail_warnings

# 2: part uids became `<session hash>:<seq>`; a log stored with the old ones is read whole once.
_RESUME_VERSION = 2
# Metadata a later line may patch without changing what the session is.
_FIXED_META = ("sessionId", "startTime", "kind")

_Messages = list[tuple[str, dict[str, Any]]]


def _prefix_digest(data: bytes, offset: int) -> str:
    return hashlib.blake2b(memoryview(data)[:offset], digest_size=16).hexdigest()


def _complete_end(data: bytes) -> int:
    """Bytes up to and with the last newline: the lines a writer has finished."""
    return data.rfind(b"\n") + 1


def _ends_in_tool_calls(message: dict[str, Any]) -> bool:
    """True for a `gemini` message with tool calls (their results may come in the next turn)."""
    if message.get("type") != "gemini":
        return False
    calls = message.get("toolCalls")
    return isinstance(calls, list) and any(isinstance(tc, dict) for tc in calls)


def _resume_state(
    data: bytes, doc: Document, builder: Builder, ui: dict[str, int]
) -> tuple[int, dict[str, Any]]:
    offset = _complete_end(data)
    last = builder.last_sent
    state = {
        "v": _RESUME_VERSION,
        "prefix": _prefix_digest(data, offset),
        "lines": data.count(b"\n", 0, offset),
        "ids": sorted(doc.latest),
        "meta": doc.meta,
        "segment": len(doc.segments) - 1,
        "prompt_start": builder.prompt_start,
        "parts": builder.pos(),
        "calls": builder.base_calls + len(builder.calls),
        "last_gemini_tools": last is not None and _ends_in_tool_calls(last[1]),
        "masked": builder.masked,
        "ui": ui,
        "rewinds": doc.rewinds,
        "unknown": doc.unknown_records,
    }
    return offset, state


def _appended(
    path: Path, data: bytes, offset: int, state: dict[str, Any]
) -> tuple[Document, _Messages, int] | None:
    """The records a log gained since `offset` when they only add new messages, and where they end;
    else None.

    None (read the file whole) whenever the earlier bytes changed or a new line could change rows
    already stored: a re-appended id, a rewind, a checkpoint, a patch of what identifies the session,
    a damaged line, a last line that parses without its newline. An unfinished last line that does
    not parse is left out with a warning, and the read ends before it.
    """
    if state.get("v") != _RESUME_VERSION or state.get("masked") or not (0 < offset <= len(data)):
        return None
    if _prefix_digest(data, offset) != state.get("prefix"):
        return None
    end = _complete_end(data)
    tail = data[end:]
    if end < offset or (tail.strip() and _parses(tail)):
        return None
    meta = dict(state["meta"])
    seen = set(state["ids"])
    doc = Document(meta, LAYOUT_JSONL, [Segment()], {}, {}, {}, int(state["rewinds"]), int(state["unknown"]))
    new: _Messages = []
    lineno = int(state["lines"])
    for raw in islice(iter_lines(data, offset, end), data.count(b"\n", offset, end)):
        lineno += 1
        if is_blank(raw):
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(record, dict) or "$rewindTo" in record:
            return None
        if isinstance(record.get("$set"), dict):
            patch = record["$set"]
            if "messages" in patch or any(k in patch and patch[k] != meta.get(k) for k in _FIXED_META):
                return None
            meta.update(patch)
        elif isinstance(record.get("id"), str) and record["id"]:
            key = record["id"]
            if key in seen:
                return None
            seen.add(key)
            new.append((key, record))
            doc.latest[key] = record
            doc.lines[key] = lineno
            if record.get("tokens") is not None:
                doc.usage[key] = record
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            if any(k in record and record[k] != meta.get(k) for k in _FIXED_META):
                return None
            meta.update(record)
        else:
            doc.unknown_records += 1
    if tail.strip():
        doc.unfinished = True
        doc.warnings.append(unfinished_line(path, lineno + 1, NAME))
    return doc, new, end


def _parses(line: bytes) -> bool:
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def read_increment(path: Path, offset: int = 0, state: dict[str, Any] | None = None) -> Increment:
    """Read a recording whole, or a JSONL log on from `offset` when it only gained new messages."""
    source = read_log_bytes(path, READ_MEMORY_FACTOR)
    data = source.data
    tail = tail_warnings(path, source, NAME)
    if path.suffix == ".jsonl" and state and offset:
        found = _appended(path, data, offset, state)
        if found is not None:
            doc, new, end = found
            sent = [(k, m) for k, m in new if m.get("type") in SENT_TYPES]
            first = sent[0][1] if sent else None
            # A tool-result turn after tool calls replaces the results already stored: read it whole.
            replaces = (
                state["last_gemini_tools"]
                and first is not None
                and first.get("type") == "user"
                and has_function_response(first)
            )
            if not replaces:
                doc.warnings.extend(tail)
                increment = _append_increment(path, data, end, doc, new, sent, state)
                if increment is not None:
                    return increment
    doc = read_document(path, data)
    doc.warnings.extend(tail)
    parsed, builder, ui = build(path, doc)
    if doc.layout == LAYOUT_JSONL and (doc.unfinished or data.rstrip(b" \t\r").endswith(b"\n")):
        # A log whose lines are all finished (but an unfinished last one left out) is read on from the
        # end of its last finished line next time.
        offset, resume = _resume_state(data, doc, builder, ui)
    else:
        offset, resume = len(data), {}
    return Increment([parsed, *doc.warnings], appended=False, offset=offset, state=resume)


def _append_increment(
    path: Path, data: bytes, end: int, doc: Document, new: _Messages, sent: _Messages, state: dict[str, Any]
) -> Increment | None:
    """The increment of the new messages; `end` is where the last finished line of the log `data` ends.
    None when they hold a masked output: the log is read whole instead."""
    uid = uid_of(path, doc.meta)
    builder = Builder(
        path,
        doc,
        uid,
        base_parts=int(state["parts"]),
        base_calls=int(state["calls"]),
        masked=int(state["masked"]),
    )
    builder.segment(doc.segments[0], sent=sent, prompt_start=int(state["prompt_start"]))
    if builder.masked:
        return None
    ui = ui_counts((m for _, m in new), into=state["ui"])
    session = session_row(path, doc, uid, builder.masked, ui, int(state["segment"]))
    offset = end
    resume = dict(state)
    resume.update(
        {
            "prefix": _prefix_digest(data, offset),
            "lines": data.count(b"\n", 0, offset),
            "ids": sorted({*state["ids"], *(k for k, _ in new)}),
            "meta": doc.meta,
            "prompt_start": builder.prompt_start if sent else state["prompt_start"],
            "parts": builder.pos(),
            "calls": builder.base_calls + len(builder.calls),
            "last_gemini_tools": _ends_in_tool_calls(sent[-1][1])
            if sent
            else bool(state["last_gemini_tools"]),
            "masked": builder.masked,
            "ui": ui,
            "unknown": doc.unknown_records,
        }
    )
    parsed = builder.session(session)
    return Increment([parsed, *doc.warnings], appended=True, offset=offset, state=resume)
