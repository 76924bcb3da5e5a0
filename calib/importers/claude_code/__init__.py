"""Claude Code importer: the transcripts under `~/.claude/projects/<project>/` (formats.md section 8).

One module per step: `sniff` (is a file a transcript), `log` (its lines read, damaged ones skipped),
`tree` (the uuid/parentUuid tree, its main path and abandoned branches), `calls` (assistant lines
grouped into API calls, usage and streaming placeholders), `content` (what each content block sends),
`builder` (a path laid out as parts and calls), `session` (a whole read into sessions) and `resume`
(reading an appended log again without storing its earlier rows twice). Each states the rules it
applies; the record contract is `calib.core.records`. Layout: `claude-code-jsonl`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calib.core.home import expand_home
from calib.core.records import Record
from calib.importers import Increment
from calib.importers.claude_code.log import READ_MEMORY_FACTOR, read_log
from calib.importers.claude_code.resume import read_increment
from calib.importers.claude_code.session import LAYOUT, LAYOUTS, NAME, line_warnings, parse_sessions
from calib.importers.claude_code.sniff import sniff
from calib.importers.logfile import read_log_bytes

__all__ = ["IMPORTER", "LAYOUT", "LAYOUTS", "NAME", "ClaudeCodeImporter", "parse_sessions", "sniff"]


def config_dirs() -> list[Path]:
    """`$CLAUDE_CONFIG_DIR` (a comma-separated list), else `~/.claude` and `$XDG_CONFIG_HOME/claude`."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return [expand_home(p.strip()) for p in configured.split(",") if p.strip()]
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    config = Path(xdg) if xdg else Path.home() / ".config"
    return [Path.home() / ".claude", config / "claude"]


class ClaudeCodeImporter:
    """Importer of Claude Code transcripts (main sessions, their branches and sub-agent files)."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """True for a Claude Code transcript (judged from its name and first bytes)."""
        return sniff(path, head)

    def sniff_dir(self, path: Path) -> bool:
        """Always False: every transcript is a file of its own."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse one transcript into its sessions, then a warning for each line left out."""
        log = read_log(path, read_log_bytes(path, READ_MEMORY_FACTOR))
        yield from parse_sessions(path, log=log)
        yield from line_warnings(path, log)

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment:
        """Read a transcript, giving only the new rows when it only grew at the end of its sessions."""
        return read_increment(path, offset, state)

    def default_paths(self) -> list[Path]:
        """Each config folder's `projects/`: `$CLAUDE_CONFIG_DIR` entries, else `~/.claude` and XDG."""
        return [d / "projects" for d in config_dirs()]


IMPORTER = ClaudeCodeImporter()
