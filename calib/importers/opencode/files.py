"""Reading the JSON files of OpenCode's storage trees and exports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.importers.opencode.build import load_json


def _load(path: str | Path) -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from exc
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


def json_files(folder: str) -> list[str]:
    """The `*.json` files of a folder in name order, skipping OpenCode's `.oc-*.tmp` write files."""
    # Plain strings, not Path objects: a storage tree holds hundreds of thousands of small files.
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    with entries:
        names = sorted(e.name for e in entries if e.name.endswith(".json") and not e.name.startswith("."))
    return [os.path.join(folder, name) for name in names]


def stem(file: str) -> str:
    """The file's name without `.json` (an id, in every storage tree)."""
    return os.path.basename(file)[: -len(".json")]
