"""Codex CLI importer: the rollouts under `$CODEX_HOME/sessions/` and `archived_sessions/` (formats.md section 9).

One module per step: `sniff` (is a file a rollout), `home` (where rollouts live, and which archived
copy a live one shadows), `reader` (bytes to records, damaged and unfinished lines), `items` (a
Responses-API item as parts; usage fields), `builder` (records laid out as calls and parts),
`identity` (uids), `session` (a whole read) and `resume` (reading on from where the last read
stopped). Each states the rules it applies; the record contract is `calib.core.records`.

Layout: `codex-jsonl` (every rollout Codex has written, 0.118 to 0.142 in the real fixtures).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calib.core.records import Record
from calib.importers import Increment
from calib.importers.codex.builder import Builder
from calib.importers.codex.home import default_paths, live_counterpart
from calib.importers.codex.identity import LAYOUT, LAYOUTS, NAME
from calib.importers.codex.items import item_specs, output_text, reasoning_text
from calib.importers.codex.reader import READ_MEMORY_FACTOR
from calib.importers.codex.resume import read_increment
from calib.importers.codex.session import build, line_warnings, parse_session
from calib.importers.codex.sniff import sniff
from calib.importers.logfile import read_log_bytes, tail_warnings

__all__ = [
    "IMPORTER",
    "LAYOUT",
    "LAYOUTS",
    "NAME",
    "Builder",
    "CodexImporter",
    "item_specs",
    "live_counterpart",
    "output_text",
    "parse_session",
    "read_increment",
    "reasoning_text",
    "sniff",
]


class CodexImporter:
    """Importer of Codex CLI rollouts (live and archived)."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """True for a Codex rollout (judged from its name and first bytes)."""
        return sniff(path, head)

    def sniff_dir(self, path: Path) -> bool:
        """Always False: every Codex session is a file of its own."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse one rollout into one session and a warning for each line left out (nothing for an
        archived copy of a live rollout)."""
        if live_counterpart(path) is None:
            source = read_log_bytes(path, READ_MEMORY_FACTOR)
            parsed, _, lines = build(path, source.data)
            yield parsed
            yield from line_warnings(path, lines)
            yield from tail_warnings(path, source, NAME)

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment:
        """Read a rollout whole, or on from `offset` when it only gained lines."""
        return read_increment(path, offset, state)

    def default_paths(self) -> list[Path]:
        """`$CODEX_HOME/sessions` and `$CODEX_HOME/archived_sessions` (`~/.codex` without CODEX_HOME)."""
        return default_paths()


IMPORTER = CodexImporter()
