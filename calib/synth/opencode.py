"""Write synthetic sessions in OpenCode's real on-disk layouts (formats.md section 2).

Files go where OpenCode keeps them, under `out`: the database at `.local/share/opencode/opencode.db`,
the global JSON tree at `.local/share/opencode/storage/`, the earliest per-project tree at
`.local/share/opencode/project/<slug>/storage/`, and export files at `.opencode/sessions/<id>.json`.
An existing database at that path is replaced; the JSON layouts add files to what is there.

Mapping (what `calib.importers.opencode` reads back):
- each turn is a user message with one text part; each step is its own assistant message (as in
  OpenCode 1.x) holding `step-start`, reasoning, text, one `tool` part per tool use, and `step-finish`;
- usage is Anthropic-style: `input` = uncached, `cache.read`, `cache.write`, `output`, `reasoning`,
  `total` = their sum (so reasoning reads back as reported apart from output). A step without usage gets
  a zero `step-finish`, or none at all when it errored; either reads back as usage "missing";
- a pruned tool output gets `state.time.compacted` (its `pruned_at`, else the last step's time); OpenCode
  only prunes completed outputs, so a pruned error result is written unpruned;
- a compacted step is preceded by a compaction user message and a `summary: true` assistant message whose
  text is the step's summary (no usage: OpenCode's summary call is not a step of the model); when the
  step opens its turn, they come before the turn's user message so that message stays in history;
- the per-project tree uses MessageV1 (inline parts, usage in `metadata.assistant.tokens`), which has no
  pruning and no compaction message: pruned outputs are written unpruned and a compaction is only the
  summary message. Its `getUsage` recorded `reasoning: 0` with thinking inside `output` and had no
  `total`, so reasoning is written folded into `output` (ctx and carry read back unchanged).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.synth._common import epoch_ms, wal_database
from calib.synth.model import Step, SynthSession, ToolUse, Usage

LAYOUTS = ("opencode-db", "opencode-json-tree", "opencode-project-tree", "opencode-export", "opencode2-db")
DATA_DIR = Path(".local") / "share" / "opencode"
EXPORT_DIR = Path(".opencode") / "sessions"
VERSIONS = {
    "opencode-db": "1.2.27",
    "opencode-json-tree": "0.15.8",
    "opencode-project-tree": "0.1.150",
    "opencode-export": "1.18.18",
    "opencode2-db": "2.0.25",
}
# Where each session of an `opencode2-db` database lives: 2.x tables, 1.x tables, or both (migrated).
ORIGINS = ("v2", "v1", "both")
# The first SQLite migration (20260127222353_familiar_lady_ursula), as drizzle records it.
_FIRST_MIGRATION_MS = 1769552633000
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

_DDL = (
    """CREATE TABLE IF NOT EXISTS `__drizzle_migrations` (
        id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)""",
    """CREATE TABLE IF NOT EXISTS `project` (
        `id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text, `icon_url` text,
        `icon_color` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
        `time_initialized` integer, `sandboxes` text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS `session` (
        `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
        `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
        `version` text NOT NULL, `share_url` text, `summary_additions` integer, `summary_deletions` integer,
        `summary_files` integer, `summary_diffs` text, `cost` real DEFAULT 0 NOT NULL,
        `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
        `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
        `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
        `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
        `time_compacting` integer, `time_archived` integer,
        FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE cascade)""",
    """CREATE TABLE IF NOT EXISTS `message` (
        `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
        `time_updated` integer NOT NULL, `data` text NOT NULL,
        FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE cascade)""",
    """CREATE TABLE IF NOT EXISTS `part` (
        `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
        `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
        FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE cascade)""",
    """CREATE TABLE IF NOT EXISTS `todo` (
        `session_id` text NOT NULL, `content` text NOT NULL, `status` text NOT NULL,
        `priority` text NOT NULL, `position` integer NOT NULL, `time_created` integer NOT NULL,
        `time_updated` integer NOT NULL, PRIMARY KEY(`session_id`, `position`))""",
    """CREATE TABLE IF NOT EXISTS `permission` (
        `project_id` text PRIMARY KEY, `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
        `data` text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS `session_share` (
        `session_id` text PRIMARY KEY, `id` text NOT NULL, `secret` text NOT NULL, `url` text NOT NULL,
        `time_created` integer NOT NULL, `time_updated` integer NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS `session_project_idx` ON `session` (`project_id`)",
    "CREATE INDEX IF NOT EXISTS `session_parent_idx` ON `session` (`parent_id`)",
    "CREATE INDEX IF NOT EXISTS `message_session_time_created_id_idx` ON `message` "
    "(`session_id`, `time_created`, `id`)",
    "CREATE INDEX IF NOT EXISTS `part_message_id_id_idx` ON `part` (`message_id`, `id`)",
    "CREATE INDEX IF NOT EXISTS `part_session_idx` ON `part` (`session_id`)",
)


# OpenCode 2's tables (formats.md 7.2); the frozen 1.x tables come from `_DDL`.
_DDL_V2 = (
    """CREATE TABLE IF NOT EXISTS `session_v2` (
        `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
        `fork_session_id` text, `fork_boundary` text, `slug` text NOT NULL, `directory` text NOT NULL,
        `path` text, `title` text NOT NULL, `version` text NOT NULL, `share_url` text,
        `summary_additions` integer, `summary_deletions` integer, `summary_files` integer,
        `summary_diffs` text, `metadata` text, `cost` real DEFAULT 0 NOT NULL,
        `tokens_input` integer DEFAULT 0 NOT NULL, `tokens_output` integer DEFAULT 0 NOT NULL,
        `tokens_reasoning` integer DEFAULT 0 NOT NULL, `tokens_cache_read` integer DEFAULT 0 NOT NULL,
        `tokens_cache_write` integer DEFAULT 0 NOT NULL, `revert` text, `permission` text, `agent` text,
        `model` text, `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_idle` integer,
        `time_viewed` integer, `idle_outcome` text, `time_compacting` integer, `time_archived` integer,
        `time_suspended` integer, `resume_attempts` integer DEFAULT 0 NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS `session_message` (
        `id` text PRIMARY KEY, `session_id` text NOT NULL, `type` text NOT NULL, `seq` integer NOT NULL,
        `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL,
        FOREIGN KEY (`session_id`) REFERENCES `session_v2`(`id`) ON DELETE cascade)""",
    "CREATE UNIQUE INDEX IF NOT EXISTS `session_message_session_seq_idx` ON `session_message` "
    "(`session_id`, `seq`)",
    """CREATE TABLE IF NOT EXISTS `event` (
        `id` text PRIMARY KEY, `aggregate_id` text NOT NULL, `seq` integer NOT NULL, `type` text NOT NULL,
        `data` text NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS `event_sequence` (`aggregate_id` text PRIMARY KEY, `seq` integer NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS `data_migration` (`name` text PRIMARY KEY, `time_completed` integer NOT NULL)""",
)


def tokens(usage: Usage | None) -> dict[str, Any]:
    """OpenCode's step `tokens` for a usage (all zero when the agent recorded none)."""
    if usage is None:
        return {"total": 0, "input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    total = usage.uncached + usage.output + usage.reasoning + usage.cache_read + usage.cache_write
    return {
        "total": total,
        "input": usage.uncached,
        "output": usage.output,
        "reasoning": usage.reasoning,
        "cache": {"read": usage.cache_read, "write": usage.cache_write},
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "global"


def project_id(project_dir: str) -> str:
    """A stable stand-in for OpenCode's project id (the git root commit hash)."""
    return hashlib.sha1(project_dir.encode()).hexdigest()


@dataclass
class _Ids:
    """OpenCode-shaped ascending ids (`Identifier.ascending`): 12 hex digits of time and counter, then 14
    characters; deterministic per session so generated datasets are reproducible."""

    seed: str
    counter: int = 0

    def next(self, prefix: str, at_ms: int) -> str:
        self.counter += 1
        head = (at_ms * 0x1000 + self.counter) % (1 << 48)
        digest = hashlib.blake2b(f"{self.seed}:{self.counter}".encode(), digest_size=14).digest()
        tail = "".join(_BASE62[b % 62] for b in digest)
        return f"{prefix}_{head:012x}{tail}"


@dataclass
class _Msg:
    info: dict[str, Any]
    parts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Rendered:
    session: SynthSession
    info: dict[str, Any]
    messages: list[_Msg]


def _pruned_ms(session: SynthSession, tool: ToolUse) -> int | None:
    if not tool.pruned or tool.is_error:
        return None
    if tool.pruned_at is not None:
        return epoch_ms(tool.pruned_at)
    steps = session.steps()
    return epoch_ms(steps[-1].ts) if steps else epoch_ms(session.started_at)


def _tool_part(session: SynthSession, tool: ToolUse, at: int) -> dict[str, Any]:
    times: dict[str, Any] = {"start": at, "end": at}
    state: dict[str, Any] = {"status": "error" if tool.is_error else "completed"}
    state["input"] = json.loads(tool.args_json)
    if tool.is_error:
        state.update(error=tool.output, metadata={}, time=times)
    else:
        compacted = _pruned_ms(session, tool)
        if compacted is not None:
            times["compacted"] = compacted
        state.update(output=tool.output, title=tool.name, metadata={}, time=times)
    return {"type": "tool", "callID": tool.call_id, "tool": tool.name, "state": state}


def _render(session: SynthSession, version: str) -> _Rendered:
    """The session as MessageV2 infos and parts with ids, in conversation order."""
    ids = _Ids(session.id)
    proj = project_id(session.project_dir)
    path = {"cwd": session.project_dir, "root": session.project_dir}
    model = {"providerID": session.provider, "modelID": session.model}
    messages: list[_Msg] = []
    clock = epoch_ms(session.started_at)

    def at(ts: datetime | None) -> int:
        nonlocal clock
        # OpenCode orders messages by creation time; never let a bookkeeping message go back in time.
        clock = max(clock, epoch_ms(ts)) if ts is not None else clock
        return clock

    def user(text_parts: list[dict[str, Any]], created: int) -> _Msg:
        msg = _Msg(
            {
                "id": ids.next("msg", created),
                "sessionID": session.id,
                "role": "user",
                "time": {"created": created},
                "agent": "build",
                "model": model,
            }
        )
        for part in text_parts:
            msg.parts.append({"id": ids.next("prt", created), **part})
        messages.append(msg)
        return msg

    def assistant(parent: _Msg, mode: str, usage: Usage | None, finish: str, created: int) -> dict[str, Any]:
        info: dict[str, Any] = {
            "id": ids.next("msg", created),
            "sessionID": session.id,
            "role": "assistant",
            "parentID": parent.info["id"],
            "modelID": session.model,
            "providerID": session.provider,
            "mode": mode,
            "agent": mode,
            "path": path,
        }
        if mode == "compaction":
            info["summary"] = True
        info.update(
            cost=0, tokens=tokens(usage), finish=finish, time={"created": created, "completed": created}
        )
        return info

    def compaction(step: Step, created: int) -> None:
        request = user([{"type": "compaction", "auto": True}], created)
        summary = _Msg(assistant(request, "compaction", None, "stop", created))
        summary.parts.append(
            {
                "id": ids.next("prt", created),
                "type": "text",
                "text": step.summary,
                "time": {"start": created, "end": created},
            }
        )
        messages.append(summary)

    for turn in session.turns:
        first = turn.steps[0] if turn.steps else None
        if first is not None and first.compacted:
            compaction(first, at(turn.ts))
        request = user([{"type": "text", "text": turn.user_text}], at(turn.ts))
        for index, step in enumerate(turn.steps):
            if step.compacted and index > 0:
                compaction(step, at(step.ts))
            created = at(step.ts)
            info = assistant(request, "build", step.usage, "tool-calls" if step.tools else "stop", created)
            if step.error is not None:
                info["error"] = {"name": "APIError", "data": {"message": step.error, "isRetryable": False}}
                info["finish"] = "error"
            msg = _Msg(info)
            snapshot = hashlib.sha1(f"{session.id}:{step.id}".encode()).hexdigest()
            parts: list[dict[str, Any]] = [{"type": "step-start", "snapshot": snapshot}]
            if step.reasoning:
                parts.append(
                    {"type": "reasoning", "text": step.reasoning, "time": {"start": created, "end": created}}
                )
            if step.text:
                parts.append({"type": "text", "text": step.text, "time": {"start": created, "end": created}})
            parts.extend(_tool_part(session, tool, created) for tool in step.tools)
            if step.usage is not None or step.error is None:
                parts.append(
                    {
                        "type": "step-finish",
                        "reason": info["finish"],
                        "snapshot": snapshot,
                        "cost": 0,
                        "tokens": tokens(step.usage),
                    }
                )
            msg.parts = [{"id": ids.next("prt", created), **p} for p in parts]
            messages.append(msg)

    usages = [s.usage for s in session.steps() if s.usage is not None]
    info = {
        "id": session.id,
        "slug": _slug(session.title.lower())[:40] or "session",
        "projectID": proj,
        "directory": session.project_dir,
        "title": session.title,
        "version": version,
        "time": {"created": epoch_ms(session.started_at), "updated": clock},
        "cost": 0,
        "tokens": {
            "input": sum(u.uncached for u in usages),
            "output": sum(u.output for u in usages),
            "reasoning": sum(u.reasoning for u in usages),
            "cache": {"read": sum(u.cache_read for u in usages), "write": sum(u.cache_write for u in usages)},
        },
    }
    return _Rendered(session, info, messages)


def _dump(value: Any) -> str:
    """OpenCode writes its JSON files with `JSON.stringify(x, null, 2)`."""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _write_export(r: _Rendered, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{r.session.id}.json"
    doc = {"info": r.info, "messages": [{"info": m.info, "parts": m.parts} for m in r.messages]}
    path.write_text(_dump(doc), encoding="utf-8")
    return path


def _write_json_tree(rendered: list[_Rendered], storage: Path) -> Path:
    storage.mkdir(parents=True, exist_ok=True)
    (storage / "migration").write_text("2", encoding="utf-8")
    for r in rendered:
        info = {k: v for k, v in r.info.items() if k not in ("cost", "tokens")}
        proj = str(info["projectID"])
        project_file = storage / "project" / f"{proj}.json"
        if not project_file.exists():
            project_file.parent.mkdir(parents=True, exist_ok=True)
            created = info["time"]["created"]
            project = {
                "id": proj,
                "worktree": info["directory"],
                "vcs": "git",
                "time": {"created": created, "initialized": created},
            }
            project_file.write_text(_dump(project), encoding="utf-8")
        session_dir = storage / "session" / proj
        session_dir.mkdir(parents=True, exist_ok=True)
        (session_dir / f"{r.session.id}.json").write_text(_dump(info), encoding="utf-8")
        message_dir = storage / "message" / r.session.id
        message_dir.mkdir(parents=True, exist_ok=True)
        for m in r.messages:
            (message_dir / f"{m.info['id']}.json").write_text(_dump(m.info), encoding="utf-8")
            part_dir = storage / "part" / m.info["id"]
            part_dir.mkdir(parents=True, exist_ok=True)
            for p in m.parts:
                part = {**p, "sessionID": r.session.id, "messageID": m.info["id"]}
                (part_dir / f"{p['id']}.json").write_text(_dump(part), encoding="utf-8")
    return storage


def _v1_tokens(step_tokens: dict[str, Any]) -> dict[str, Any]:
    """MessageV1 usage: no `total`, thinking counted in `output`, `reasoning` 0."""
    return {
        "input": step_tokens["input"],
        "output": step_tokens["output"] + step_tokens["reasoning"],
        "reasoning": 0,
        "cache": dict(step_tokens["cache"]),
    }


def _v1_message(r: _Rendered, m: _Msg) -> dict[str, Any]:
    """A MessageV2 message of the rendering as MessageV1 (inline parts, usage in metadata)."""
    info = m.info
    metadata: dict[str, Any] = {"time": dict(info["time"]), "sessionID": r.session.id, "tool": {}}
    parts: list[dict[str, Any]] = []
    for p in m.parts:
        kind = p["type"]
        if kind in ("text", "reasoning"):
            parts.append({"type": kind, "text": p["text"]})
        elif kind == "step-start":
            parts.append({"type": "step-start"})
        elif kind == "tool":
            state = p["state"]
            result = state["output"] if state["status"] == "completed" else state["error"]
            parts.append(
                {
                    "type": "tool-invocation",
                    "toolInvocation": {
                        "state": "result",
                        "toolCallId": p["callID"],
                        "toolName": p["tool"],
                        "args": state["input"],
                        "result": result,
                    },
                }
            )
            times = {"start": state["time"]["start"], "end": state["time"]["end"]}
            metadata["tool"][p["callID"]] = {"title": p["tool"], "time": times}
    if info["role"] == "assistant":
        assistant: dict[str, Any] = {
            "system": [],
            "modelID": info["modelID"],
            "providerID": info["providerID"],
            "path": info["path"],
            "cost": 0,
            "tokens": _v1_tokens(info["tokens"]),
        }
        if info.get("summary"):
            assistant["summary"] = True
        metadata["assistant"] = assistant
        if "error" in info:
            metadata["error"] = info["error"]
    return {"id": info["id"], "role": info["role"], "parts": parts, "metadata": metadata}


def _write_project_tree(rendered: list[_Rendered], project_root: Path) -> list[Path]:
    roots: list[Path] = []
    for r in rendered:
        storage = project_root / _slug(r.session.project_dir) / "storage"
        if storage not in roots:
            roots.append(storage)
        info_dir = storage / "session" / "info"
        info_dir.mkdir(parents=True, exist_ok=True)
        info = {k: r.info[k] for k in ("id", "title", "version", "time")}
        (info_dir / f"{r.session.id}.json").write_text(_dump(info), encoding="utf-8")
        message_dir = storage / "session" / "message" / r.session.id
        message_dir.mkdir(parents=True, exist_ok=True)
        for m in r.messages:
            if any(p["type"] == "compaction" for p in m.parts):
                continue  # MessageV1 had no compaction message; the summary message stands alone.
            (message_dir / f"{m.info['id']}.json").write_text(_dump(_v1_message(r, m)), encoding="utf-8")
    return roots


def _insert_project(con: sqlite3.Connection, info: dict[str, Any], projects: set[str]) -> None:
    """The `project` row a session names, once per database."""
    if info["projectID"] not in projects:
        projects.add(info["projectID"])
        created = info["time"]["created"]
        con.execute(
            "INSERT OR IGNORE INTO project (id, worktree, vcs, time_created, time_updated, "
            "time_initialized, sandboxes) VALUES (?, ?, 'git', ?, ?, ?, '[]')",
            (info["projectID"], info["directory"], created, created, created),
        )


def _insert_v1(con: sqlite3.Connection, r: _Rendered, projects: set[str]) -> None:
    """The 1.x rows of one session: its project (once), `session`, `message` and `part`."""
    info = r.info
    created, updated = info["time"]["created"], info["time"]["updated"]
    _insert_project(con, info, projects)
    tok = info["tokens"]
    con.execute(
        "INSERT INTO session (id, project_id, slug, directory, title, version, cost, tokens_input, "
        "tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, "
        "time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, 'build', ?, ?, ?)",
        (
            info["id"],
            info["projectID"],
            info["slug"],
            info["directory"],
            info["title"],
            info["version"],
            tok["input"],
            tok["output"],
            tok["reasoning"],
            tok["cache"]["read"],
            tok["cache"]["write"],
            compact_json({"id": r.session.model, "providerID": r.session.provider}),
            created,
            updated,
        ),
    )
    message_rows = []
    part_rows = []
    for m in r.messages:
        mid = m.info["id"]
        mtime = m.info["time"]["created"]
        data = {k: v for k, v in m.info.items() if k not in ("id", "sessionID")}
        message_rows.append((mid, info["id"], mtime, mtime, compact_json(data)))
        for p in m.parts:
            pdata = {k: v for k, v in p.items() if k != "id"}
            part_rows.append((p["id"], mid, info["id"], mtime, mtime, compact_json(pdata)))
    con.executemany("INSERT INTO message VALUES (?, ?, ?, ?, ?)", message_rows)
    con.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)", part_rows)


def _fresh(db: Path) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def _first_migration(con: sqlite3.Connection) -> None:
    con.execute(
        "INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)",
        (hashlib.sha256(b"20260127222353_familiar_lady_ursula").hexdigest(), _FIRST_MIGRATION_MS),
    )


def _write_db(rendered: list[_Rendered], db: Path) -> Path:
    _fresh(db)
    with wal_database(db, _DDL) as con:
        _first_migration(con)
        projects: set[str] = set()
        for r in rendered:
            _insert_v1(con, r, projects)
    return db


def origins(sessions: list[SynthSession]) -> list[str]:
    """Where each session of an `opencode2-db` database is written (`ORIGINS`), drawn from the seed."""
    if not sessions:
        return []
    offset = int.from_bytes(hashlib.blake2b(sessions[0].id.encode(), digest_size=4).digest(), "big")
    out = []
    for index, session in enumerate(sessions):
        origin = ORIGINS[(index + offset) % len(ORIGINS)]
        if origin == "v1" and any(step.compacted for step in session.steps()):
            origin = "both"
        out.append(origin)
    return out


def _v2_tokens(usage: Usage | None) -> dict[str, Any]:
    """OpenCode 2's step tokens: the same meaning for every provider (formats.md 7.4)."""
    return {k: v for k, v in tokens(usage).items() if k != "total"}


def _v2_tool(session: SynthSession, tool: ToolUse, at: int) -> dict[str, Any]:
    state: dict[str, Any] = {"status": "error" if tool.is_error else "completed"}
    state["input"] = json.loads(tool.args_json)
    if tool.is_error:
        state["error"] = tool.output
    else:
        state.update(content=[{"type": "text", "text": tool.output}], structured={})
    times: dict[str, Any] = {"created": at, "ran": at, "completed": at}
    pruned = _pruned_ms(session, tool)
    if pruned is not None:
        times["pruned"] = pruned
    return {"type": "tool", "id": tool.call_id, "name": tool.name, "state": state, "time": times}


def _v2_rows(session: SynthSession) -> list[tuple[str, str, int, dict[str, Any]]]:
    """The session's `session_message` rows in `seq` order: (id, type, time_created, data)."""
    ids = _Ids(f"{session.id}:v2")
    model = {"id": session.model, "providerID": session.provider}
    rows: list[tuple[str, str, int, dict[str, Any]]] = []

    def row(kind: str, at: int, data: dict[str, Any]) -> None:
        rows.append((ids.next("msg", at), kind, at, data))

    def compaction(step: Step, at: int) -> None:
        times = {"created": at, "completed": at}
        data = {"status": "completed", "reason": "auto", "summary": step.summary, "recent": "", "time": times}
        row("compaction", at, data)

    for turn in session.turns:
        first = turn.steps[0] if turn.steps else None
        if first is not None and first.compacted:
            compaction(first, epoch_ms(turn.ts))
        row("user", epoch_ms(turn.ts), {"text": turn.user_text, "time": {"created": epoch_ms(turn.ts)}})
        for index, step in enumerate(turn.steps):
            at = epoch_ms(step.ts)
            if step.compacted and index > 0:
                compaction(step, at)
            content: list[dict[str, Any]] = []
            if step.reasoning:
                content.append({"type": "reasoning", "text": step.reasoning})
            if step.text:
                content.append({"type": "text", "text": step.text})
            content.extend(_v2_tool(session, tool, at) for tool in step.tools)
            data: dict[str, Any] = {"agent": "build", "model": model, "content": content}
            snapshot = hashlib.sha1(f"{session.id}:{step.id}".encode()).hexdigest()
            data["snapshot"] = {"start": snapshot, "end": snapshot}
            data["finish"] = "tool-calls" if step.tools else "stop"
            data["cost"] = 0
            if step.error is not None:
                data["finish"] = "error"
                data["error"] = {"name": "APIError", "message": step.error}
            if step.usage is not None or step.error is None:
                data["tokens"] = _v2_tokens(step.usage)
            data["time"] = {"created": at, "completed": at}
            row("assistant", at, data)
    return rows


def _insert_v2(con: sqlite3.Connection, r: _Rendered, version: str) -> None:
    """The 2.x rows of one session: `session_v2` and its `session_message` rows."""
    info, tok = r.info, r.info["tokens"]
    con.execute(
        "INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, "
        "tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, "
        "time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, 'build', ?, ?, ?)",
        (
            info["id"],
            info["projectID"],
            info["slug"],
            info["directory"],
            info["title"],
            version,
            tok["input"],
            tok["output"],
            tok["reasoning"],
            tok["cache"]["read"],
            tok["cache"]["write"],
            compact_json({"id": r.session.model, "providerID": r.session.provider}),
            info["time"]["created"],
            info["time"]["updated"],
        ),
    )
    con.executemany(
        "INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (mid, info["id"], kind, seq, at, at, compact_json(data))
            for seq, (mid, kind, at, data) in enumerate(_v2_rows(r.session))
        ],
    )


def _write_db2(sessions: list[SynthSession], db: Path) -> Path:
    _fresh(db)
    placed = origins(sessions)
    v1_version = VERSIONS["opencode-db"]
    with wal_database(db, _DDL + _DDL_V2) as con:
        _first_migration(con)
        projects: set[str] = set()
        migrated = 0
        for session, origin in zip(sessions, placed, strict=True):
            r = _render(session, v1_version)
            if origin in ("v1", "both"):
                _insert_v1(con, r, projects)
            else:
                _insert_project(con, r.info, projects)  # 2.x sessions still name a project
            if origin in ("v2", "both"):
                # A migrated session keeps the version that wrote it.
                _insert_v2(con, r, v1_version if origin == "both" else VERSIONS["opencode2-db"])
                migrated += origin == "both"
        if migrated:
            last = max(epoch_ms(s.steps()[-1].ts if s.steps() else s.started_at) for s in sessions)
            con.execute("INSERT INTO data_migration VALUES ('session-v1-v2', ?)", (last,))
    return db


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write `sessions` under `out` in OpenCode's `layout`; returns the sources to ingest."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown OpenCode layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    out = Path(out)
    version = VERSIONS[layout]
    data = out / DATA_DIR
    if layout == "opencode2-db":
        return [_write_db2(sessions, data / "opencode.db")]
    rendered = [_render(s, version) for s in sessions]
    if layout == "opencode-db":
        return [_write_db(rendered, data / "opencode.db")]
    if layout == "opencode-json-tree":
        return [_write_json_tree(rendered, data / "storage")]
    if layout == "opencode-project-tree":
        return _write_project_tree(rendered, data / "project")
    return [_write_export(r, out / EXPORT_DIR) for r in rendered]
