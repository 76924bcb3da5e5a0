"""Telling llxprt-code's session recordings and token-usage logs from other files.

A recording is `chats/session-<YYYY-MM-DDTHH-MM-SS>-<first 12 characters of the session id>.jsonl`
whose first line is the envelope `{"v":1,"seq":1,"ts":...,"type":"session_start","payload":{...}}`.
A file named and placed exactly so is claimed even when damaged or empty, so that a broken session is
reported rather than skipped. gemini-cli's recordings (`session-<YYYY-MM-DDTHH-MM>-<8 chars>`, no
seconds, first line without an envelope) never match; nor do Codex's (`"type":"session_meta"`).

A token-usage log is `token-usage/<sessionId>.jsonl` whose first line is a record with
`record_type` and `schema_version`, or (before versioning) one with `prompt_id` and
`estimated_tokens`: it is claimed from its content only, since its name is just an id.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

RECORDING_NAME = re.compile(r"^session-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[^./\\]{1,12}\.jsonl$")
_ENVELOPE_START = re.compile(
    rb'^\{\s*"v"\s*:\s*\d+\s*,\s*"seq"\s*:\s*\d+\s*,\s*"ts"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"session_start"'
)
_VERSIONED = (re.compile(rb'"record_type"\s*:\s*"'), re.compile(rb'"schema_version"\s*:\s*\d'))
_UNVERSIONED = (re.compile(rb'"prompt_id"\s*:\s*"'), re.compile(rb'"estimated_tokens"\s*:\s*\d'))
_BOM = b"\xef\xbb\xbf"


def _first_line(head: bytes) -> tuple[bytes, bool]:
    """The first line of `head` (BOM and leading blank space left out), and whether it is whole."""
    text = head.removeprefix(_BOM).lstrip(b" \t\r\n")
    end = text.find(b"\n")
    return (text, False) if end < 0 else (text[:end], True)


def _object(line: bytes) -> dict[str, object] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def is_recording(path: Path, head: bytes) -> bool:
    """True for an llxprt-code session recording (by its name in `chats/`, else its first line)."""
    if path.parent.name == "chats" and RECORDING_NAME.match(path.name):
        return True
    if path.suffix != ".jsonl":
        return False
    line, whole = _first_line(head)
    record = _object(line) if whole or len(line) < len(head) else None
    if record is not None:
        payload = record.get("payload")
        return (
            record.get("type") == "session_start"
            and isinstance(record.get("v"), int)
            and isinstance(payload, dict)
            and isinstance(payload.get("sessionId"), str)
        )
    return _ENVELOPE_START.match(line) is not None


def is_token_usage_log(path: Path, head: bytes) -> bool:
    """True for an llxprt-code token-usage log (`token-usage/<sessionId>.jsonl`), judged by content."""
    if path.suffix != ".jsonl" or path.parent.name != "token-usage":
        return False
    line, whole = _first_line(head)
    if not line.startswith(b"{"):
        return False
    record = _object(line)
    if record is not None:
        if "record_type" in record or "schema_version" in record:
            return isinstance(record.get("record_type"), str) and isinstance(
                record.get("schema_version"), int
            )
        return isinstance(record.get("prompt_id"), str) and "estimated_tokens" in record
    if whole:  # a damaged first line: not claimed from its content
        return False
    keys = _VERSIONED if _VERSIONED[0].search(line) else _UNVERSIONED
    return all(k.search(line) is not None for k in keys)
