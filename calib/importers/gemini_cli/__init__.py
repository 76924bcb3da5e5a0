"""gemini-cli importer: the chat recordings under `~/.gemini/tmp/<project>/chats/` (formats.md section 1).

One module per step: `sniff` (is a file a recording), `document` (the three layouts read into a
timeline), `content` (a message's values and API Parts), `builder` (the timeline laid out as calls and
parts), `project` (project root and parent session), `identity` (uids), `session` (a whole read),
`resume` (reading a JSONL log on from where the last read stopped) and `masking` (masked tool outputs
read back). Each states the rules it applies; the record contract is `calib.core.records`.

Since v0.29 gemini-cli masks older bulky tool results right before a request: it saves the whole
response as pretty JSON to `<project temp>/tool-outputs/session-<id>/<tool>_<call id>_<random>.txt` and
keeps only a `<tool_output_masked>` placeholder naming that file's absolute path in the record.
`masking` reads such a file back (only from under the session's own project temp dir) and stores the
full output for the calls before the masking and the placeholder from then on.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calib.core.records import Record
from calib.importers import Increment
from calib.importers.gemini_cli.content import thought_text
from calib.importers.gemini_cli.document import (
    LAYOUT_JSONL,
    LAYOUT_PARTS,
    LAYOUT_STRING,
    LAYOUTS,
    Document,
    read_document,
)
from calib.importers.gemini_cli.identity import NAME, part_uid_prefix
from calib.importers.gemini_cli.project import find_parent, project_root
from calib.importers.gemini_cli.resume import read_increment
from calib.importers.gemini_cli.session import parse_records, parse_session
from calib.importers.gemini_cli.sniff import sniff

__all__ = [
    "IMPORTER",
    "LAYOUTS",
    "LAYOUT_JSONL",
    "LAYOUT_PARTS",
    "LAYOUT_STRING",
    "NAME",
    "Document",
    "GeminiCliImporter",
    "find_parent",
    "parse_records",
    "parse_session",
    "part_uid_prefix",
    "project_root",
    "read_document",
    "read_increment",
    "sniff",
    "thought_text",
]


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
        """Parse one recording into one session (and a warning for each line left out of it)."""
        yield from parse_records(path)

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment:
        """Read a recording whole, or a JSONL log on from `offset` when it only gained new messages."""
        return read_increment(path, offset, state)

    def default_paths(self) -> list[Path]:
        """`$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`."""
        home = os.environ.get("GEMINI_CLI_HOME")
        base = Path(home) if home else Path.home()
        return [base / ".gemini" / "tmp"]


IMPORTER = GeminiCliImporter()
