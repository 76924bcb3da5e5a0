"""The JSON storage trees, each read as one folder source.

- `opencode-json-tree`: `<data>/storage/` with `session/<projectID>/<ses>.json`, `message/<ses>/<msg>.json`,
  `part/<msg>/<prt>.json` (mid-2025 to the SQLite switch).
- `opencode-project-tree`: the earliest `<data>/project/<slug>/storage/session/{info,message,part}` tree,
  with MessageV1 messages (inline parts, usage in `metadata.assistant.tokens`) or MessageV2 ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from calib.core.errors import InputWarning
from calib.core.records import ParsedSession
from calib.importers.opencode.build import from_message_v1, message_sort_key
from calib.importers.opencode.files import json_files, load_object, stem
from calib.importers.opencode.session import Messages, check_message, cwd, parsed_session


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
    """Every session of a `<data>/storage` tree (and a warning for each file that is no regular file)."""
    base = str(root)
    message_root, part_root = os.path.join(base, "message"), os.path.join(base, "part")
    special: list[InputWarning] = []  # FIFOs and such named like the tree's files: never opened
    for project in sorted(p for p in (root / "session").iterdir() if p.is_dir()):
        for file in json_files(str(project), special):
            info = load_object(file, "session")
            info.setdefault("id", stem(file))
            session_id = str(info["id"])
            messages: Messages = []
            for msg_file in json_files(os.path.join(message_root, session_id), special):
                msg = check_message(load_object(msg_file, "message"), msg_file)
                msg.setdefault("id", stem(msg_file))
                part_files = json_files(os.path.join(part_root, str(msg["id"])), special)
                messages.append((msg, [load_object(p, "part") for p in part_files]))
            messages.sort(key=lambda m: message_sort_key(m[0]))
            yield parsed_session(info, root, "opencode-json-tree", messages)
            yield from special
            special.clear()
        yield from special
        special.clear()


def parse_project_tree(root: Path) -> Iterator[ParsedSession | InputWarning]:
    """Every session of a `<data>/project/<slug>/storage` tree (and a warning for each file that is no
    regular file)."""
    # The slug stands in for the project until a message names its cwd.
    slug = root.parent.name
    session_root = os.path.join(str(root), "session")
    special: list[InputWarning] = []  # FIFOs and such named like the tree's files: never opened
    for file in json_files(os.path.join(session_root, "info"), special):
        info = load_object(file, "session")
        info.setdefault("id", stem(file))
        session_id = str(info["id"])
        messages: Messages = []
        for msg_file in json_files(os.path.join(session_root, "message", session_id), special):
            raw = load_object(msg_file, "message")
            if isinstance(raw.get("metadata"), dict) and isinstance(raw.get("parts"), list):
                msg, parts = from_message_v1(raw)
                check_message(msg, msg_file)
            else:
                msg = check_message(raw, msg_file)
                msg.setdefault("id", stem(msg_file))
                part_dir = os.path.join(session_root, "part", session_id, str(msg["id"]))
                parts = [load_object(p, "part") for p in json_files(part_dir, special)]
            messages.append((msg, parts))
        messages.sort(key=lambda m: message_sort_key(m[0]))
        yield parsed_session(info, root, "opencode-project-tree", messages, project=cwd(messages) or slug)
        yield from special
        special.clear()
    yield from special
