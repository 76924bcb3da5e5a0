"""Telling a Qwen Code chat log from other files by its name and first bytes.

A chat log is a `.jsonl` file whose lines are `ChatRecord`s (`packages/core/src/services/
chatRecordingService.ts`): objects with a string `uuid`, `sessionId` and `type` (`user`, `assistant`,
`tool_result` or `system`). What no other agent writes: a `message` in Gemini's shape (`role` and a
`parts` list, where Claude Code writes `content`), a `systemPayload` on system records, or the
`tool_result` record type. A first line longer than the sniffed head is judged from those keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from calib.importers import HEAD_BYTES

RECORD_TYPES = frozenset(("user", "assistant", "tool_result", "system"))

_KEYS = (re.compile(rb'"uuid"\s*:\s*"'), re.compile(rb'"sessionId"\s*:\s*"'))
_QWEN = re.compile(rb'"systemPayload"\s*:|"message"\s*:\s*\{\s*"role"\s*:\s*"[a-z]+"\s*,\s*"parts"')
_TYPE = re.compile(rb'"type"\s*:\s*"(?:user|assistant|tool_result|system)"')


def is_record(record: Any) -> bool:
    """True when a decoded line is a Qwen Code `ChatRecord`."""
    if not isinstance(record, dict):
        return False
    if record.get("type") not in RECORD_TYPES:
        return False
    if not isinstance(record.get("uuid"), str) or not isinstance(record.get("sessionId"), str):
        return False
    if record["type"] == "tool_result" or isinstance(record.get("systemPayload"), dict):
        return True
    message = record.get("message")
    return isinstance(message, dict) and isinstance(message.get("parts"), list)


def sniff(path: Path, head: bytes) -> bool:
    """True when `head` (the first bytes of `path`) starts a Qwen Code chat log."""
    if path.suffix != ".jsonl":
        return False
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"{"):
        return False
    end = text.find(b"\n")
    line = text if end < 0 else text[:end]
    if end >= 0 or len(head) < HEAD_BYTES:
        try:
            return is_record(orjson.loads(line))
        except orjson.JSONDecodeError:
            return False
    # A first line longer than the head: judge it from the keys it starts with.
    return all(k.search(line) for k in _KEYS) and bool(_TYPE.search(line)) and bool(_QWEN.search(line))
