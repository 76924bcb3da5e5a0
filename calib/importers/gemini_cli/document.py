"""Reading a recording in any of its layouts into its metadata and its timeline of messages.

Layouts:
- `gemini-json-string` / `gemini-json-parts`: one legacy JSON `ConversationRecord`. The name reports the
  shape: any Part-list content makes it `-parts`; a file whose contents are all strings reads as
  `-string` whatever version wrote it (both parse the same way).
- `gemini-jsonl`: the append log. Line 1 is metadata; the last line with a given message id wins;
  `{"$set": ...}` patches metadata; `$set.messages` is a checkpoint that replaces the message list;
  `{"$rewindTo": id}` drops that message and everything after it.

A log is read line by line, and one bad line costs that line, not the session: a line after the
metadata that is not a JSON object is left out with an `InputWarning` naming its line, and so is a
last line without its newline that does not parse (gemini-cli is still writing it: the next read,
once it is finished, adds it); beyond the first few, such lines are only counted
(`calib.core.tally.WarningTally`). Only a log whose metadata line is unreadable fails as a whole. NUL
bytes at the end of a file (a crash) are never read (`calib.importers.logfile.read_log_bytes`), and
a warning says how many were left out.

The timeline is a list of segments: segment 0 is the log from the start, each later one starts at a
checkpoint. Checkpoints keep every call ever recorded, so the messages before one are kept too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import orjson

from calib.core.errors import InputError
from calib.core.tally import WarningTally
from calib.importers.common import damaged_line, unfinished_line
from calib.importers.gemini_cli.identity import NAME
from calib.importers.gemini_cli.sniff import first_line
from calib.importers.logfile import is_blank, iter_lines, out_of_memory, read_log_bytes, tail_warnings

LAYOUT_STRING = "gemini-json-string"
LAYOUT_PARTS = "gemini-json-parts"
LAYOUT_JSONL = "gemini-jsonl"
LAYOUTS = (LAYOUT_STRING, LAYOUT_PARTS, LAYOUT_JSONL)

# Message types sent to the model; `info` / `error` / `warning` ones are only shown to the user.
SENT_TYPES = frozenset(("user", "gemini"))
DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
_OTHER_FORMAT_HINT = "pass only files from ~/.gemini/tmp/<project>/chats, or another --format"
# Memory a recording takes to read and lay out, per byte of it (a 200 MB one peaks 700 MB above the
# command's own; `tests/benchmarks/bench_extremes.py`), with a margin.
READ_MEMORY_FACTOR = 4.5


@dataclass(slots=True)
class Segment:
    """Messages in order, keyed by message id; each segment after the first starts at a checkpoint."""

    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    checkpoint_ids: frozenset[str] = frozenset()


@dataclass(slots=True)
class Document:
    """A recording read: its metadata, layout and timeline."""

    meta: dict[str, Any]
    layout: str
    segments: list[Segment]
    latest: dict[str, dict[str, Any]]  # last version of each message id anywhere in the file
    lines: dict[str, int]  # JSONL: line of the version a call's usage is read from
    # Last version of each id that recorded tokens: a checkpoint copy without them must not lose usage.
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    rewinds: int = 0
    unknown_records: int = 0
    # Lines left out (JSONL): the first few in full, the rest counted.
    warnings: WarningTally = field(default_factory=WarningTally)
    unfinished: bool = False  # the last line, without its newline, did not parse and was left out


def _message_key(message: dict[str, Any], index: int) -> str:
    mid = message.get("id")
    return mid if isinstance(mid, str) and mid else f"#m{index}"


# The legacy layout decoded into only the fields this importer reads. The rest (`resultDisplay`,
# `description` and the like: two fifths of the bytes of the shared fixtures) is skipped, never built.
# A file these shapes do not fit is decoded again in full, so that its error is reported as usual.
class _LegacyToolCall(TypedDict, total=False):
    name: Any
    args: Any
    result: Any
    timestamp: Any


class _LegacyMessage(TypedDict, total=False):
    id: Any
    type: Any
    content: Any
    timestamp: Any
    model: Any
    tokens: Any
    thoughts: Any
    toolCalls: list[_LegacyToolCall] | None


class _LegacyRecord(TypedDict, total=False):  # the metadata the session row reads
    sessionId: Any
    projectHash: Any
    startTime: Any
    lastUpdated: Any
    summary: Any
    kind: Any
    directories: Any
    messages: list[_LegacyMessage]


_LEGACY_DECODER = msgspec.json.Decoder(_LegacyRecord)


def _decode_legacy(path: Path, data: bytes) -> Any:
    try:
        return _LEGACY_DECODER.decode(data)
    except msgspec.DecodeError:  # not JSON, or not shaped like a recording: decode it whole
        pass
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno, hint=DAMAGED_HINT
        ) from exc


def _read_legacy(path: Path, data: bytes) -> Document:
    record = _decode_legacy(path, data)
    if not isinstance(record, dict) or not isinstance(record.get("sessionId"), str):
        raise InputError(
            "not a gemini-cli session: no sessionId at the top level", path=str(path), hint=_OTHER_FORMAT_HINT
        )
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise InputError(
            "not a gemini-cli session: `messages` is missing or not a list",
            path=str(path),
            hint=DAMAGED_HINT,
        )
    segment = Segment()
    layout = LAYOUT_STRING
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InputError(f"message {index} is not a JSON object", path=str(path), hint=DAMAGED_HINT)
        if not isinstance(message.get("content"), str | None):
            layout = LAYOUT_PARTS
        key = _message_key(message, index)
        if key in segment.messages:  # a repeated id is a message of its own, not a new version
            key = f"{key}#m{index}"
        segment.messages[key] = message
    meta = {k: v for k, v in record.items() if k != "messages"}
    return Document(meta, layout, [segment], dict(segment.messages), {})


def _read_jsonl(path: Path, data: bytes) -> Document:
    meta: dict[str, Any] | None = None
    segments = [Segment()]
    latest: dict[str, dict[str, Any]] = {}
    usage: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    rewinds = unknown = 0
    warnings = WarningTally(str(path))
    unfinished = False
    last = data.count(b"\n") + 1  # the line after the final newline
    for lineno, raw in enumerate(iter_lines(data), 1):
        if is_blank(raw):
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {lineno} is too large to read") from exc
            if meta is None:
                raise InputError(
                    f"this line is not valid JSON ({exc.msg})",
                    path=str(path),
                    line=lineno,
                    hint=DAMAGED_HINT,
                ) from exc
            if lineno == last:  # no newline after it: still being written
                unfinished = True
                warnings.append(unfinished_line(path, lineno, NAME))
            else:
                warnings.append(damaged_line(path, lineno, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            if meta is None:
                raise InputError(
                    "this line is not a JSON object", path=str(path), line=lineno, hint=DAMAGED_HINT
                )
            warnings.append(damaged_line(path, lineno, "not a JSON object"))
            continue
        if meta is None:
            if not (isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)):
                raise InputError(
                    "the first line is not gemini-cli session metadata (no sessionId and projectHash)",
                    path=str(path),
                    line=lineno,
                    hint=_OTHER_FORMAT_HINT,
                )
            meta = dict(record)
            continue
        current = segments[-1].messages
        if isinstance(record.get("$rewindTo"), str):
            rewinds += 1
            target = record["$rewindTo"]
            if target in current:
                keys = list(current)
                for key in keys[keys.index(target) :]:
                    del current[key]
            else:  # gemini-cli's own reader drops everything when the target is unknown
                current.clear()
        elif isinstance(record.get("$set"), dict):
            patch = record["$set"]
            checkpoint = patch.get("messages")
            bad = (
                next((i for i, m in enumerate(checkpoint) if not isinstance(m, dict)), None)
                if isinstance(checkpoint, list)
                else None
            )
            if bad is not None:
                warnings.append(damaged_line(path, lineno, f"checkpoint message {bad} is not a JSON object"))
                continue
            if isinstance(checkpoint, list) and checkpoint:
                segment = Segment()
                for index, message in enumerate(checkpoint):
                    key = _message_key(message, index)
                    segment.messages[key] = message
                    latest[key] = message
                    if message.get("tokens") is not None or key not in usage:
                        lines[key] = lineno
                    if message.get("tokens") is not None:
                        usage[key] = message
                segment.checkpoint_ids = frozenset(segment.messages)
                segments.append(segment)
            meta.update({k: v for k, v in patch.items() if k != "messages"})
        elif isinstance(record.get("id"), str) and record["id"]:
            key = record["id"]
            current[key] = record  # a dict keeps the first position of a re-appended key
            latest[key] = record
            if record.get("tokens") is not None or key not in usage:
                lines[key] = lineno
            if record.get("tokens") is not None:
                usage[key] = record
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            meta.update(record)
        else:
            unknown += 1  # a record kind from a newer version; it holds no message
    if meta is None:
        raise InputError("no records, only blank lines", path=str(path), hint=DAMAGED_HINT)
    return Document(
        meta, LAYOUT_JSONL, segments, latest, lines, usage, rewinds, unknown, warnings, unfinished
    )


def read_document(path: Path, data: bytes | None = None) -> Document:
    """Read a recording in any layout (its bytes `data`, if already read, without their NUL tail) into
    metadata and timeline."""
    if data is None:
        source = read_log_bytes(path, READ_MEMORY_FACTOR)
        doc = read_document(path, source.data)
        doc.warnings.extend(tail_warnings(path, source, NAME))
        return doc
    if not data.strip():
        raise InputError("empty file", path=str(path), hint="it holds no session; delete it or leave it out")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if path.suffix == ".jsonl":
        return _read_jsonl(path, data)
    first = first_line(data.lstrip())
    if first.strip() != b"{":
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "messages" not in record and "sessionId" in record:
            return _read_jsonl(path, data)
    return _read_legacy(path, data)
