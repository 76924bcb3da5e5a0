"""Telling a Codex rollout from other files by its name and first bytes.

A rollout is named `rollout-<YYYY-MM-DDTHH-MM-SS>-<thread id>.jsonl` and its first line is
`{"timestamp": ..., "type": "session_meta", "payload": {...}}`. That line holds the whole system
prompt (about 20 kB), so it is rarely complete within the bytes a sniffer sees: the envelope's first
keys are matched instead. A file named as Codex names rollouts is claimed even when its head is
damaged or empty, so that a broken session is reported rather than silently skipped; no other agent
(gemini-cli `session-*.json[l]`, Claude Code `<uuid>.jsonl`, OpenCode JSON) uses that name or envelope.
"""

from __future__ import annotations

import re
from pathlib import Path

ROLLOUT_NAME = re.compile(r"^rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-[0-9A-Za-z-]+\.jsonl$")
# The envelope as Codex serialises it: `timestamp` first, then `type`, then `payload`.
_ENVELOPE = re.compile(
    rb'^\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"session_meta"\s*,\s*"payload"\s*:\s*\{'
)
# Any key order, for a writer that does not keep Codex's: both keys within the first bytes of the line.
_TYPE = re.compile(rb'"type"\s*:\s*"session_meta"')
_PAYLOAD = re.compile(rb'"payload"\s*:\s*\{')


def sniff(path: Path, head: bytes) -> bool:
    """True when `path` (whose first bytes are `head`) is a Codex rollout."""
    if ROLLOUT_NAME.match(path.name):
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if _ENVELOPE.match(text):
        return True
    start = text[:300]
    end = start.find(b"\n")
    if end >= 0:
        start = start[:end]
    return start.startswith(b"{") and _TYPE.search(start) is not None and _PAYLOAD.search(start) is not None
