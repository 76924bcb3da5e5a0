"""The importer registry: pure parsers of each agent's on-disk sessions, picked by name or by sniffing.

Adding an importer: one subpackage `calib.importers.<agent>` whose `__init__` exposes `IMPORTER`, an
object meeting `Importer` (and `IncrementalImporter` when it can read a source on from where it
stopped), and one line in `_REGISTRY`. The contract every importer keeps:

- Sources are only ever read: never written, locked, renamed or deleted (databases open read-only).
- Importers hand back records (`calib.core.records`) and never touch the store.
- Bad input raises `calib.core.errors.InputError` naming the path and, where known, the line; it
  fails that one source only. A part left out of a source read anyway (a damaged line) is an
  `InputWarning` among the records; past the first few of a source, count the rest in one
  `MoreWarnings` (`calib.core.tally.WarningTally`): a log may hold millions.
- Only regular files are opened (`calib.core.paths.open_regular`): a FIFO named like a session file
  would block the read forever.
- Within one source, session uids are unique, and so are the call uids and part uids of a session.
- A session's parts have `seq` 0..n-1 in conversation order; its calls have `seq` 0..m-1 in order,
  with `prompt_start <= prompt_end <= n`. A part's `call_uid`, when set, names a call of its session.
- Usage is normalised with `calib.core.usage` (`ctx`, `carry`); the provider's fields are kept as
  recorded in `usage_raw`.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from calib.core.errors import UsageError
from calib.core.paths import open_regular
from calib.core.records import Record

# How many bytes of a file the sniffers see.
HEAD_BYTES = 4096


@runtime_checkable
class Importer(Protocol):
    """A parser of one agent's session data.

    `sniff_file` claims single files from their path and first `HEAD_BYTES` bytes (a SQLite file may
    be opened read-only to see its tables); `sniff_dir` claims a folder read as one source (such as
    OpenCode's JSON `storage/` tree); both answer False rather than raise. `parse` reads one claimed
    source into records and raises `InputError` for bad input; `default_paths` names where the agent
    keeps its data.
    """

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
    again whole, with only its new calls and parts, whose `seq`s continue the stored ones), False when
    the source was read from the start (it was new, rewritten, or its new lines change earlier ones)
    and `records` are complete. `offset` and `state` are what the next read needs to carry on from
    here (`state` is JSON-ready; empty when the source cannot be read on from where this read
    stopped). Rows are records, as `parse` gives them; laying them out in columns for speed is the
    store's job (`calib.store.columns`).
    """

    records: list[Record]
    appended: bool
    offset: int
    state: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class IncrementalImporter(Importer, Protocol):
    """An importer that can also read an append-only source on from where it stopped (optional).

    Ingest calls `parse_from` instead of `parse` when an importer has it, with the `offset` and
    `state` of the last `Increment` it stored for the source (0 and None the first time).
    """

    def parse_from(self, path: Path, offset: int, state: dict[str, Any] | None) -> Increment | None:
        """Read `path` on from `offset` given the `state` the last read returned (None: from the start).

        Returns None when the source is not of a resumable kind (then `parse` reads it). Must read the
        source whole whenever appending could give rows that differ from a whole read: the stored rows
        after any sequence of reads equal those of one `parse`.
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
    "claude-code": "calib.importers.claude_code",
    "codex": "calib.importers.codex",
    "qwen-code": "calib.importers.qwen_code",
    "llxprt": "calib.importers.llxprt",
    "cline": "calib.importers.cline",
    "roo-code": "calib.importers.roo_code",
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
        with open_regular(path) as fh:  # a FIFO or a device is never opened
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
