"""Telling a gemini-cli chat recording from other files by its name and first bytes."""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from calib.importers import HEAD_BYTES

# session-<YYYY-MM-DDTHH-MM>-<8 chars of the session id>.json[l], as chatRecordingService names them.
SESSION_NAME = re.compile(r"^session-\d{4}-\d\d-\d\dT\d\d-\d\d-[^.]{8}\.jsonl?$")
_HEAD_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"')
_HEAD_MESSAGES = re.compile(rb'"messages"\s*:\s*\[')
_HEAD_PROJECT_HASH = re.compile(rb'"projectHash"\s*:\s*"')


def first_line(head: bytes) -> bytes:
    """The bytes of `head` before its first newline (all of it when it has none)."""
    end = head.find(b"\n")
    return head if end < 0 else head[:end]


def sniff(path: Path, head: bytes) -> bool:
    """True when `head` (the first bytes of `path`) starts a gemini-cli chat recording."""
    # A file named and placed exactly as gemini-cli names its recordings is claimed even when damaged
    # or empty, so that a broken session is reported rather than silently skipped.
    if SESSION_NAME.match(path.name) and path.parent.name == "chats":
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    line = first_line(text)
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
