"""Which project a recording belongs to, and which main session a sub-agent's recording belongs to."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

import orjson

from calib.core.paths import open_regular, read_regular
from calib.importers.gemini_cli.identity import session_uid
from calib.importers.gemini_cli.sniff import first_line

_HEAD_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]*)"')
_HEAD_START_TIME = re.compile(rb'"startTime"\s*:\s*"([^"]*)"')
_TAIL_SUBAGENT = re.compile(rb'"kind"\s*:\s*"subagent"')


def project_folder(path: Path, is_nested: bool) -> Path:
    """The `tmp/<project>` folder of a recording (`is_nested`: in a sub-agent folder inside `chats/`)."""
    chats = path.parent.parent if is_nested else path.parent
    return chats.parent


def project_root(project_dir: Path, project_hash: str | None) -> str | None:
    """The project a `tmp/<id>` folder belongs to: its `.project_root` marker, else `projects.json`."""
    marker = project_dir / ".project_root"
    try:
        root = read_regular(marker).decode("utf-8").strip()  # a FIFO put there is never opened
    except OSError:
        root = ""
    if root:
        return root
    registry = project_dir.parent.parent / "projects.json"  # ~/.gemini/projects.json beside tmp/
    try:
        projects = orjson.loads(read_regular(registry)).get("projects")
    except (OSError, orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(projects, dict):
        return None
    for root_path, slug in projects.items():
        if slug == project_dir.name:
            return str(root_path)
        if project_hash and hashlib.sha256(str(root_path).encode()).hexdigest() == project_hash:
            return str(root_path)
    return None


_PEEKED: dict[tuple[Path, int, int], tuple[str | None, str | None, bool]] = {}


def _peek(path: Path) -> tuple[str | None, str | None, bool]:
    """(sessionId, startTime, is_subagent) of a recording, from its first and last bytes only.

    Every sub-agent of a folder looks among the same files for its parent: each file is read once for
    as long as its size and modification time stay the same.
    """
    try:
        stat = path.stat()
    except OSError:
        return None, None, False
    key = (path, stat.st_mtime_ns, stat.st_size)
    found = _PEEKED.get(key)
    if found is None:
        if len(_PEEKED) >= 1 << 14:
            _PEEKED.clear()
        found = _PEEKED[key] = _read_peek(path)
    return found


def _read_peek(path: Path) -> tuple[str | None, str | None, bool]:
    try:
        with open_regular(path) as fh:  # a FIFO named like a recording is never opened
            head = fh.read(4096)
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - 512))
            tail = fh.read()
    except OSError:
        return None, None, False
    line = first_line(head.lstrip())
    if line.strip() != b"{":
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict) and "messages" not in record:
            return record.get("sessionId"), record.get("startTime"), record.get("kind") == "subagent"
    sid = _HEAD_SESSION_ID.search(head)
    start = _HEAD_START_TIME.search(head)
    return (
        sid.group(1).decode() if sid else None,
        start.group(1).decode() if start else None,
        _TAIL_SUBAGENT.search(tail) is not None,
    )


def _matching(folder: Path, pattern: str) -> list[Path]:
    """`sorted(folder.glob(pattern))` for a pattern of one name: a listing and a match per name, not
    pathlib's selectors (every sub-agent of a folder looks for its parent there)."""
    if "/" in pattern or pattern in ("", ".", ".."):
        return sorted(folder.glob(pattern))
    match = _name_matcher(pattern)
    return sorted(folder / name for name in os.listdir(folder) if match(name))


@functools.lru_cache(maxsize=256)
def _name_matcher(pattern: str) -> Callable[[str], re.Match[str] | None]:
    # what pathlib matches names with on POSIX: the shell pattern as a regular expression, case and all
    return re.compile(fnmatch.translate(pattern)).fullmatch


def find_parent(chats: Path, parent_id: str, before: str | None, exclude: Path | None = None) -> str | None:
    """Uid of the main session `parent_id` that was running at `before`, looked up among `chats/` files."""
    best: tuple[str, str] | None = None
    try:
        candidates = _matching(chats, f"session-*-{parent_id[:8]}.json*")
    except OSError:
        return None
    for candidate in candidates:
        if exclude is not None and candidate == exclude:
            continue
        sid, start, is_sub = _peek(candidate)
        if sid != parent_id or start is None or is_sub:
            continue
        if before is not None and start > before:
            continue
        if best is None or start > best[0]:
            best = (start, sid)
    return session_uid(best[1], best[0]) if best else None
