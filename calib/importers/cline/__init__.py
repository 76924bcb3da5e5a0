"""The Cline importer: both formats users have on disk, each a folder read as one source.

- `cline-sdk` (`calib.importers.cline.sdk`): the v4.x session folders `<sessions dir>/<id>/`.
- `cline-task` (`calib.importers.cline.legacy`): the task folders Cline wrote before its SDK,
  `<editor user dir>/User/globalStorage/saoudrizwan.claude-dev/tasks/<id>/`, which the extension still
  reads (cline/cline `apps/vscode/src/sdk/legacy-state-reader.ts`, from `<Cline data dir>/tasks/<id>/`),
  read by the reader it shares with Roo Code (`calib.importers.taskfolder`).

Where they are (cline/cline `sdk/packages/shared/src/storage/paths.ts`,
`apps/vscode/src/shared/storage/storage-context.ts` `resolveDataDirFromEnv`): Cline's data dir is
`$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`; sessions are in
`$CLINE_SESSION_DATA_DIR`, else `<data dir>/sessions`. The editor folders are VS Code's, VS Code
Insiders', Cursor's, Windsurf's and VSCodium's on Linux, macOS and Windows, and VS Code Server's.
No file is claimed alone: every Cline source is a folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from calib.core.errors import InputError
from calib.core.home import expand_home
from calib.core.records import Record
from calib.importers.cline.legacy import LAYOUT as TASK_LAYOUT
from calib.importers.cline.legacy import parse_task
from calib.importers.cline.sdk import LAYOUT as SDK_LAYOUT
from calib.importers.cline.sdk import is_session_folder, parse_session_folder
from calib.importers.taskfolder import CLINE_EXTENSION, editor_storage_dirs, task_agent

NAME = "cline"
LAYOUTS = (SDK_LAYOUT, TASK_LAYOUT)

__all__ = ["IMPORTER", "LAYOUTS", "NAME", "ClineImporter", "data_dir", "sessions_dir"]


def _env(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return expand_home(value) if value else None


def data_dir() -> Path:
    """Cline's data folder: `$CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`."""
    explicit = _env("CLINE_DATA_DIR")
    if explicit is not None:
        return explicit
    return (_env("CLINE_DIR") or Path.home() / ".cline") / "data"


def sessions_dir() -> Path:
    """Cline's session folders: `$CLINE_SESSION_DATA_DIR`, else `<data dir>/sessions`."""
    return _env("CLINE_SESSION_DATA_DIR") or data_dir() / "sessions"


class ClineImporter:
    """Reads Cline's SDK session folders and its legacy task folders."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """Always False: both formats are folders."""
        return False

    def sniff_dir(self, path: Path) -> bool:
        """An SDK session folder (`<id>/<id>.messages.json`) or a task folder of Cline's."""
        try:
            return is_session_folder(path) or task_agent(path) == NAME
        except OSError:
            return False

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse a session folder or a task folder."""
        if is_session_folder(path):
            yield from parse_session_folder(path)
        elif task_agent(path) == NAME:
            yield from parse_task(path)
        else:
            raise InputError(
                "not a Cline session or task folder",
                path=str(path),
                hint="pass ~/.cline/data/sessions/<id> or a globalStorage/saoudrizwan.claude-dev/tasks/<id> folder",
            )

    def default_paths(self) -> list[Path]:
        """The sessions folder, the data folder's `tasks`, and each editor's Cline task folders."""
        return [sessions_dir(), data_dir() / "tasks", *editor_storage_dirs(CLINE_EXTENSION)]


IMPORTER = ClineImporter()
