"""Telling a Claude Code transcript from other files by its name and first bytes (formats.md section 8).

A transcript is a `.jsonl` file whose first line is a Claude Code record: an object with a string
`sessionId` and a string `type` (every user, assistant, system, progress, queue-operation or
permission-mode line has both), or a `summary` line (`summary` + `leafUuid`) or a
`file-history-snapshot` line (`messageId` + `snapshot`), the two kinds that carry no `sessionId`.
gemini-cli's JSONL metadata line has `sessionId` but no `type`; a Codex rollout line has `type` and
`payload` but no top-level `sessionId`; OpenCode keeps JSON documents, not lines. A Qwen Code chat
record has `sessionId` and `type` too, but a Gemini-shaped `message` (`parts`, never `content`), a
`systemPayload` or the `tool_result` type, which no Claude Code line has. Nothing is claimed from its
place alone, so an empty or foreign file beside the transcripts is left to the others.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson

from calib.importers import HEAD_BYTES

_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"')
_TYPE = re.compile(rb'"type"\s*:\s*"')
_TREE = re.compile(rb'"(?:parentUuid|uuid|leafUuid)"\s*:')
_SNAPSHOT = re.compile(rb'^\{\s*"type"\s*:\s*"(?:file-history-snapshot|summary)"')
# What only a Qwen Code chat record holds (see the module docstring).
_QWEN = re.compile(rb'"systemPayload"\s*:|"message"\s*:\s*\{\s*"role"\s*:\s*"[a-z]+"\s*,\s*"parts"')


def is_record(first: Any) -> bool:
    """True when a decoded line is a Claude Code transcript record."""
    if not isinstance(first, dict):
        return False
    kind = first.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "summary":
        return isinstance(first.get("leafUuid"), str)
    if kind == "file-history-snapshot":
        return "messageId" in first and "snapshot" in first
    if "payload" in first or "projectHash" in first:
        return False
    if kind == "tool_result" or "systemPayload" in first:
        return False  # a Qwen Code chat record
    message = first.get("message")
    if isinstance(message, dict) and "parts" in message and "content" not in message:
        return False  # a Qwen Code chat record (Gemini-shaped content)
    return isinstance(first.get("sessionId"), str)


def sniff(path: Path, head: bytes) -> bool:
    """True when `head` (the first bytes of `path`) starts a Claude Code transcript."""
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
    if _SNAPSHOT.match(line):
        return True
    return (
        _SESSION_ID.search(line) is not None
        and _TYPE.search(line) is not None
        and _TREE.search(line) is not None
        and _QWEN.search(line) is None
    )
