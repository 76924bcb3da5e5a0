"""gemini-cli importer: the chat recordings under `~/.gemini/tmp/<project>/chats/` (formats.md section 1).

Layouts (all read by `parse`):
- `gemini-json-string` / `gemini-json-parts`: one legacy JSON `ConversationRecord`. The name reports the
  shape: any Part-list content makes it `-parts`; a file whose contents are all strings reads as
  `-string` whatever version wrote it (both parse the same way).
- `gemini-jsonl`: the append log. Line 1 is metadata; the last line with a given message id wins;
  `{"$set": ...}` patches metadata; `$set.messages` is a checkpoint that replaces the message list;
  `{"$rewindTo": id}` drops that message and everything after it.

Choices this module makes (the record contract is `calib.core.records`):
- Session uid `gemini-cli:<sessionId>:<startTime>`: one sessionId spans a file per /clear, and a legacy
  `.json` converted to `.jsonl` on resume keeps its startTime, so both files map to one session.
- One call per `gemini` message (its last version). A `gemini` message with neither `model` nor
  `tokens` is a synthetic history turn gemini-cli wrote itself (a compression acknowledgement, the
  "Binary content received" note): its parts are kept, but it is not a call.
- Thought summaries become `reasoning` parts (`resent=False`), one per thought, with the text gemini-cli
  parsed them from rebuilt: `**<subject>**\\n\\n<description>` (subject only: `**<subject>**`; no
  subject: the description).
- `inlineData` / `fileData` parts become `file` parts whose text is a placeholder:
  `[inlineData <mime>, <decoded bytes> bytes]` or `[fileData <mime>, <uri>]` (no size is recorded).
- Tool results come from `toolCalls[].result`, unless the next turn sent is a `user` message holding
  `functionResponse` parts (v0.44+ synthetic turns): then that turn is what was sent and `result` is
  not counted again.
- Checkpoints keep every call ever recorded: the timeline before `$set.messages` is laid out first,
  then the checkpoint's messages again as new parts; calls after it start their
  prompt there. Copies of messages already laid out carry no `call_uid` (their call is the first
  copy). A `user` message first seen in a checkpoint, or holding `<state_snapshot>`, is the
  compression summary (kind `summary`) and also restarts the prompt.
- Part uid `<16 hex digits of a hash of the session uid>:<seq>`: a part is its position in its session
  (its message is `message_id`). Session uid, message id and index spelled out took 110 bytes a part,
  a tenth of all ingest writes. A log read on from where the last read stopped continues the seqs.
- Masked tool output (`<tool_output_masked>`) is stored as recorded; `Session.meta` counts it
  (`masked_tool_outputs`) and scoring decides what it does to the delta chain.
- `info` / `error` / `warning` messages are never sent to the model, so they yield no parts; `meta`
  counts them (`ui_messages`).

Reading on (`parse_from`, for `calib ingest`): a JSONL log whose earlier bytes are unchanged (a hash of
everything read before) and whose new lines are only finished `MessageRecord`s with new ids (and
metadata patches that keep the session's identity) is laid out from where the last read stopped, with
the builder state it ended with. Anything else (a re-appended id, a rewind, a checkpoint, a tool-result
turn that would drop tool results already stored, an unfinished line) reads the file whole, so the
rows always equal those of a whole read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import orjson

from calib.core.errors import InputError
from calib.core.records import Call, ParsedSession, Part, Record, Session
from calib.core.usage import carried_tokens, context_tokens
from calib.importers import HEAD_BYTES, Increment
from calib.importers.common import compact_json

NAME = "gemini-cli"
LAYOUT_STRING = "gemini-json-string"
LAYOUT_PARTS = "gemini-json-parts"
LAYOUT_JSONL = "gemini-jsonl"
LAYOUTS = (LAYOUT_STRING, LAYOUT_PARTS, LAYOUT_JSONL)

_SENT_TYPES = frozenset(("user", "gemini"))
_SNAPSHOT = "<state_snapshot>"
_MASKED = "<tool_output_masked>"
_TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")
# session-<YYYY-MM-DDTHH-MM>-<8 chars of the session id>.json[l], as chatRecordingService names them.
_SESSION_NAME = re.compile(r"^session-\d{4}-\d\d-\d\dT\d\d-\d\d-[^.]{8}\.jsonl?$")
_HEAD_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"')
_HEAD_MESSAGES = re.compile(rb'"messages"\s*:\s*\[')
_HEAD_PROJECT_HASH = re.compile(rb'"projectHash"\s*:\s*"')
_HEAD_START_TIME = re.compile(rb'"startTime"\s*:\s*"([^"]*)"')
_TAIL_SUBAGENT = re.compile(rb'"kind"\s*:\s*"subagent"')
_DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)


# -- sniffing ----------------------------------------------------------------------------------------


def _first_line(head: bytes) -> bytes:
    end = head.find(b"\n")
    return head if end < 0 else head[:end]


def sniff(path: Path, head: bytes) -> bool:
    """True when `head` (the first bytes of `path`) starts a gemini-cli chat recording."""
    # A file named and placed exactly as gemini-cli names its recordings is claimed even when damaged
    # or empty, so that a broken session is reported rather than silently skipped.
    if _SESSION_NAME.match(path.name) and path.parent.name == "chats":
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    line = _first_line(text)
    if len(line) < len(text) or len(head) < HEAD_BYTES:
        # The whole first line is in view: a JSONL metadata line parses on its own.
        try:
            first = orjson.loads(line)
        except orjson.JSONDecodeError:
            first = None
        if isinstance(first, dict):
            return isinstance(first.get("sessionId"), str) and (
                isinstance(first.get("projectHash"), str) or isinstance(first.get("messages"), list)
            )
    if _HEAD_SESSION_ID.search(text) is None:
        return False
    if line.strip() == b"{":  # pretty-printed legacy record
        return _HEAD_MESSAGES.search(text) is not None or _HEAD_PROJECT_HASH.search(text) is not None
    # A first line longer than the head: a JSONL metadata line or a compact legacy record.
    return _HEAD_PROJECT_HASH.search(line) is not None or _HEAD_MESSAGES.search(line) is not None


# -- helpers -----------------------------------------------------------------------------------------


_TS_CACHE: dict[str, datetime | None] = {}


def _ts(value: Any) -> datetime | None:
    """An ISO-8601 timestamp as naive UTC (None when absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    # Every part of a message carries the message's timestamp: parse each string once.
    cached = _TS_CACHE.get(value, _TS_CACHE)
    if cached is not _TS_CACHE:
        return cached  # type: ignore[return-value]
    try:
        parsed: datetime | None = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is not None and parsed.tzinfo is not None:
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    if len(_TS_CACHE) >= 1 << 16:
        _TS_CACHE.clear()
    _TS_CACHE[value] = parsed
    return parsed


def thought_text(thought: Any) -> str:
    """The text of one thought summary, rebuilt from its subject and description."""
    if not isinstance(thought, dict):
        return thought if isinstance(thought, str) else compact_json(thought)
    subject = thought.get("subject") or ""
    description = thought.get("description") or ""
    if subject and description:
        return f"**{subject}**\n\n{description}"
    if subject:
        return f"**{subject}**"
    return str(description)


def _file_placeholder(key: str, blob: Any) -> str:
    if not isinstance(blob, dict):
        return f"[{key}]"
    mime = blob.get("mimeType") or "unknown"
    if key == "inlineData":
        data = blob.get("data")
        size = 0
        if isinstance(data, str) and data:
            try:
                size = len(base64.b64decode(data, validate=False))
            except (binascii.Error, ValueError):
                size = len(data) * 3 // 4
        return f"[inlineData {mime}, {size} bytes]"
    return f"[fileData {mime}, {blob.get('fileUri') or 'no uri'}]"


def _as_parts(content: Any) -> list[Any]:
    """A PartListUnion (string, Part, or list of either) as a list."""
    if content is None:
        return []
    if isinstance(content, list):
        return content
    return [content]


def _has_function_response(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if not isinstance(content, list):
        return False
    return any(isinstance(p, dict) and "functionResponse" in p for p in content)


def _tool_result_text(response: Any) -> str:
    if isinstance(response, dict) and len(response) == 1 and isinstance(response.get("output"), str):
        return response["output"]
    return compact_json(response)


def _text_of(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return str(part["text"])
    return ""


def _part(
    item: dict[str, Any], text_kind: str, skip_function_calls: bool
) -> tuple[str, str, str | None, bool] | None:
    """(kind, text, tool name, resent) of one Gemini API Part, or None when it sends nothing."""
    if "functionResponse" in item:
        response = item["functionResponse"] or {}
        return "tool_result", _tool_result_text(response.get("response")), response.get("name"), True
    if "functionCall" in item:
        if skip_function_calls:  # the message's toolCalls already hold these calls
            return None
        call = item["functionCall"] or {}
        return "tool_call", compact_json(call.get("args") or {}), call.get("name"), True
    if "inlineData" in item or "fileData" in item:
        key = "inlineData" if "inlineData" in item else "fileData"
        return "file", _file_placeholder(key, item[key]), None, True
    if "text" in item:
        text = item["text"]
        if not isinstance(text, str) or not text:
            return None
        if item.get("thought") is True:
            return "reasoning", text, None, False
        return text_kind, text, None, True
    if set(item) <= {"thoughtSignature", "thought"}:
        return None
    return text_kind, compact_json(item), None, True


def _int(value: Any, what: str, path: Path, line: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"token count {what} is {value!r}, not a number", path=str(path), line=line, hint=_DAMAGED_HINT
        )
    return int(value)


# -- reading the file --------------------------------------------------------------------------------


@dataclass(slots=True)
class _Segment:
    """Messages in order; segment 0 is the log from the start, each later one starts at a checkpoint."""

    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    checkpoint_ids: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Doc:
    meta: dict[str, Any]
    layout: str
    segments: list[_Segment]
    latest: dict[str, dict[str, Any]]  # last version of each message id anywhere in the file
    lines: dict[str, int]  # JSONL: line of the version a call's usage is read from
    # Last version of each id that recorded tokens: a checkpoint copy without them must not lose usage.
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    rewinds: int = 0
    unknown_records: int = 0


def _message_key(message: dict[str, Any], index: int) -> str:
    mid = message.get("id")
    return mid if isinstance(mid, str) and mid else f"#m{index}"


# The legacy layout decoded into only the fields this module reads. The rest (`resultDisplay`,
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


class _LegacyRecord(TypedDict, total=False):  # the metadata `_session_uid` and `_session_row` read
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
            f"not valid JSON ({exc.msg})", path=str(path), line=exc.lineno, hint=_DAMAGED_HINT
        ) from exc


def _read_legacy(path: Path, data: bytes) -> _Doc:
    record = _decode_legacy(path, data)
    if not isinstance(record, dict) or not isinstance(record.get("sessionId"), str):
        raise InputError(
            "not a gemini-cli session: no sessionId at the top level",
            path=str(path),
            hint="pass only files from ~/.gemini/tmp/<project>/chats, or another --format",
        )
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise InputError(
            "not a gemini-cli session: `messages` is missing or not a list",
            path=str(path),
            hint=_DAMAGED_HINT,
        )
    segment = _Segment()
    layout = LAYOUT_STRING
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InputError(f"message {index} is not a JSON object", path=str(path), hint=_DAMAGED_HINT)
        if not isinstance(message.get("content"), str | None):
            layout = LAYOUT_PARTS
        key = _message_key(message, index)
        if key in segment.messages:  # a repeated id is a message of its own, not a new version
            key = f"{key}#m{index}"
        segment.messages[key] = message
    meta = {k: v for k, v in record.items() if k != "messages"}
    return _Doc(meta, layout, [segment], dict(segment.messages), {})


def _read_jsonl(path: Path, data: bytes) -> _Doc:
    meta: dict[str, Any] | None = None
    segments = [_Segment()]
    latest: dict[str, dict[str, Any]] = {}
    usage: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    rewinds = unknown = 0
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise InputError(
                f"this line is not valid JSON ({exc.msg})",
                path=str(path),
                line=lineno,
                hint=_DAMAGED_HINT,
            ) from exc
        if not isinstance(record, dict):
            raise InputError(
                "this line is not a JSON object", path=str(path), line=lineno, hint=_DAMAGED_HINT
            )
        if meta is None:
            if not (isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)):
                raise InputError(
                    "the first line is not gemini-cli session metadata (no sessionId and projectHash)",
                    path=str(path),
                    line=lineno,
                    hint="pass only files from ~/.gemini/tmp/<project>/chats, or another --format",
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
            if isinstance(checkpoint, list) and checkpoint:
                segment = _Segment()
                for index, message in enumerate(checkpoint):
                    if not isinstance(message, dict):
                        raise InputError(
                            f"checkpoint message {index} is not a JSON object",
                            path=str(path),
                            line=lineno,
                            hint=_DAMAGED_HINT,
                        )
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
        raise InputError("no records, only blank lines", path=str(path), hint=_DAMAGED_HINT)
    return _Doc(meta, LAYOUT_JSONL, segments, latest, lines, usage, rewinds, unknown)


def read_document(path: Path, data: bytes | None = None) -> _Doc:
    """Read a recording in any layout (its bytes `data`, if already read) into metadata and timeline."""
    if data is None:
        data = path.read_bytes()
    if not data.strip():
        raise InputError(
            "empty file",
            path=str(path),
            hint="it holds no session; delete it or leave it out",
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if path.suffix == ".jsonl":
        return _read_jsonl(path, data)
    first = _first_line(data.lstrip())
    if first.strip() != b"{":
        try:
            record = orjson.loads(first)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "messages" not in record and "sessionId" in record:
            return _read_jsonl(path, data)
    return _read_legacy(path, data)


# -- project and parent ------------------------------------------------------------------------------


def _project_dir(path: Path, is_nested: bool) -> Path:
    chats = path.parent.parent if is_nested else path.parent
    return chats.parent


def project_root(project_dir: Path, project_hash: str | None) -> str | None:
    """The project a `tmp/<id>` folder belongs to: its `.project_root` marker, else `projects.json`."""
    marker = project_dir / ".project_root"
    try:
        root = marker.read_text(encoding="utf-8").strip()
    except OSError:
        root = ""
    if root:
        return root
    registry = project_dir.parent.parent / "projects.json"  # ~/.gemini/projects.json beside tmp/
    try:
        projects = orjson.loads(registry.read_bytes()).get("projects")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(projects, dict):
        return None
    for root_path, slug in projects.items():
        if slug == project_dir.name:
            return str(root_path)
        if project_hash and hashlib.sha256(str(root_path).encode()).hexdigest() == project_hash:
            return str(root_path)
    return None


_PEEKED: dict[tuple[Path, int, int], tuple[str | None, str | None, bool]] = {}


def _peek(path: Path) -> tuple[str | None, str | None, bool]:
    """(sessionId, startTime, is_subagent) of a recording, from its first and last bytes only.

    Every sub-agent of a folder looks among the same files for its parent: each file is read once for
    as long as its size and modification time stay the same.
    """
    try:
        stat = path.stat()
    except OSError:
        return None, None, False
    key = (path, stat.st_mtime_ns, stat.st_size)
    found = _PEEKED.get(key)
    if found is None:
        if len(_PEEKED) >= 1 << 14:
            _PEEKED.clear()
        found = _PEEKED[key] = _read_peek(path)
    return found


def _read_peek(path: Path) -> tuple[str | None, str | None, bool]:
    try:
        with path.open("rb") as fh:
            head = fh.read(4096)
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 512))
            tail = fh.read()
    except OSError:
        return None, None, False
    line = _first_line(head.lstrip())
    if line.strip() != b"{":
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "messages" not in record:
            return record.get("sessionId"), record.get("startTime"), record.get("kind") == "subagent"
    sid = re.search(rb'"sessionId"\s*:\s*"([^"]*)"', head)
    start = _HEAD_START_TIME.search(head)
    return (
        sid.group(1).decode() if sid else None,
        start.group(1).decode() if start else None,
        _TAIL_SUBAGENT.search(tail) is not None,
    )


def find_parent(chats: Path, parent_id: str, before: str | None, exclude: Path | None = None) -> str | None:
    """Uid of the main session `parent_id` that was running at `before`, looked up among `chats/` files."""
    best: tuple[str, str] | None = None
    try:
        candidates = sorted(chats.glob(f"session-*-{parent_id[:8]}.json*"))
    except OSError:
        return None
    for candidate in candidates:
        if exclude is not None and candidate == exclude:
            continue
        sid, start, is_sub = _peek(candidate)
        if sid != parent_id or start is None or is_sub:
            continue
        if before is not None and start > before:
            continue
        if best is None or start > best[0]:
            best = (start, sid)
    return f"{NAME}:{best[1]}:{best[0]}" if best else None


# -- building records --------------------------------------------------------------------------------


# Fields of one row of `_PartRows`, in order.
_ROW_FIELDS = ("role", "kind", "text", "message_id", "tool_name", "call_uid", "ts", "resent")
# Fields of one row of `_CallRows`, in order; the usage ones last.
_CALL_FIELDS = (
    "uid",
    "seq",
    "prompt_start",
    "prompt_end",
    "message_id",
    "ts",
    "model",
    "usage_raw",
    "usage_status",
    "input",
    "output",
    "reasoning",
    "cache_read",
    "tool_prompt",
    "total",
    "ctx",
    "carry",
)
_NO_USAGE = ("missing", None, None, None, None, None, None, None, None)
# `Call` fields with one value for every gemini-cli call.
_CALL_CONSTANTS: dict[str, Any] = {
    "usage_style": "gemini",
    "provider": "google",
    "cache_write": None,
    "error": None,
    "finish": None,
}


def _transpose(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """Row tuples as columns keyed by `names`."""
    if not rows:
        return {name: [] for name in names}
    return dict(zip(names, map(list, zip(*rows, strict=True)), strict=True))


def part_uid_prefix(session_uid: str) -> str:
    """What every part uid of the session starts with (its seq follows)."""
    return hashlib.blake2b(session_uid.encode(), digest_size=8).hexdigest() + ":"


class _PartRows:
    """The parts of one session (what the store writes), gathered as row tuples and turned into
    columns once: one append per part costs a ninth of an append per column."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        # (role, kind, text, message_id, tool_name, call_uid, ts, resent)
        self.rows: list[tuple[Any, ...]] = []

    def __len__(self) -> int:
        return len(self.rows)

    def records(self, session_uid: str, base: int = 0) -> list[Part]:
        """The rows as `Part` records (the first one at seq `base`)."""
        prefix = part_uid_prefix(session_uid)
        return [
            Part(
                uid=f"{prefix}{seq}",
                session_uid=session_uid,
                seq=seq,
                role=role,
                kind=kind,
                text=text,
                message_id=message_id,
                tool_name=tool_name,
                call_uid=call_uid,
                ts=ts,
                resent=resent,
            )
            for seq, (role, kind, text, message_id, tool_name, call_uid, ts, resent) in enumerate(
                self.rows, base
            )
        ]

    def columns(self, session_uid: str, base: int = 0) -> dict[str, list[Any]]:
        """The rows in columns keyed by `Part` field names (the first one at seq `base`)."""
        n = len(self.rows)
        out = _transpose(self.rows, _ROW_FIELDS)
        prefix = part_uid_prefix(session_uid)
        out["uid"] = [f"{prefix}{seq}" for seq in range(base, base + n)]
        out["session_uid"] = [session_uid] * n
        out["seq"] = list(range(base, base + n))
        out["pruned_at"] = [None] * n
        out["pruned_text"] = [None] * n
        return out


class _CallRows:
    """The calls of one session, gathered as row tuples like `_PartRows`."""

    __slots__ = ("rows",)

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []  # `_CALL_FIELDS`

    def __len__(self) -> int:
        return len(self.rows)

    def records(self, session_uid: str) -> list[Call]:
        """The rows as `Call` records."""
        return [
            Call(session_uid=session_uid, **_CALL_CONSTANTS, **dict(zip(_CALL_FIELDS, row, strict=True)))
            for row in self.rows
        ]

    def columns(self, session_uid: str) -> dict[str, list[Any]]:
        """The rows in columns keyed by `Call` field names."""
        n = len(self.rows)
        out = _transpose(self.rows, _CALL_FIELDS)
        out["session_uid"] = [session_uid] * n
        for name, value in _CALL_CONSTANTS.items():
            out[name] = [value] * n
        return out


class _Builder:
    """Lays the segments out as numbered parts and one call per recorded `gemini` message."""

    def __init__(self, path: Path, doc: _Doc, session_uid: str) -> None:
        self.path = path
        self.doc = doc
        self.uid = session_uid
        self.parts = _PartRows()
        self.calls = _CallRows()
        self.owned: set[str] = set()  # message ids already laid out (a call belongs to the first copy)
        self.masked = 0
        # Where an appended read starts: parts and calls already stored, and the prompt's start.
        self.base_parts = 0
        self.base_calls = 0
        self.prompt_start = 0
        self.last_sent: tuple[str, dict[str, Any]] | None = None  # the last message laid out
        self._key = ""  # the message being laid out

    def pos(self) -> int:
        """The seq the next part takes."""
        return self.base_parts + len(self.parts)

    def _add(
        self,
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        tool_name: str | None = None,
        call_uid: str | None = None,
        resent: bool = True,
    ) -> None:
        if _MASKED in text:
            self.masked += 1
        self.parts.rows.append((role, kind, text, self._key, tool_name, call_uid, ts, resent))

    def _content(
        self,
        content: Any,
        role: str,
        text_kind: str,
        ts: datetime | None,
        call_uid: str | None = None,
        skip_function_calls: bool = False,
        tool_name: str | None = None,
    ) -> None:
        add = self._add
        for item in _as_parts(content):
            if isinstance(item, str):
                entry: tuple[str, str, str | None, bool] | None = (
                    (text_kind, item, None, True) if item else None
                )
            elif isinstance(item, dict):
                entry = _part(item, text_kind, skip_function_calls)
            else:
                entry = None
            if entry is None:
                continue
            kind, text, name, resent = entry
            if kind == "tool_result":  # the agent's input to the model (wire role user), never model output
                add("user", kind, text, ts, name or tool_name, None, True)
            else:
                add(role, kind, text, ts, name, call_uid, resent)

    def _call(self, key: str, message: dict[str, Any], prompt_start: int) -> str:
        """Add the call that message `key` records; returns its uid."""
        version = self.doc.usage.get(key) or self.doc.latest.get(key, message)
        line = self.doc.lines.get(key)
        tokens = version.get("tokens")
        if tokens is not None and not isinstance(tokens, dict):
            raise InputError(
                f"message {key}: tokens is {type(tokens).__name__}, not an object",
                path=str(self.path),
                line=line,
                hint=_DAMAGED_HINT,
            )
        model = version.get("model")
        usage: tuple[Any, ...] = _NO_USAGE
        if tokens is not None:
            values = {}
            for name in _TOKEN_FIELDS:
                value = tokens.get(name)
                # Nearly every count is a plain int: only the others go through the checks.
                values[name] = (
                    value
                    if value is None or type(value) is int
                    else _int(value, f"{key}.{name}", self.path, line)
                )
            # Zero prompt tokens means the stream lost its usage (gemini-cli writes zeros then).
            prompt, output, cached, thoughts = (
                values["input"],
                values["output"],
                values["cached"],
                values["thoughts"],
            )
            if prompt:
                usage = (
                    "ok",
                    prompt,
                    output,
                    thoughts,
                    cached,
                    values["tool"],
                    values["total"],
                    context_tokens("gemini", prompt, cached),
                    carried_tokens("gemini", output, thoughts),
                )
        uid = f"{self.uid}:{key}"
        self.calls.rows.append(
            (
                uid,
                self.base_calls + len(self.calls),
                prompt_start,
                self.pos(),  # prompt_end: the seq its own first output part is about to take
                key,
                _ts(version.get("timestamp")),
                model if isinstance(model, str) else None,
                tokens,
                *usage,
            )
        )
        return uid

    def segment(
        self,
        segment: _Segment,
        sent: list[tuple[str, dict[str, Any]]] | None = None,
        prompt_start: int | None = None,
    ) -> None:
        """Lay out one segment (each one after the first starts at a checkpoint and restarts the prompt).

        An appended read lays out only the new messages `sent` of the last segment, from the prompt
        start the last read ended with.
        """
        if sent is None:
            sent = [(k, m) for k, m in segment.messages.items() if m.get("type") in _SENT_TYPES]
        if prompt_start is None:
            prompt_start = self.pos()
        if sent:
            self.last_sent = sent[-1]
        for index, (key, message) in enumerate(sent):
            self._key = key
            ts = _ts(message.get("timestamp"))
            if message.get("type") == "gemini":
                following = sent[index + 1][1] if index + 1 < len(sent) else None
                self._gemini(key, message, ts, prompt_start, following)
                continue
            content = message.get("content")
            text_kind = "user_text"
            first_seen = key in segment.checkpoint_ids and key not in self.owned
            if first_seen or any(_SNAPSHOT in _text_of(p) for p in _as_parts(content)):
                text_kind = "summary"
                prompt_start = self.pos()
            self.owned.add(key)
            self._content(content, "user", text_kind, ts)
        self.prompt_start = prompt_start

    def _gemini(
        self,
        key: str,
        message: dict[str, Any],
        ts: datetime | None,
        prompt_start: int,
        following: dict[str, Any] | None,
    ) -> None:
        get = message.get
        add = self._add
        call_uid: str | None = None
        synthetic = get("model") is None and get("tokens") is None
        if key not in self.owned and not synthetic:
            call_uid = self._call(key, message, prompt_start)
        self.owned.add(key)
        thoughts = get("thoughts")
        if thoughts:
            for thought in thoughts if isinstance(thoughts, list) else (thoughts,):
                text = thought_text(thought)
                if text:
                    when = _ts(thought.get("timestamp")) if isinstance(thought, dict) else None
                    add("assistant", "reasoning", text, when or ts, None, call_uid, False)
        tool_calls = get("toolCalls") or []
        if not isinstance(tool_calls, list):
            raise InputError(
                f"message {key}: toolCalls is not a list",
                path=str(self.path),
                line=self.doc.lines.get(key),
                hint=_DAMAGED_HINT,
            )
        tool_calls = [tc for tc in tool_calls if isinstance(tc, dict)]
        self._content(
            get("content"), "assistant", "assistant_text", ts, call_uid, skip_function_calls=bool(tool_calls)
        )
        if not tool_calls:
            return
        whens = []
        for tc in tool_calls:
            args = tc.get("args")
            when = _ts(tc.get("timestamp")) or ts
            whens.append(when)
            add(
                "assistant",
                "tool_call",
                compact_json(args if args is not None else {}),
                when,
                tc.get("name"),
                call_uid,
            )
        if following is not None and following.get("type") == "user" and _has_function_response(following):
            return  # v0.44+: the synthetic user turn that follows is what was sent
        for tc, when in zip(tool_calls, whens, strict=True):
            self._content(tc.get("result"), "user", "tool_result", when, tool_name=tc.get("name"))


def _session_uid(path: Path, meta: dict[str, Any]) -> str:
    session_id = meta.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise InputError("no sessionId in the session metadata", path=str(path), hint=_DAMAGED_HINT)
    start = meta.get("startTime") if isinstance(meta.get("startTime"), str) else ""
    return f"{NAME}:{session_id}:{start}"


def _session_row(
    path: Path, doc: _Doc, uid: str, masked: int, ui: dict[str, int], checkpoints: int
) -> Session:
    """The session row: metadata, project, parent and what the timeline held."""
    meta = doc.meta
    session_id = str(meta.get("sessionId"))
    start = meta.get("startTime") if isinstance(meta.get("startTime"), str) else ""
    nested = path.parent.name != "chats" and path.parent.parent.name == "chats"
    is_subagent = meta.get("kind") == "subagent" or nested
    project_hash = meta.get("projectHash") if isinstance(meta.get("projectHash"), str) else None
    info: dict[str, Any] = {
        "project_hash": project_hash,
        "kind": meta.get("kind"),
        "directories": meta.get("directories"),
    }
    parent_uid = None
    if nested:
        info["parent_session_id"] = path.parent.name
        parent_uid = find_parent(path.parent.parent, path.parent.name, start or None)
    elif is_subagent:
        # Before sub-agent folders, a sub-agent recorded under its parent's sessionId beside it.
        parent_uid = find_parent(path.parent, session_id, start or None, exclude=path)
    info.update(
        {
            "checkpoints": checkpoints or None,
            "rewinds": doc.rewinds or None,
            "masked_tool_outputs": masked or None,
            "ui_messages": ui or None,
            "unknown_records": doc.unknown_records or None,
        }
    )
    is_chats_child = path.parent.name == "chats" or nested
    return Session(
        uid=uid,
        tool=NAME,
        native_id=session_id,
        source_path=str(path),
        layout=doc.layout,
        project=project_root(_project_dir(path, nested), project_hash) if is_chats_child else None,
        title=meta.get("summary") if isinstance(meta.get("summary"), str) else None,
        started_at=_ts(meta.get("startTime")),
        ended_at=_ts(meta.get("lastUpdated")),
        parent_uid=parent_uid,
        is_subagent=is_subagent,
        meta={k: v for k, v in info.items() if v is not None} or None,
    )


def _ui_counts(messages: Iterable[dict[str, Any]], into: dict[str, int] | None = None) -> dict[str, int]:
    ui = dict(into or {})
    for message in messages:
        kind = message.get("type")
        if kind not in _SENT_TYPES:
            ui[str(kind)] = ui.get(str(kind), 0) + 1
    return ui


def _build(path: Path, doc: _Doc) -> tuple[Session, _Builder, dict[str, int]]:
    uid = _session_uid(path, doc.meta)
    builder = _Builder(path, doc, uid)
    for segment in doc.segments:
        builder.segment(segment)
    unique = {key: m for segment in doc.segments for key, m in segment.messages.items()}
    ui = _ui_counts(unique.values())
    session = _session_row(path, doc, uid, builder.masked, ui, len(doc.segments) - 1)
    return session, builder, ui


def parse_session(path: Path) -> ParsedSession:
    """Parse one gemini-cli recording (any layout) into a session with its calls and parts."""
    session, builder, _ = _build(path, read_document(path))
    return ParsedSession(session, builder.calls.records(session.uid), builder.parts.records(session.uid))


# -- reading on from where the last ingest stopped (JSONL) ------------------------------------------

# 2: part uids became `<session hash>:<seq>`; a log stored with the old ones is read whole once.
_RESUME_VERSION = 2
# Metadata a later line may patch without changing what the session is.
_FIXED_META = ("sessionId", "startTime", "kind")


def _prefix_digest(data: bytes, offset: int) -> str:
    return hashlib.blake2b(memoryview(data)[:offset], digest_size=16).hexdigest()


def _complete_end(data: bytes) -> int:
    """Bytes up to and with the last newline: the lines a writer has finished."""
    return data.rfind(b"\n") + 1


def _resume_state(
    data: bytes, doc: _Doc, builder: _Builder, ui: dict[str, int]
) -> tuple[int, dict[str, Any]]:
    offset = _complete_end(data)
    last = builder.last_sent
    tools = False
    if last is not None and last[1].get("type") == "gemini":
        calls = last[1].get("toolCalls")
        tools = isinstance(calls, list) and any(isinstance(tc, dict) for tc in calls)
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
        "last_gemini_tools": tools,
        "masked": builder.masked,
        "ui": ui,
        "rewinds": doc.rewinds,
        "unknown": doc.unknown_records,
    }
    return offset, state


def _appended(
    path: Path, data: bytes, offset: int, state: dict[str, Any]
) -> tuple[_Doc, list[tuple[str, dict[str, Any]]]] | None:
    """The records a log gained since `offset` when they only add new messages, else None.

    None (read the file whole) whenever the earlier bytes changed or a new line could change rows
    already stored: a re-appended id, a rewind, a checkpoint, a patch of what identifies the session,
    an unfinished or unreadable line.
    """
    if state.get("v") != _RESUME_VERSION or not (0 < offset <= len(data)):
        return None
    if _prefix_digest(data, offset) != state.get("prefix"):
        return None
    end = _complete_end(data)
    if end < len(data):
        return None  # a line still being written
    meta = dict(state["meta"])
    seen = set(state["ids"])
    doc = _Doc(meta, LAYOUT_JSONL, [_Segment()], {}, {}, {}, int(state["rewinds"]), int(state["unknown"]))
    new: list[tuple[str, dict[str, Any]]] = []
    lineno = int(state["lines"])
    for raw in data[offset:end].split(b"\n")[:-1]:
        lineno += 1
        if not raw.strip():
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
    return doc, new


def read_increment(path: Path, offset: int = 0, state: dict[str, Any] | None = None) -> Increment:
    """Read a recording whole, or a JSONL log on from `offset` when it only gained new messages."""
    data = path.read_bytes()
    jsonl = path.suffix == ".jsonl"
    if jsonl and state and offset:
        found = _appended(path, data, offset, state)
        if found is not None:
            doc, new = found
            sent = [(k, m) for k, m in new if m.get("type") in _SENT_TYPES]
            first = sent[0][1] if sent else None
            if (
                state["last_gemini_tools"]
                and first is not None
                and first.get("type") == "user"
                and _has_function_response(first)
            ):
                pass  # the new turn replaces tool results already stored: read it whole
            else:
                return _append_increment(path, data, doc, new, sent, state)
    doc = read_document(path, data)
    session, builder, ui = _build(path, doc)
    if doc.layout == LAYOUT_JSONL and data.rstrip(b" \t\r").endswith(b"\n"):
        # Only a log whose lines are all finished can be read on from its end next time.
        offset, resume = _resume_state(data, doc, builder, ui)
    else:
        offset, resume = len(data), {}
    return Increment(
        [ParsedSession(session, [], [])],
        appended=False,
        offset=offset,
        state=resume,
        columns={"calls": builder.calls.columns(session.uid), "parts": builder.parts.columns(session.uid)},
    )


def _append_increment(
    path: Path,
    data: bytes,
    doc: _Doc,
    new: list[tuple[str, dict[str, Any]]],
    sent: list[tuple[str, dict[str, Any]]],
    state: dict[str, Any],
) -> Increment:
    uid = _session_uid(path, doc.meta)
    builder = _Builder(path, doc, uid)
    builder.base_parts = int(state["parts"])
    builder.base_calls = int(state["calls"])
    builder.masked = int(state["masked"])
    n = int(state["segment"])
    builder.segment(doc.segments[0], sent=sent, prompt_start=int(state["prompt_start"]))
    ui = _ui_counts((m for _, m in new), into=state["ui"])
    session = _session_row(path, doc, uid, builder.masked, ui, n)
    last_tools = bool(state["last_gemini_tools"])
    if sent:
        last = sent[-1][1]
        calls = last.get("toolCalls")
        last_tools = last.get("type") == "gemini" and (
            isinstance(calls, list) and any(isinstance(tc, dict) for tc in calls)
        )
    offset = len(data)
    resume = dict(state)
    resume.update(
        {
            "prefix": _prefix_digest(data, offset),
            "lines": data.count(b"\n"),
            "ids": sorted({*state["ids"], *(k for k, _ in new)}),
            "meta": doc.meta,
            "prompt_start": builder.prompt_start if sent else state["prompt_start"],
            "parts": builder.pos(),
            "calls": builder.base_calls + len(builder.calls),
            "last_gemini_tools": last_tools,
            "masked": builder.masked,
            "ui": ui,
            "unknown": doc.unknown_records,
        }
    )
    return Increment(
        [ParsedSession(session, [], [])],
        appended=True,
        offset=offset,
        state=resume,
        columns={
            "calls": builder.calls.columns(uid),
            "parts": builder.parts.columns(uid, builder.base_parts),
        },
    )


class GeminiCliImporter:
    """Importer of gemini-cli chat recordings (legacy JSON and JSONL, main and sub-agent sessions)."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """True for a gemini-cli recording (judged from its first bytes and its name)."""
        return sniff(path, head)

    def sniff_dir(self, path: Path) -> bool:
        """Always False: every gemini-cli session is a file of its own."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse one recording into one session."""
        yield parse_session(path)

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment:
        """Read a recording whole, or a JSONL log on from `offset` when it only gained new messages."""
        return read_increment(path, offset, state)

    def default_paths(self) -> list[Path]:
        """`$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`."""
        home = os.environ.get("GEMINI_CLI_HOME")
        base = Path(home) if home else Path.home()
        return [base / ".gemini" / "tmp"]


IMPORTER = GeminiCliImporter()
