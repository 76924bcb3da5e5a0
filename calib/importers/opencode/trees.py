"""The JSON storage trees, each read as one folder source.

- `opencode-json-tree`: `<data>/storage/` with `session/<projectID>/<ses>.json`, `message/<ses>/<msg>.json`,
  `part/<msg>/<prt>.json` (mid-2025 to the SQLite switch).
- `opencode-project-tree`: the earliest `<data>/project/<slug>/storage/session/{info,message,part}` tree,
  with MessageV1 messages (inline parts, usage in `metadata.assistant.tokens`) or MessageV2 ones.

What is named like a file of the tree but is no regular file (a FIFO, whose open would wait for a
writer) is never opened: it is left out with a warning (`calib.importers.opencode.files.json_files`).
A damaged file costs only what it holds, as a damaged row of the database does: a part or message file
that is not a JSON object (cut short, nested too deep, another JSON value), a message without role user
or assistant, and a message whose records cannot be built (a field of a wrong type) are left out with
their message, a damaged session file with its session, each with one warning naming the file
(`calib.importers.common.damaged_file`, `build_leaving_out`); every other session of the folder is read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from calib.core.errors import InputWarning
from calib.core.records import ParsedSession
from calib.importers.common import build_leaving_out, damaged_file
from calib.importers.opencode.build import from_message_v1, message_sort_key
from calib.importers.opencode.files import json_files, stem, tree_object
from calib.importers.opencode.session import NOT_A_MESSAGE, Info, Messages, cwd, is_message, parsed_session

_REST = "the rest of the storage folder was imported"
_LOST_SESSION = f"this session and its messages were left out, {_REST}"
_LOST_MESSAGE = f"this message and its parts were left out, {_REST}"

# A message as read: its file, the message and its parts.
_Read = tuple[str, Info, list[dict[str, Any]]]


def tree_layout(path: Path) -> str | None:
    """Which JSON tree a `storage` folder holds, or None."""
    if path.name != "storage":
        return None
    if (path / "session" / "info").is_dir() and (path / "session" / "message").is_dir():
        return "opencode-project-tree"
    if (path / "session").is_dir() and (path / "message").is_dir():
        return "opencode-json-tree"
    return None


def parse_json_tree(root: Path) -> Iterator[ParsedSession | InputWarning]:
    """Every session of a `<data>/storage` tree, and a warning for each damaged or special file left out."""
    base = str(root)
    message_root, part_root = os.path.join(base, "message"), os.path.join(base, "part")
    special: list[InputWarning] = []  # FIFOs and such named like the tree's files: never opened
    for project in sorted(p for p in (root / "session").iterdir() if p.is_dir()):
        for file in json_files(str(project), special):
            info = tree_object(file, _LOST_SESSION)
            if isinstance(info, InputWarning):
                yield info
                continue
            info.setdefault("id", stem(file))
            session_id = str(info["id"])
            read: list[_Read | InputWarning] = []
            for msg_file in json_files(os.path.join(message_root, session_id), special):
                msg = _message(msg_file)
                if isinstance(msg, InputWarning):
                    read.append(msg)
                    continue
                msg.setdefault("id", stem(msg_file))
                read.append(_with_parts(msg_file, msg, os.path.join(part_root, str(msg["id"])), special))
            yield from _session(
                file, session_id, read, partial(parsed_session, info, root, "opencode-json-tree")
            )
            yield from special
            special.clear()
        yield from special
        special.clear()


def parse_project_tree(root: Path) -> Iterator[ParsedSession | InputWarning]:
    """Every session of a `<data>/project/<slug>/storage` tree, and a warning for each damaged or special
    file left out."""
    # The slug stands in for the project until a message names its cwd.
    slug = root.parent.name
    session_root = os.path.join(str(root), "session")
    special: list[InputWarning] = []  # FIFOs and such named like the tree's files: never opened
    for file in json_files(os.path.join(session_root, "info"), special):
        info = tree_object(file, _LOST_SESSION)
        if isinstance(info, InputWarning):
            yield info
            continue
        info.setdefault("id", stem(file))
        session_id = str(info["id"])
        read: list[_Read | InputWarning] = []
        for msg_file in json_files(os.path.join(session_root, "message", session_id), special):
            raw = tree_object(msg_file, _LOST_MESSAGE)
            if isinstance(raw, InputWarning):
                read.append(raw)
            elif isinstance(raw.get("metadata"), dict) and isinstance(raw.get("parts"), list):
                msg, parts = from_message_v1(raw)
                read.append((msg_file, msg, parts) if is_message(msg) else _not_a_message(msg_file))
            elif not is_message(raw):
                read.append(_not_a_message(msg_file))
            else:
                raw.setdefault("id", stem(msg_file))
                part_dir = os.path.join(session_root, "part", session_id, str(raw["id"]))
                read.append(_with_parts(msg_file, raw, part_dir, special))
        yield from _session(file, session_id, read, partial(_project_session, info, root, slug))
        yield from special
        special.clear()
    yield from special


def _project_session(info: Info, root: Path, slug: str, messages: Messages) -> ParsedSession:
    return parsed_session(info, root, "opencode-project-tree", messages, project=cwd(messages) or slug)


def _not_a_message(file: str) -> InputWarning:
    return damaged_file(file, NOT_A_MESSAGE, _LOST_MESSAGE)


def _message(file: str) -> Info | InputWarning:
    """The message in a message file, or the warning that leaves it out."""
    msg = tree_object(file, _LOST_MESSAGE)
    if isinstance(msg, InputWarning) or is_message(msg):
        return msg
    return _not_a_message(file)


def _with_parts(file: str, msg: Info, part_dir: str, special: list[InputWarning]) -> _Read | InputWarning:
    """A message with the parts in its folder, or the warning for the first damaged part, which costs
    the message (a message missing a part would be scored on a prompt it did not send); a part file that
    is no regular file is left out with a warning added to `special`."""
    parts = []
    lost = f"its message {msg['id']} was left out, {_REST}"
    for part_file in json_files(part_dir, special):
        part = tree_object(part_file, lost)
        if isinstance(part, InputWarning):
            return part
        parts.append(part)
    return file, msg, parts


def _session(
    file: str, session_id: str, read: list[_Read | InputWarning], build: Callable[[Messages], ParsedSession]
) -> list[ParsedSession | InputWarning]:
    """The session of session file `file` built from the messages read (in conversation order), after
    the warnings for those left out."""
    warnings = [r for r in read if isinstance(r, InputWarning)]
    messages = [r for r in read if not isinstance(r, InputWarning)]
    messages.sort(key=lambda m: message_sort_key(m[1]))
    built = build_leaving_out(
        lambda kept: build([(msg, parts) for _, msg, parts in kept]),
        messages,
        damaged=lambda message, what: damaged_file(message[0], what, _LOST_MESSAGE),
        path=file,
        session=session_id,
        rest=_REST,
    )
    return [*warnings, *built]
