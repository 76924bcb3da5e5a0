"""The OpenCode importer: the SQLite database, the JSON storage trees and `opencode export` files.

Layouts (reference/formats.md sections 2.2 and 7), each yielding one `ParsedSession` per OpenCode session,
one module each: `db` (`opencode-db`, and `opencode2-db` for sessions of OpenCode 2's tables in the same
database), `trees` (`opencode-json-tree`, `opencode-project-tree`) and `export` (`opencode-export`);
`files` reads the JSON files of the last two, `session` holds what all layouts share. How 1.x messages
become calls and parts is in `calib.importers.opencode.build`, how 2.x `session_message` rows do in
`build_v2`; `providers` names the vendor a call is grouped by.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from calib.core.errors import InputError
from calib.core.home import expand_home
from calib.core.records import Record
from calib.importers.opencode.db import is_opencode_db, parse_db
from calib.importers.opencode.export import EXPORT_HEAD, parse_export
from calib.importers.opencode.session import TOOL
from calib.importers.opencode.trees import parse_json_tree, parse_project_tree, tree_layout
from calib.importers.sqlite import SQLITE_MAGIC, connect_readonly, is_sqlite_file

# Kilo's CLI database, in `$XDG_DATA_HOME/kilo` beside OpenCode's folder.
KILO_DB = "kilo.db"
LAYOUTS = ("opencode-db", "opencode2-db", "opencode-json-tree", "opencode-project-tree", "opencode-export")

__all__ = ["IMPORTER", "LAYOUTS", "TOOL", "OpenCodeImporter", "connect_readonly", "data_dir", "tree_layout"]


class OpenCodeImporter:
    """Reads every OpenCode storage layout into sessions, one call per step."""

    name = TOOL

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """An OpenCode database (by its tables) or an `opencode export` JSON file (by its first bytes)."""
        if head.startswith(SQLITE_MAGIC):
            return is_opencode_db(path)
        return path.suffix == ".json" and EXPORT_HEAD.match(head) is not None and b'"ses_' in head

    def sniff_dir(self, path: Path) -> bool:
        """A `storage` folder of the global JSON tree or of the earliest per-project tree."""
        return tree_layout(path) is not None

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse a database, a storage folder or an export file."""
        if path.is_dir():
            layout = tree_layout(path)
            if layout == "opencode-json-tree":
                yield from parse_json_tree(path)
            elif layout == "opencode-project-tree":
                yield from parse_project_tree(path)
            else:
                raise InputError(
                    "not an OpenCode storage folder",
                    path=str(path),
                    hint="pass <data>/storage, <data>/project/<slug>/storage, a database or an export file",
                )
            return
        if is_sqlite_file(path):
            yield from parse_db(path)
        else:
            yield from parse_export(path)

    def default_paths(self) -> list[Path]:
        """`$XDG_DATA_HOME/opencode` (default `~/.local/share/opencode`), `$OPENCODE_DB` if set, and
        Kilo's CLI database `$XDG_DATA_HOME/kilo/kilo.db` (Kilo's CLI, an OpenCode fork, keeps OpenCode's
        tables; its sessions are read, and labelled, as OpenCode's)."""
        data = data_dir()
        paths = [data]
        db = os.environ.get("OPENCODE_DB")
        if db and db != ":memory:":
            db_path = expand_home(db)
            paths.append(db_path if db_path.is_absolute() else data / db_path)
        paths.append(data.parent / "kilo" / KILO_DB)
        return paths


def data_dir() -> Path:
    """OpenCode's data folder (xdg-basedir, the same on Linux, macOS and Windows)."""
    base = os.environ.get("XDG_DATA_HOME")
    return (Path(base) if base else Path.home() / ".local" / "share") / "opencode"


IMPORTER = OpenCodeImporter()
