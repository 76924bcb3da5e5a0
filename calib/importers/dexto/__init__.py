"""The Dexto importer: its SQLite session databases and its JSON-lines logs.

Sources: `~/.dexto/database/<agentId>.db` (older `dexto.db`), read read-only, one session per
`messages:<sessionId>` list (see `calib.importers.dexto.db`), and `~/.dexto/logs/**.log[.N]`, whose
`Context estimation accuracy` lines become `AgentEstimate` pairs (see `calib.importers.dexto.log`).
Session uids are `dexto:<sessionId>`; session layouts are `dexto-db` and `dexto-db-legacy` (Dexto 1.3
and older, per session); the logs (`dexto-log` in `calib.synth`) yield estimate pairs, no sessions.
`$DEXTO_HOME_DIR` (Dexto's override of `~/.dexto`) is honoured by `default_paths`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from calib.core.home import expand_home
from calib.core.records import Record
from calib.importers.dexto.db import LAYOUT_DB, LAYOUT_LEGACY, looks_like_dexto, parse_db
from calib.importers.dexto.log import looks_like_log, parse_log
from calib.importers.sqlite import SQLITE_MAGIC, is_sqlite_file

# The layouts of the sessions this importer yields (its logs yield estimate pairs only).
LAYOUTS = (LAYOUT_DB, LAYOUT_LEGACY)


class DextoImporter:
    """Dexto (truffle-ai/dexto) sessions and logs."""

    name = "dexto"

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """A SQLite database with Dexto's tables, or a Dexto JSON-lines log."""
        if head.startswith(SQLITE_MAGIC):
            return looks_like_dexto(path, head)
        return looks_like_log(path, head)

    def sniff_dir(self, path: Path) -> bool:
        """Dexto keeps no folder-shaped source."""
        return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Sessions of a database, or estimate pairs of a log."""
        if is_sqlite_file(path):
            yield from parse_db(path)
        else:
            yield from parse_log(path)

    def default_paths(self) -> list[Path]:
        """`~/.dexto/{database,logs}`, and the same under `$DEXTO_HOME_DIR` when it is set."""
        homes = []
        override = os.environ.get("DEXTO_HOME_DIR")
        if override:
            homes.append(expand_home(override))
        homes.append(Path.home() / ".dexto")
        paths: list[Path] = []
        for home in homes:
            for sub in ("database", "logs"):
                if home / sub not in paths:
                    paths.append(home / sub)
        return paths


IMPORTER = DextoImporter()
