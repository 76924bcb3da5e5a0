"""The Roo Code importer (Kilo Code's VS Code extension writes the same task folders).

A task is a folder `<editor user dir>/User/globalStorage/<extension>/tasks/<id>/`, `<extension>` being
`rooveterinaryinc.roo-cline` (layout `roo-code-task`) or `kilocode.kilo-code` (layout `kilo-code-task`),
read as one source by the reader shared with Cline (`calib.importers.taskfolder`). Kilo's newer CLI keeps
an OpenCode database instead (`~/.local/share/kilo/kilo.db`), which is not read here. Facts relied on
(RooCodeInc/Roo-Code at cb836567):

- The tasks folder is `<globalStorage>/tasks/<id>` unless the `customStoragePath` setting moves it
  (`src/utils/storage.ts`); newer folders also hold `history_item.json` with the task's `workspace`
  (`src/core/task-persistence/TaskHistoryStore.ts`, `packages/types/src/history.ts`).
- The `api_req_started` text is first `{apiProtocol}` and then gets `tokensIn`, `tokensOut`,
  `cacheWrites`, `cacheReads`, `cost` (`src/core/task/Task.ts`). Since "Fix cost and token tracking
  between provider styles" (416fa572, 2025-10-31) `tokensIn` is `totalInputTokens` for both protocols
  (`src/shared/cost.ts`): input + cache writes + cache reads for `anthropic`, the provider's prompt
  (which holds the cache) for `openai`. Before, it was the provider's raw input: without the cache for
  `anthropic`. calib takes `tokensIn` as the whole prompt unless it is below `cacheReads + cacheWrites`,
  which only the older Anthropic count can be; then the cache is added. An older Anthropic count at or
  above the cache counts cannot be told from a current one and is read as current.
- `tokensOut` is the provider's output count (reasoning included).
- The model is named only in the `<model>…</model>` line of the environment details Roo appends to the
  user messages it sends (`src/core/environment/getEnvironmentDetails.ts`): a call's model is the last
  one named in the history up to its request. The vendor that name says
  (`calib.importers.opencode.providers.vendor`) is the call's provider; `apiProtocol` names an API
  shape, not a vendor, so a model of no known vendor has none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError
from calib.core.paths import read_regular
from calib.core.records import Record
from calib.core.tally import WarningTally
from calib.importers.opencode.providers import vendor
from calib.importers.taskfolder import (
    KILO_EXTENSION,
    ROO_EXTENSION,
    CallInfo,
    Request,
    Usage,
    build_task,
    checked,
    editor_storage_dirs,
    exclusive,
    inclusive,
    project_of,
    read_task,
    task_agent,
)

NAME = "roo-code"
LAYOUT = "roo-code-task"
KILO_LAYOUT = "kilo-code-task"
LAYOUTS = (LAYOUT, KILO_LAYOUT)
HISTORY_ITEM = "history_item.json"
_MODEL = re.compile(r"<model>([^<\n]+)</model>")

__all__ = ["IMPORTER", "LAYOUTS", "NAME", "RooCodeImporter", "usage_of"]


def _total_input(tokens_in: int, tokens_out: int, read: int, write: int) -> Usage:
    if tokens_in < read + write:
        return exclusive(tokens_in, tokens_out, read, write)  # an older version's raw Anthropic input
    return inclusive(tokens_in, tokens_out, read, write)


def usage_of(info: dict[str, Any]) -> Usage:
    """A request's usage (see the module docstring)."""
    return checked(info, _total_input)


def _texts(message: dict[str, Any]) -> Iterator[str]:
    content = message.get("content")
    if isinstance(content, str):
        yield content
        return
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            yield block["text"]
        if isinstance(block, dict) and isinstance(block.get("content"), list):
            for inner in block["content"]:
                if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                    yield inner["text"]


def model_named(users: list[dict[str, Any]]) -> str | None:
    """The model the last `<model>` line of these user messages names."""
    for message in reversed(users):
        found = None
        for text in _texts(message):
            for match in _MODEL.finditer(text):
                found = match.group(1).strip()
        if found:
            return found
    return None


def read_call(
    request: Request | None, message: dict[str, Any] | None, users: list[dict[str, Any]]
) -> CallInfo:
    """A Roo call's usage, provider and model."""
    usage = usage_of(request.info) if request is not None else checked({}, exclusive)
    model = model_named(users)
    return CallInfo(usage, vendor(None, model), model)


def _workspace(folder: Path) -> str | None:
    try:
        item = orjson.loads(read_regular(folder / HISTORY_ITEM))
    except (OSError, orjson.JSONDecodeError):
        return None
    value = item.get("workspace") if isinstance(item, dict) else None
    return value if isinstance(value, str) and value else None


class RooCodeImporter:
    """Reads Roo Code's (and Kilo Code's) task folders."""

    name = NAME

    def sniff_file(self, path: Path, head: bytes) -> bool:
        """Always False: a task is a folder."""
        return False

    def sniff_dir(self, path: Path) -> bool:
        """A task folder of Roo's or Kilo's (by the extension folder it lies in, else its content)."""
        try:
            return task_agent(path) == NAME
        except OSError:
            return False

    def parse(self, path: Path) -> Iterator[Record]:
        """A task folder as one session, then a warning for each damaged file or entry."""
        if task_agent(path) != NAME:
            raise InputError(
                "not a Roo Code task folder",
                path=str(path),
                hint="pass a globalStorage/rooveterinaryinc.roo-cline/tasks/<id> folder",
            )
        task = read_task(path)
        layout = KILO_LAYOUT if KILO_EXTENSION in path.parts else LAYOUT
        project = _workspace(path) or project_of(task.history)
        yield build_task(task, tool=NAME, layout=layout, read_call=read_call, project=project)
        tally = WarningTally(str(path))
        tally.extend(task.warnings)
        yield from tally

    def default_paths(self) -> list[Path]:
        """Each editor's Roo Code and Kilo Code task folders."""
        return [*editor_storage_dirs(ROO_EXTENSION), *editor_storage_dirs(KILO_EXTENSION)]


IMPORTER = RooCodeImporter()
