"""What every OpenCode layout shares: checking a message, and one session's row and records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.core.records import ParsedSession, Session
from calib.importers.common import ms_to_datetime
from calib.importers.opencode.build import build_session, obj

TOOL = "opencode"

Info = dict[str, Any]
Messages = list[tuple[Info, list[dict[str, Any]]]]


def cwd(messages: Messages) -> str | None:
    """The working folder the first message that names one ran in."""
    for info, _ in messages:
        path = info.get("path")
        if isinstance(path, dict) and isinstance(path.get("cwd"), str) and path["cwd"]:
            return str(path["cwd"])
    return None


NOT_A_MESSAGE = "not an OpenCode message (no role user/assistant)"


def is_message(info: Info) -> bool:
    """True when `info` is an OpenCode message: its role is user or assistant."""
    return info.get("role") in ("user", "assistant")


def check_message(info: Any, where: str | Path, row: str | None = None) -> Info:
    """`info` when it is an OpenCode message (role user or assistant), else an `InputError`."""
    if not isinstance(info, dict) or not is_message(info):
        raise InputError(f"message {row} is {NOT_A_MESSAGE}" if row else NOT_A_MESSAGE, path=str(where))
    return info


def parsed_session(
    info: Info, source: Path, layout: str, messages: Messages, project: str | None = None
) -> ParsedSession:
    """The session `info` describes, with the calls and parts of its `messages`."""
    return build_session(session_record(info, source, layout, messages, project), messages)


def session_record(
    info: Info, source: Path, layout: str, messages: Messages, project: str | None = None
) -> Session:
    """The session row `info` describes (the same uid for the same id in every layout)."""
    native = str(info.get("id"))
    uid = f"{TOOL}:{native}"
    times = obj(info.get("time"))
    parent = info.get("parentID")
    directory = info.get("directory") if isinstance(info.get("directory"), str) else None
    if not directory:
        directory = project or cwd(messages)
    meta = {
        k: info[k]
        for k in ("slug", "projectID", "version", "agent", "model", "workspaceID")
        if info.get(k) is not None
    }
    # Session aggregates are unreliable (formats.md 2.3); kept for reference only.
    aggregates = {k: info[k] for k in ("cost", "tokens") if info.get(k) is not None}
    if aggregates:
        meta["aggregates"] = aggregates
    ended = ms_to_datetime(times.get("updated"))
    if ended is None and messages:
        ended = ms_to_datetime(obj(messages[-1][0].get("time")).get("created"))
    return Session(
        uid=uid,
        tool=TOOL,
        native_id=native,
        source_path=str(source),
        layout=layout,
        project=directory,
        title=info.get("title") if isinstance(info.get("title"), str) else None,
        started_at=ms_to_datetime(times.get("created")),
        ended_at=ended,
        parent_uid=f"{TOOL}:{parent}" if isinstance(parent, str) and parent else None,
        is_subagent=isinstance(parent, str) and bool(parent),
        meta=meta or None,
    )
