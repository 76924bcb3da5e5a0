"""The importer registry: pure parsers of each agent's on-disk sessions, picked by name or by sniffing.

An importer never touches the store. It says whether a path is one of its sources (`sniff_file` for
a single file, `sniff_dir` for a folder it reads as a whole, such as OpenCode's JSON `storage/` tree),
parses a source into records, and names the folders where its agent keeps data by default.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from calib.core.errors import UsageError
from calib.core.records import Record

# How many bytes of a file the sniffers see.
HEAD_BYTES = 4096


@runtime_checkable
class Importer(Protocol):
    """A parser of one agent's session data."""

    name: str  # registry name, also the value of `sessions.tool`

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """True when the file at `path` (whose first bytes are `head`) is a source of this importer."""
        ...

    def sniff_dir(self, path: Path) -> bool:
        """True when the folder is a single source this importer reads as a whole."""
        ...

    def parse(self, path: Path) -> Iterator[Record]:
        """Parse one source; raise `calib.core.errors.InputError` (with path and line) on bad input."""
        ...

    def default_paths(self) -> list[Path]:
        """Where this agent keeps its data on this machine (may not exist)."""
        ...


@dataclass(slots=True)
class Increment:
    """What an incremental read of an append-only source found.

    `appended`: True when `records` only extend what the previous read stored (each session given
    again whole, with only its new calls and parts), False when the source was read from the start
    (it was new, rewritten, or its new lines change earlier ones) and `records` are complete.
    `offset` and `state` are what the next read needs to carry on from here (`state` is JSON-ready;
    empty when the source cannot be read on from where this read stopped). `columns` may hold rows
    in columns instead of in `records`, as record kind (`"calls"`, `"parts"`) -> record field name ->
    values: cheaper for large sources; the calls (or parts) of a session must then all be there, not
    in its record.
    """

    records: list[Record]
    appended: bool
    offset: int
    state: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, dict[str, list[Any]]] | None = None


@runtime_checkable
class IncrementalImporter(Importer, Protocol):
    """An importer that can also read an append-only source on from where it stopped (optional)."""

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment | None:
        """Read `path` on from `offset` given the `state` the last read returned (None: from the start).

        Returns None when the source is not of a resumable kind (then `parse` reads it). Must read the
        source whole whenever appending could give rows that differ from a whole read.
        """
        ...


def incremental(importer: Importer) -> IncrementalImporter | None:
    """The importer as an incremental one, when it implements the optional `parse_from`."""
    return importer if callable(getattr(importer, "parse_from", None)) else None  # type: ignore[return-value]


# name -> module path; each module exposes `IMPORTER`. Modules load only when used.
_REGISTRY: dict[str, str] = {
    "gemini-cli": "calib.importers.gemini_cli",
    "opencode": "calib.importers.opencode",
    "dexto": "calib.importers.dexto",
}
_LOADED: dict[str, Importer] = {}


def importer_names() -> list[str]:
    """Names of every registered importer whose module is present."""
    names = []
    for name, module in _REGISTRY.items():
        if importlib.util.find_spec(module) is not None:
            names.append(name)
    return names


def get_importer(name: str) -> Importer:
    """The importer registered as `name`; an unknown name lists the valid ones."""
    if name in _LOADED:
        return _LOADED[name]
    module = _REGISTRY.get(name)
    if module is None or importlib.util.find_spec(module) is None:
        valid = ", ".join(importer_names())
        raise UsageError(f"unknown format {name!r}", hint=f"use one of: {valid}")
    importer: Importer = importlib.import_module(module).IMPORTER
    _LOADED[name] = importer
    return importer


def all_importers() -> list[Importer]:
    """Every registered importer, in registry order."""
    return [get_importer(name) for name in importer_names()]


def sniff_file(path: Path) -> Importer | None:
    """The importer that claims the file, or None."""
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    for importer in all_importers():
        if importer.sniff_file(path, head):
            return importer
    return None


def sniff_dir(path: Path) -> Importer | None:
    """The importer that reads the folder as one source, or None."""
    for importer in all_importers():
        if importer.sniff_dir(path):
            return importer
    return None
