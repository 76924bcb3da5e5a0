"""A whole recording read into one session: its row (metadata, project, parent) and its records.

`info` / `error` / `warning` messages are never sent to the model, so they yield no parts; the session's
`meta` counts them (`ui_messages`), the masked tool outputs the builder found (`masked_tool_outputs`)
and those of them it read back from gemini-cli's `tool-outputs/` files (`recovered_tool_outputs`).
Files are looked for only under the project temp dir of a recording in a `chats/` folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.core.records import ParsedSession, Record, Session
from calib.importers.common import timestamp
from calib.importers.gemini_cli.builder import Builder
from calib.importers.gemini_cli.document import DAMAGED_HINT, SENT_TYPES, Document, read_document
from calib.importers.gemini_cli.identity import NAME, session_uid
from calib.importers.gemini_cli.project import find_parent, project_folder, project_root


def uid_of(path: Path, meta: dict[str, Any]) -> str:
    """The session uid the recording's metadata names."""
    session_id = meta.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise InputError("no sessionId in the session metadata", path=str(path), hint=DAMAGED_HINT)
    start = meta.get("startTime")
    return session_uid(session_id, start if isinstance(start, str) else "")


def _nested(path: Path) -> bool:
    """True for a sub-agent recording in a folder of its own inside `chats/`."""
    return path.parent.name != "chats" and path.parent.parent.name == "chats"


def temp_dir(path: Path) -> Path | None:
    """The project temp dir (`~/.gemini/tmp/<project>`) of a recording in a `chats/` folder, else None."""
    nested = _nested(path)
    return project_folder(path, nested) if nested or path.parent.name == "chats" else None


def session_row(
    path: Path,
    doc: Document,
    uid: str,
    masked: int,
    ui: dict[str, int],
    checkpoints: int,
    recovered: int = 0,
) -> Session:
    """The session row: metadata, project, parent and what the timeline held."""
    meta = doc.meta
    session_id = str(meta.get("sessionId"))
    start = meta.get("startTime") if isinstance(meta.get("startTime"), str) else ""
    nested = _nested(path)
    is_subagent = meta.get("kind") == "subagent" or nested
    project_hash = meta.get("projectHash") if isinstance(meta.get("projectHash"), str) else None
    info: dict[str, Any] = {
        "project_hash": project_hash,
        "kind": meta.get("kind"),
        "directories": meta.get("directories"),
    }
    parent_uid = None
    if nested:
        info["parent_session_id"] = path.parent.name
        parent_uid = find_parent(path.parent.parent, path.parent.name, start or None)
    elif is_subagent:
        # Before sub-agent folders, a sub-agent recorded under its parent's sessionId beside it.
        parent_uid = find_parent(path.parent, session_id, start or None, exclude=path)
    info.update(
        {
            "checkpoints": checkpoints or None,
            "rewinds": doc.rewinds or None,
            "masked_tool_outputs": masked or None,
            "recovered_tool_outputs": recovered or None,
            "ui_messages": ui or None,
            "unknown_records": doc.unknown_records or None,
        }
    )
    is_chats_child = path.parent.name == "chats" or nested
    return Session(
        uid=uid,
        tool=NAME,
        native_id=session_id,
        source_path=str(path),
        layout=doc.layout,
        project=project_root(project_folder(path, nested), project_hash) if is_chats_child else None,
        title=meta.get("summary") if isinstance(meta.get("summary"), str) else None,
        started_at=timestamp(meta.get("startTime")),
        ended_at=timestamp(meta.get("lastUpdated")),
        parent_uid=parent_uid,
        is_subagent=is_subagent,
        meta={k: v for k, v in info.items() if v is not None} or None,
    )


def ui_counts(messages: Iterable[dict[str, Any]], into: dict[str, int] | None = None) -> dict[str, int]:
    """How many messages of each type never sent to the model (added to the counts `into`)."""
    ui = dict(into or {})
    for message in messages:
        kind = message.get("type")
        if kind not in SENT_TYPES:
            ui[str(kind)] = ui.get(str(kind), 0) + 1
    return ui


def build(path: Path, doc: Document) -> tuple[ParsedSession, Builder, dict[str, int]]:
    """The session of a whole document, with the builder that laid it out and its ui-message counts."""
    uid = uid_of(path, doc.meta)
    builder = Builder(path, doc, uid)
    for segment in doc.segments:
        builder.segment(segment)
    temp = temp_dir(path)
    if temp is not None:
        builder.recover(temp)
    unique = {key: m for segment in doc.segments for key, m in segment.messages.items()}
    ui = ui_counts(unique.values())
    session = session_row(path, doc, uid, builder.masked, ui, len(doc.segments) - 1, builder.recovered)
    return builder.session(session), builder, ui


def parse_session(path: Path) -> ParsedSession:
    """Parse one gemini-cli recording (any layout) into a session with its calls and parts."""
    return build(path, read_document(path))[0]


def parse_records(path: Path) -> list[Record]:
    """One recording's session, then a warning for each line left out of it (see `document`)."""
    doc = read_document(path)
    return [build(path, doc)[0], *doc.warnings]
