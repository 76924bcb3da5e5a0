"""Laying one path of the tree out as numbered parts and the calls the session owns.

- Parts follow the file order of the path's lines (the order Claude Code wrote them, which is the
  order of the request history: the tool_use blocks of a step, then their results). `seq` 0..n-1.
- A call is placed at the first line of it on the path: `prompt_end` = the parts before its first
  output part, `prompt_start` = where the current context begins: 0, the first part after the latest
  `compact_boundary` (the summary that follows it), or the first part after a restart.
- Output parts carry the uid of the call that produced them when the session owns that call; in a
  branch session the shared prefix's output parts carry none (their calls belong to the main session).
- `microcompact_boundary` clears old tool results without a summary: the results it names
  (`compactedToolIds`) are pruned at its timestamp, sent from then on as `PRUNED_TEXT` (Claude Code's
  replacement text is not recorded in the transcript; OpenCode and Dexto's is used as its stand-in).
- Lines of `type` progress, attachment, file-history-snapshot, summary (a title), queue-operation,
  pr-link and `system` lines other than the boundaries are not prompt and yield no part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from calib.core.records import Call, Part
from calib.importers.claude_code.calls import CallKey, Group, call_key, make_call
from calib.importers.claude_code.content import assistant_entries, user_entries
from calib.importers.common import PRUNED_TEXT, timestamp

_TITLE_CHARS = 80


@dataclass(slots=True)
class Layout:
    """One session's parts and calls, and the events met on its path."""

    parts: list[Part] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    microcompactions: list[dict[str, Any]] = field(default_factory=list)
    title: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None


def _title(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 3].rstrip() + "..."


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def lay_out(
    records: list[tuple[int, dict[str, Any]]],
    nodes: list[int],
    restarts: set[int],
    owned: set[CallKey],
    groups: dict[CallKey, Group],
    session_uid: str,
    tool_names: dict[str, str],
) -> Layout:
    """The parts and calls of the messages `nodes` (file order) for the session `session_uid`."""
    out = Layout()
    parts = out.parts
    calls = out.calls
    call_uids: dict[CallKey, str] = {}
    used_uids: set[str] = set()
    result_part: dict[str, int] = {}
    laid: set[str] = set()
    prompt_start = 0
    prefix = f"{session_uid}#"

    def add(
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        message_id: str | None,
        tool_name: str | None = None,
        call_uid: str | None = None,
    ) -> None:
        seq = len(parts)
        parts.append(
            Part(f"{prefix}{seq}", session_uid, seq, role, kind, text, message_id, tool_name, call_uid, ts)
        )

    for index in nodes:
        _, record = records[index]
        uid = record.get("uuid")
        if isinstance(uid, str):
            if uid in laid:
                continue  # the same line written twice
            laid.add(uid)
        ts = timestamp(record.get("timestamp"))
        if ts is not None:
            out.started_at = ts if out.started_at is None or ts < out.started_at else out.started_at
            out.ended_at = ts if out.ended_at is None or ts > out.ended_at else out.ended_at
        if index in restarts:
            prompt_start = len(parts)
        kind = record.get("type")
        if kind == "system":
            subtype = record.get("subtype")
            if subtype == "compact_boundary":
                prompt_start = len(parts)
                meta = record.get("compactMetadata")
                meta = meta if isinstance(meta, dict) else {}
                event: dict[str, Any] = {
                    "trigger": meta.get("trigger"),
                    "preTokens": _int(meta.get("preTokens")),
                }
                if _int(meta.get("postTokens")) is not None:
                    event["postTokens"] = _int(meta.get("postTokens"))
                event["at_call"] = len(calls)
                out.compactions.append(event)
            elif subtype == "microcompact_boundary":
                meta = record.get("microcompactMetadata")
                meta = meta if isinstance(meta, dict) else {}
                ids = meta.get("compactedToolIds")
                cleared = 0
                for tool_id in ids if isinstance(ids, list) else []:
                    at = result_part.get(tool_id) if isinstance(tool_id, str) else None
                    if at is not None and parts[at].pruned_at is None and ts is not None:
                        parts[at].pruned_at = ts
                        parts[at].pruned_text = PRUNED_TEXT
                        cleared += 1
                out.microcompactions.append(
                    {
                        "trigger": meta.get("trigger"),
                        "preTokens": _int(meta.get("preTokens")),
                        "tokensSaved": _int(meta.get("tokensSaved")),
                        "cleared": cleared,
                        "at_call": len(calls),
                    }
                )
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if kind == "user":
            summary = bool(record.get("isCompactSummary"))
            line_id = uid if isinstance(uid, str) else None
            for part_kind, text, tool_id, _ in user_entries(content, summary):
                if part_kind == "tool_result":
                    if tool_id is not None:
                        result_part.setdefault(tool_id, len(parts))
                    add("user", part_kind, text, ts, line_id, tool_names.get(tool_id or ""))
                else:
                    add("user", part_kind, text, ts, line_id)
                    if (
                        out.title is None
                        and part_kind == "user_text"
                        and not record.get("isMeta")
                        and not text.lstrip().startswith("<")
                    ):
                        out.title = _title(text)
            continue
        if kind != "assistant":
            continue
        key = call_key(record)
        if key is None:
            continue  # synthetic or API-error text: shown to the user, never produced by the model
        call_uid: str | None = None
        if key in owned:
            call_uid = call_uids.get(key)
            if call_uid is None:
                call_uid = f"{session_uid}:{key[0]}"
                if call_uid in used_uids:
                    call_uid = f"{call_uid}:{key[1]}"
                used_uids.add(call_uid)
                call_uids[key] = call_uid
                calls.append(
                    make_call(groups[key], call_uid, session_uid, len(calls), prompt_start, len(parts))
                )
        for part_kind, text, _, name in assistant_entries(content):
            add("assistant", part_kind, text, ts, key[0], name, call_uid)
    return out
