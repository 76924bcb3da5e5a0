"""`opencode-export`: the output of `opencode export <id>`, `{info, messages: [{info, parts}]}`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from calib.core.errors import InputError
from calib.core.records import ParsedSession
from calib.importers.opencode.files import load_object
from calib.importers.opencode.session import Messages, check_message, parsed_session

# How an export file starts; a session id (`ses_...`) in the first bytes confirms it.
EXPORT_HEAD = re.compile(rb'\A\s*\{\s*"info"\s*:\s*\{')


def parse_export(path: Path) -> Iterator[ParsedSession]:
    """The one session of an export file."""
    doc = load_object(path, "export")
    info, messages = doc.get("info"), doc.get("messages")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str) or not isinstance(messages, list):
        raise InputError(
            "not an `opencode export` file: expected {info: {id, ...}, messages: [...]}", path=str(path)
        )
    pairs: Messages = []
    for index, entry in enumerate(messages):
        if not isinstance(entry, dict):
            raise InputError(f"messages[{index}] is not an object", path=str(path))
        msg = check_message(entry.get("info"), path, f"messages[{index}]")
        parts = [p for p in entry.get("parts") or [] if isinstance(p, dict)]
        pairs.append((msg, parts))
    yield parsed_session(info, path, "opencode-export", pairs)
