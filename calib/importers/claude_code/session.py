"""A whole transcript read into its sessions: the main one, its abandoned branches and sub-agents.

- Main session: uid `claude-code:<sessionId>`, layout `claude-code-jsonl`. A sub-agent file
  (`<project>/<sessionId>/subagents/agent-<agentId>.jsonl`) is the session
  `claude-code:<sessionId>:agent-<agentId>` with `is_subagent` set, its parent the main session, and
  the `agentType` / `spawnDepth` / `model` of `agent-<agentId>.meta.json` in its meta. Sidechain lines
  inside a main file (`isSidechain`, written by versions before sub-agent files) are read the same way
  as sub-agent sessions of that file, one per `agentId`.
- Branch sessions (see `tree`): `<session uid>:branch-<first 8 characters of the branch's first
  uuid>`, not sub-agents, their parent the session they left.
- project: the `cwd` of the lines (the folder name is a lossy slug, never decoded). title: the last
  `custom-title` or `summary` line, else the first line of the first user text typed (not an `isMeta`
  injection, not a `<command...>` wrapper). started_at / ended_at: the first and last line timestamps.
- meta: `versions` (CLI versions seen), `compactions` ([{trigger, preTokens, postTokens?, at_call}]),
  `microcompactions`, `placeholder_calls`, `skipped_lines`, `branches`, `restarts`, `synthetic_lines`,
  `api_error_lines`, and for a sub-agent `agent_id`, `agent_type`, `spawn_depth`, `agent_model`.
- Lines left out (`calib.importers.claude_code.log`): an `InputWarning` for each of the first few
  damaged lines and one `MoreWarnings` counting the rest, then one for a last line still being
  written and one for NUL bytes after the last line, given beside the sessions (`line_warnings`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputWarning, MoreWarnings
from calib.core.paths import read_regular
from calib.core.records import ParsedSession, Session
from calib.importers.claude_code.builder import Layout, lay_out
from calib.importers.claude_code.calls import SYNTHETIC_MODEL, CallKey, call_key, group_calls
from calib.importers.claude_code.log import READ_MEMORY_FACTOR, Log, read_log
from calib.importers.claude_code.tree import branches, build_tree, with_results
from calib.importers.common import damaged_line, timestamp, unfinished_line
from calib.importers.logfile import nul_tail_warning, read_log_bytes

NAME = "claude-code"
LAYOUT = "claude-code-jsonl"
LAYOUTS = (LAYOUT,)

_AGENT_FILE = re.compile(r"^agent-(.+)\.jsonl$")

Records = list[tuple[int, dict[str, Any]]]


@dataclass(slots=True)
class Origin:
    """Where a transcript sits: a main session file, or a sub-agent file of a session."""

    session_id: str | None = None  # from the path of a sub-agent file
    agent_id: str | None = None
    agent_meta: dict[str, Any] = field(default_factory=dict)


def origin_of(path: Path) -> Origin:
    """What the path says of a transcript (sub-agent files only; a main file says nothing)."""
    match = _AGENT_FILE.match(path.name)
    if match is None or path.parent.name != "subagents":
        return Origin()
    origin = Origin(path.parent.parent.name, match.group(1))
    meta_path = path.with_name(f"agent-{origin.agent_id}.meta.json")
    try:
        meta = orjson.loads(read_regular(meta_path))  # a FIFO put there is never opened
    except (OSError, orjson.JSONDecodeError):
        meta = None
    if isinstance(meta, dict):
        origin.agent_meta = meta
    return origin


def _version_key(version: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", version))


def _first_str(records: Records, key: str) -> str | None:
    for _, record in records:
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _span(records: Records) -> tuple[datetime | None, datetime | None]:
    stamps = [t for t in (timestamp(r.get("timestamp")) for _, r in records) if t is not None]
    return (min(stamps), max(stamps)) if stamps else (None, None)


def _title_line(records: Records) -> str | None:
    title = None
    for _, record in records:
        kind = record.get("type")
        if kind == "custom-title" and isinstance(record.get("customTitle"), str):
            title = record["customTitle"]
        elif kind == "summary" and isinstance(record.get("summary"), str) and title is None:
            title = record["summary"]
    if title is None:
        for _, record in reversed(records):
            if record.get("type") == "summary" and isinstance(record.get("summary"), str):
                return str(record["summary"])
    return title


def _partitions(records: Records, origin: Origin) -> list[tuple[str | None, Records]]:
    """(agent id, records) per conversation of a file: the main one first, then inline sidechains."""
    if origin.agent_id is not None:
        return [(origin.agent_id, records)]
    main: Records = []
    side: dict[str, Records] = {}
    for item in records:
        record = item[1]
        if record.get("isSidechain") is True:
            agent = record.get("agentId")
            side.setdefault(agent if isinstance(agent, str) and agent else "sidechain", []).append(item)
        else:
            main.append(item)
    return [(None, main), *sorted(side.items())]


def _tool_names(records: Records) -> dict[str, str]:
    names: dict[str, str] = {}
    for _, record in records:
        if record.get("type") != "assistant":
            continue
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                tid, name = block.get("id"), block.get("name")
                if isinstance(tid, str) and isinstance(name, str):
                    names[tid] = name
    return names


def _meta(layout: Layout, extra: dict[str, Any]) -> dict[str, Any] | None:
    info: dict[str, Any] = dict(extra)
    if layout.compactions:
        info["compactions"] = layout.compactions
    if layout.microcompactions:
        info["microcompactions"] = layout.microcompactions
    placeholders = sum(1 for c in layout.calls if c.output_placeholder)
    if placeholders:
        info["placeholder_calls"] = placeholders
    return {k: v for k, v in info.items() if v not in (None, 0, [], {})} or None


def _conversation(
    path: Path,
    records: Records,
    base_uid: str,
    session_id: str,
    agent: str | None,
    origin: Origin,
    log: Log | None,
) -> list[ParsedSession]:
    tree = build_tree(records)
    groups = group_calls(records)
    keys: dict[int, CallKey | None] = {}

    def call_of(index: int) -> CallKey | None:
        if index not in keys:
            record = records[index][1]
            keys[index] = call_key(record) if record.get("type") == "assistant" else None
        return keys[index]

    paths = branches(tree, call_of)
    names = _tool_names(records)
    versions = sorted(
        {r["version"] for _, r in records if isinstance(r.get("version"), str)}, key=_version_key
    )
    assistants = [
        r for _, r in records if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
    ]
    synthetic = sum(1 for r in assistants if r["message"].get("model") == SYNTHETIC_MODEL)
    api_errors = sum(1 for r in assistants if r.get("isApiErrorMessage"))
    cwds = list(dict.fromkeys(r["cwd"] for _, r in records if isinstance(r.get("cwd"), str) and r["cwd"]))
    started, ended = _span(records)
    title_line = _title_line(records)
    is_sub = agent is not None
    parent_uid = f"{NAME}:{session_id}" if is_sub else None
    out: list[ParsedSession] = []
    covered: set[CallKey] = set()
    main_title: str | None = None
    for number, branch in enumerate(paths):
        nodes = with_results(tree, branch.nodes)
        on_path = {c for c in map(call_of, branch.nodes) if c is not None}
        owned = on_path - covered
        covered |= owned
        if branch.fork is None:
            uid = base_uid
        else:
            fork_uuid = str(records[branch.fork][1].get("uuid", ""))
            uid = f"{base_uid}:branch-{fork_uuid[:8]}"
            if any(p.session.uid == uid for p in out):
                uid = f"{base_uid}:branch-{fork_uuid}"
        layout = lay_out(records, nodes, tree.restarts, owned, groups, uid, names)
        extra: dict[str, Any] = {"versions": versions}
        if branch.fork is None:
            main_title = title_line or layout.title
            extra.update(
                {
                    "branches": len(paths) - 1,
                    "restarts": len(tree.restarts),
                    "unlinked_parents": tree.unlinked,
                    "skipped_lines": len(log.skipped) if log is not None and number == 0 else 0,
                    "synthetic_lines": synthetic,
                    "api_error_lines": api_errors,
                    "cwds": cwds if len(cwds) > 1 else None,
                }
            )
            if is_sub:
                extra.update(
                    {
                        "agent_id": agent,
                        "agent_type": origin.agent_meta.get("agentType"),
                        "spawn_depth": origin.agent_meta.get("spawnDepth"),
                        "agent_model": origin.agent_meta.get("model"),
                    }
                )
        else:
            extra["branch_of"] = base_uid
            extra["fork_uuid"] = records[branch.fork][1].get("uuid")
        session = Session(
            uid=uid,
            tool=NAME,
            native_id=session_id,
            source_path=str(path),
            layout=LAYOUT,
            project=cwds[0] if cwds else None,
            title=main_title,
            started_at=started if branch.fork is None else layout.started_at,
            ended_at=ended if branch.fork is None else layout.ended_at,
            parent_uid=parent_uid if branch.fork is None else base_uid,
            is_subagent=is_sub and branch.fork is None,
            meta=_meta(layout, extra),
        )
        out.append(ParsedSession(session, layout.calls, layout.parts))
    return out


def line_warnings(path: Path, log: Log, after: int = 0) -> list[InputWarning]:
    """A warning for each line of `log` left out after line `after` (the lines up to it were warned
    about by an earlier read): the first few damaged lines in full and a count of the rest, then an
    unfinished last line."""
    kept, more = log.skipped.after(after)
    out: list[InputWarning] = [damaged_line(path, n, why) for n, why in kept]
    if more:
        out.append(MoreWarnings(more, path=str(path)))
    if log.torn_tail > after:
        out.append(unfinished_line(path, log.torn_tail, NAME))
    if log.nul_tail and log.nul_line > after:
        out.append(nul_tail_warning(path, log.nul_tail, log.nul_line, NAME))
    return out


def parse_sessions(path: Path, data: bytes | None = None, log: Log | None = None) -> list[ParsedSession]:
    """Every session a transcript holds: the main one, then its branches, then inline sidechains."""
    if log is None:
        log = read_log(path, read_log_bytes(path, READ_MEMORY_FACTOR) if data is None else data)
    origin = origin_of(path)
    records = log.records
    session_id = _first_str(records, "sessionId") or origin.session_id or path.stem
    out: list[ParsedSession] = []
    for number, (agent, part) in enumerate(_partitions(records, origin)):
        base = f"{NAME}:{session_id}" if agent is None else f"{NAME}:{session_id}:agent-{agent}"
        if number > 0 and not any(r.get("uuid") for _, r in part):
            continue
        sessions = _conversation(path, part, base, session_id, agent, origin, log if number == 0 else None)
        if not sessions:
            sessions = [_empty(path, part, base, session_id, agent, origin, log)]
        out.extend(sessions)
    return out


def _empty(
    path: Path, records: Records, uid: str, session_id: str, agent: str | None, origin: Origin, log: Log
) -> ParsedSession:
    """A transcript with no message (only titles or snapshots): its session row, with no call or part."""
    started, ended = _span(records)
    cwd = _first_str(records, "cwd")
    meta = {"skipped_lines": len(log.skipped)} if log.skipped else None
    return ParsedSession(
        Session(
            uid=uid,
            tool=NAME,
            native_id=session_id,
            source_path=str(path),
            layout=LAYOUT,
            project=cwd,
            title=_title_line(records),
            started_at=started,
            ended_at=ended,
            parent_uid=f"{NAME}:{session_id}" if agent is not None else None,
            is_subagent=agent is not None,
            meta=meta,
        )
    )
