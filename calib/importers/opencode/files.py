"""Reading the JSON files of OpenCode's storage trees and exports.

A file of a storage tree holds one session, message or part, and OpenCode writes each atomically, so one
that is not a JSON object is damaged: `tree_object` turns it into a warning that leaves out what it
holds (`calib.importers.opencode.trees`). An export file is the whole source: damaged, it is an error.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning, NotARegularFileWarning
from calib.core.paths import file_kind, read_regular
from calib.importers.common import damaged_file
from calib.importers.opencode.build import load_json


def _read(path: str | Path) -> bytes:
    try:
        return read_regular(path)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc


def _load(path: str | Path) -> Any:
    data = _read(path)
    try:
        return load_json(data)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(
            f"not valid JSON: {str(exc).splitlines()[0]}",
            path=str(path),
            line=line if isinstance(line, int) else None,
            hint="OpenCode writes these files atomically, so the file is damaged; restore or delete it",
        ) from exc


def load_object(path: str | Path, what: str) -> dict[str, Any]:
    """The JSON object in the file (`what` names it in the error when it is not one)."""
    value = _load(path)
    if not isinstance(value, dict):
        raise InputError(f"not an OpenCode {what}: expected a JSON object", path=str(path))
    return value


def tree_object(path: str, lost: str) -> dict[str, Any] | InputWarning:
    """The JSON object in a file of a storage tree, or, when the file holds none (cut short, nested past
    orjson's 1,024 levels, another JSON value), the warning naming it and saying what is `lost` with it."""
    data = _read(path)
    try:
        value = load_json(data)
    except orjson.JSONDecodeError as exc:
        return damaged_file(path, f"not valid JSON ({exc.msg})", lost, _line(data, exc.lineno))
    if not isinstance(value, dict):
        return damaged_file(path, "not a JSON object", lost)
    return value


def _line(data: bytes, lineno: int) -> int | None:
    """`lineno` as a line of the file: data cut short after a newline ends on the line before the one
    orjson names (none in an empty file)."""
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1) if data else 0
    return min(lineno, lines) or None


def json_files(folder: str, special: list[InputWarning] | None = None) -> list[str]:
    """The `*.json` files of a folder in name order, skipping OpenCode's `.oc-*.tmp` write files.

    What is named so but is no regular file (a FIFO, whose open would wait for a writer) is left
    out, never opened, with a warning added to `special`.
    """
    # Plain strings, not Path objects: a storage tree holds hundreds of thousands of small files.
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    with entries:
        for entry in entries:
            if not entry.name.endswith(".json") or entry.name.startswith("."):
                continue
            # The type the listing gave (a link is followed): no system call for a plain file.
            if entry.is_file():
                names.append(entry.name)
            elif special is not None and not entry.is_dir():
                with contextlib.suppress(OSError):
                    special.append(NotARegularFileWarning(file_kind(entry.stat().st_mode), path=entry.path))
    return [os.path.join(folder, name) for name in sorted(names)]


def stem(file: str) -> str:
    """The file's name without `.json` (an id, in every storage tree)."""
    return os.path.basename(file)[: -len(".json")]
