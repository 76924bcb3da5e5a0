"""Dexto's SQLite database: `kv_store` + `list_store`, one `messages:<sessionId>` list per session.

Facts (reference/formats.md section 3): each list row is one `InternalMessage` JSON, in `sequence` order;
`session:<sessionId>` in `kv_store` holds the session info. Since Dexto 1.4 one assistant message is one
LLM call and its `tokenUsage` is that call's usage; up to 1.3 the usage of a whole turn was summed onto
the turn's last assistant message.

Choices made here:

- Every non-summary assistant message is a call (each was one model step in every version); a message
  without usage is a call with `usage_status="missing"`.
- Dexto 1.3 and older is recognised per turn: a turn (a user message and what follows it) with two or
  more assistant messages where only the last has `tokenUsage`, no usage carries cache fields, and no
  message carries `reasoning` or `assistantOutput` (both appeared after 1.3). That last message is
  `turn_summed`, and its session gets layout `dexto-db-legacy`. Anthropic usage in such a session is
  `suspect`: it excluded the cache, which was not stored, so `ctx` is a lower bound.
- A summary message (`metadata.isSummary` / `isSessionSummary`) restarts the history. Dexto then sends
  `[summary, messages[originalMessageCount:summary], later messages]`, so the summary part is followed
  by copies of the preserved messages' parts (uid suffix `@<summary id>`, no `call_uid`): every later
  call's prompt stays one contiguous `seq` range. A summary is not a call of the session's chain; its
  own usage, if any, is kept in `Session.meta["summary_usage"]`.
- Reasoning is `resent` only for Anthropic-family models on a message that made tool calls: the API
  keeps thinking inside an active tool loop and drops it afterwards; OpenAI- and Gemini-style reasoning
  text is never sent back.
- A damaged row costs its message: a `list_store` value that is not a JSON object (not JSON, nested
  past orjson's 1,024 levels, or another JSON value), a message with a role Dexto does not write, or
  one whose records cannot be built (a field of a wrong type) is left out with a warning naming the
  database, the table, the key and the sequence (`calib.importers.common.build_leaving_out`). A
  damaged `session:` value in `kv_store` costs only the session's info. Every other message and
  session is imported.
- A pruned tool output (`compactedAt`) is sent as `ContextManager.PRUNED_TOOL_PLACEHOLDER`,
  `[Old tool result content cleared]`, the same text OpenCode sends (`_common.PRUNED_TEXT`).
- The database is opened read-only (`_sqlite.connect_readonly`). Without a `-wal` or `-journal` file it
  is opened `immutable`, because a read-only connection to a WAL-mode database would otherwise create
  `-wal`/`-shm` files beside it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import groupby
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning
from calib.core.records import Call, ParsedSession, Part, Session, UsageStatus
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts
from calib.importers.common import PRUNED_TEXT, build_leaving_out, compact_json, damaged_row, ms_to_datetime
from calib.importers.sqlite import SQLITE_MAGIC, Column, connect_readonly, table_columns, table_names

TOOL = "dexto"
LAYOUT_DB = "dexto-db"
LAYOUT_LEGACY = "dexto-db-legacy"

# Columns Dexto's SQLiteStore creates; extra columns are tolerated only when optional.
_SCHEMA = {
    "kv_store": ("key", "value", "created_at", "updated_at"),
    "list_store": ("key", "value", "sequence", "created_at"),
}
_CACHE_KEYS = ("cacheReadTokens", "cacheWriteTokens")
_USAGE_KEYS = ("inputTokens", "outputTokens", "reasoningTokens", *_CACHE_KEYS, "totalTokens")
_ROLES = ("user", "assistant", "tool", "system")
_LOST_MESSAGE = "this message was left out, the rest of the database was imported"


# -- opening -----------------------------------------------------------------------------------------


def looks_like_dexto(path: Path, head: bytes) -> bool:
    """A SQLite file with either of Dexto's tables (a differing schema is then reported by `parse`)."""
    if not head.startswith(SQLITE_MAGIC):
        return False
    try:
        con = connect_readonly(path)
        try:
            tables = set(table_names(con))
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return bool(tables & set(_SCHEMA))


def check_schema(path: Path, columns: dict[str, list[Column]]) -> None:
    """Raise a one-line InputError naming what differs from the schema this importer reads."""
    problems = []
    for table, wanted in _SCHEMA.items():
        have = columns.get(table)
        if have is None:
            problems.append(f"no table {table}")
            continue
        names = [c[0] for c in have]
        missing = [c for c in wanted if c not in names]
        if missing:
            problems.append(f"{table} lacks column(s) {', '.join(missing)}")
        extra = [name for name, required, default in have if name not in wanted and required and not default]
        if extra:
            problems.append(f"{table} has unknown required column(s) {', '.join(extra)}")
    if problems:
        raise InputError(
            "Dexto database schema differs from the one calib reads: " + "; ".join(problems),
            path=str(path),
            hint="it may come from a newer or older Dexto; report it with the output of `sqlite3 FILE .schema`",
        )


# -- small converters --------------------------------------------------------------------------------


def compact_args(arguments: Any) -> str:
    """Tool-call arguments as compact JSON (the raw string when it is not JSON)."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):  # nested past the parser's recursion: as it was sent
            return arguments
    else:
        value = arguments if arguments is not None else {}
    return compact_json(value)


def content_items(content: Any) -> list[tuple[bool, str]]:
    """Message content as (is_text, text) items; non-text parts become a short placeholder."""
    if content is None:
        return []
    if isinstance(content, str):
        return [(True, content)]
    if not isinstance(content, list):
        return [(True, compact_json(content))]
    items: list[tuple[bool, str]] = []
    for item in content:
        if isinstance(item, str):
            items.append((True, item))
            continue
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text":
            items.append((True, str(item.get("text") or "")))
        elif kind == "image":
            items.append((False, f"[image {item.get('mimeType') or 'image'}]"))
        elif kind == "file":
            items.append((False, f"[file {item.get('filename') or item.get('mimeType') or 'file'}]"))
        elif kind == "resource":
            items.append((False, f"[resource {item.get('name') or item.get('uri') or ''}]"))
        # ui-resource parts (and unknown kinds) are dropped before Dexto calls the model.
    return items


def is_summary(msg: dict[str, Any]) -> bool:
    meta = msg.get("metadata")
    return isinstance(meta, dict) and (meta.get("isSummary") is True or meta.get("isSessionSummary") is True)


def is_anthropic(provider: str | None, model: str | None) -> bool:
    """Anthropic-style models: the Anthropic API itself, or Claude behind Bedrock or Vertex."""
    return provider == "anthropic" or "claude" in (model or "").lower()


# -- reading -----------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    sequence: int
    msg: dict[str, Any]
    # A damaged row left out: it makes no part or call, but keeps its place in the history, which a
    # summary's `originalMessageCount` counts in.
    left_out: bool = False


@dataclass(slots=True)
class _Builder:
    uid: str
    parts: list[Part] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    by_message: dict[int, list[Part]] = field(default_factory=dict)

    def add(self, part_uid: str, index: int | None, **kwargs: Any) -> Part:
        # index: the message the part belongs to; None for copies, which a later summary never re-copies.
        part = Part(uid=part_uid, session_uid=self.uid, seq=len(self.parts), **kwargs)
        self.parts.append(part)
        if index is not None:
            self.by_message.setdefault(index, []).append(part)
        return part


def _loads(raw: Any) -> dict[str, Any] | str:
    """A row's value as a JSON object, or what is wrong with it."""
    try:
        value = orjson.loads(raw if isinstance(raw, bytes | str) else b"")
    except orjson.JSONDecodeError as exc:  # also what orjson says of JSON nested past 1,024 levels
        return f"not valid JSON ({exc.msg})"
    return value if isinstance(value, dict) else "not a JSON object"


def _left_out(row: _Row) -> _Row:
    return _Row(row.sequence, {}, left_out=True)


def _damaged_message(path: Path, key: str, row: _Row, what: str) -> InputWarning:
    return damaged_row(path, "list_store", f"{key} sequence {row.sequence}", what, _LOST_MESSAGE)


def _message(raw: Any) -> dict[str, Any] | str:
    """A `list_store` value as a message Dexto could have written, or what is wrong with it."""
    msg = _loads(raw)
    if isinstance(msg, dict) and not is_summary(msg) and msg.get("role") not in _ROLES:
        return f"a message with unknown role {msg.get('role')!r}"
    return msg


def parse_db(path: Path) -> Iterator[ParsedSession | InputWarning]:
    """Every session of one Dexto database, read-only, and a warning for each damaged row left out."""
    try:
        con = connect_readonly(path)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the Dexto database: {exc}", path=str(path)) from exc
    try:
        try:
            check_schema(path, table_columns(con))
            infos = {
                key[len("session:") :]: value
                for key, value in con.execute(
                    "SELECT key, value FROM kv_store WHERE key LIKE 'session:%'"
                ).fetchall()
            }
            rows = con.execute(
                "SELECT key, sequence, value FROM list_store WHERE key LIKE 'messages:%' ORDER BY key, sequence"
            ).fetchall()
        except sqlite3.Error as exc:
            raise InputError(f"cannot read the Dexto database: {exc}", path=str(path)) from exc
    finally:
        con.close()
    agent = path.stem
    project = _project_of(path)
    for key, group in groupby(rows, key=lambda r: r[0]):
        session_id = key[len("messages:") :]
        messages = []
        for _, sequence, value in group:
            msg = _message(value)
            if isinstance(msg, str):
                yield damaged_row(path, "list_store", f"{key} sequence {sequence}", msg, _LOST_MESSAGE)
                messages.append(_left_out(_Row(sequence, {})))
                continue
            messages.append(_Row(sequence, msg))
        raw_info = infos.get(session_id)
        info = _loads(raw_info) if raw_info is not None else {}
        if isinstance(info, str):
            lost = "the session was imported without it"
            yield damaged_row(path, "kv_store", f"session:{session_id}", info, lost)
            info = {}
        yield from build_leaving_out(
            partial(build_session, path, agent, project, session_id, info),
            messages,
            damaged=partial(_damaged_message, path, key),
            path=path,
            session=session_id,
            stand_in=_left_out,
        )


def _project_of(path: Path) -> str | None:
    # <project>/.dexto/database/<agent>.db is a project-local store; ~/.dexto is the global one.
    parent = path.resolve().parent
    if parent.name == "database" and parent.parent.name == ".dexto":
        root = parent.parent.parent
        if root != Path.home():
            return str(root)
    return None


def _dedup(rows: list[_Row]) -> list[_Row]:
    # Dexto de-duplicates messages by id when it reads history; duplicates would also clash as uids.
    seen: set[str] = set()
    out = []
    for row in rows:
        mid = row.msg.get("id")
        if not isinstance(mid, str) or not mid:
            mid = f"seq{row.sequence}"
            row.msg = {**row.msg, "id": mid}
        if mid in seen:
            continue
        seen.add(mid)
        out.append(row)
    return out


def _legacy_turns(msgs: list[dict[str, Any]]) -> set[int]:
    """Indices of assistant messages carrying Dexto <= 1.3 usage summed over a multi-call turn."""
    summed: set[int] = set()
    turn: list[int] = []

    def close() -> None:
        assistants = [i for i in turn if msgs[i].get("role") == "assistant" and not is_summary(msgs[i])]
        if len(assistants) < 2 or not isinstance(msgs[assistants[-1]].get("tokenUsage"), dict):
            return
        if any(isinstance(msgs[i].get("tokenUsage"), dict) for i in assistants[:-1]):
            return
        for i in turn:
            m = msgs[i]
            if "reasoning" in m or "assistantOutput" in m:
                return
            usage = m.get("tokenUsage")
            if isinstance(usage, dict) and any(k in usage for k in _CACHE_KEYS):
                return
        summed.add(assistants[-1])

    for i, m in enumerate(msgs):
        if m.get("role") == "user" and not is_summary(m):
            close()
            turn = []
        turn.append(i)
    close()
    return summed


def build_session(
    path: Path,
    agent: str,
    project: str | None,
    session_id: str,
    info: dict[str, Any],
    rows: list[_Row],
) -> ParsedSession:
    """One session's records from its message rows (in sequence order) and its `session:` info."""
    key = f"messages:{session_id}"
    rows = _dedup(rows)
    msgs = [r.msg for r in rows]
    uid = f"{TOOL}:{session_id}"
    summed = _legacy_turns(msgs)
    legacy = bool(summed)
    b = _Builder(uid)
    prompt_start = 0
    summary_usage: list[dict[str, Any]] = []

    for index, (row, msg) in enumerate(zip(rows, msgs, strict=True)):
        if row.left_out:
            continue
        role = msg.get("role")
        mid = str(msg["id"])
        ts = ms_to_datetime(msg.get("timestamp"))
        base = f"{uid}:{mid}"
        if is_summary(msg):
            prompt_start = len(b.parts)
            items = content_items(msg.get("content"))
            for n, (_, text) in enumerate(items or [(True, "")]):
                b.add(
                    f"{base}:{n}",
                    index,
                    role=str(role or "assistant"),
                    kind="summary",
                    text=text,
                    message_id=mid,
                    ts=ts,
                )
            count = msg["metadata"].get("originalMessageCount")
            start = (
                count
                if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= index
                else index
            )
            for j in range(start, index):
                for old in b.by_message.get(j, []):
                    b.add(
                        f"{old.uid}@{mid}",
                        None,
                        role=old.role,
                        kind=old.kind,
                        text=old.text,
                        message_id=old.message_id,
                        tool_name=old.tool_name,
                        ts=old.ts,
                        resent=old.resent,
                        pruned_at=old.pruned_at,
                        pruned_text=old.pruned_text,
                    )
            if isinstance(msg.get("tokenUsage"), dict):
                summary_usage.append({"message_id": mid, **msg["tokenUsage"]})
            continue
        if role == "assistant":
            call = _call(msg, uid, base, len(b.calls), prompt_start, len(b.parts), index in summed, legacy)
            b.calls.append(call)
            provider, model = call.provider, call.model
            n = 0
            reasoning = msg.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                resent = is_anthropic(provider, model) and bool(msg.get("toolCalls"))
                b.add(
                    f"{base}:{n}",
                    index,
                    role="assistant",
                    kind="reasoning",
                    text=reasoning,
                    message_id=mid,
                    call_uid=call.uid,
                    ts=ts,
                    resent=resent,
                )
                n += 1
            for is_text, text in content_items(msg.get("content")):
                b.add(
                    f"{base}:{n}",
                    index,
                    role="assistant",
                    kind="assistant_text" if is_text else "file",
                    text=text,
                    message_id=mid,
                    call_uid=call.uid,
                    ts=ts,
                )
                n += 1
            for tc in msg.get("toolCalls") or []:
                fn = tc.get("function") if isinstance(tc, dict) else None
                fn = fn if isinstance(fn, dict) else {}
                b.add(
                    f"{base}:{n}",
                    index,
                    role="assistant",
                    kind="tool_call",
                    text=compact_args(fn.get("arguments")),
                    tool_name=fn.get("name"),
                    message_id=mid,
                    call_uid=call.uid,
                    ts=ts,
                )
                n += 1
        elif role == "user":
            for n, (is_text, text) in enumerate(content_items(msg.get("content"))):
                b.add(
                    f"{base}:{n}",
                    index,
                    role="user",
                    kind="user_text" if is_text else "file",
                    text=text,
                    message_id=mid,
                    ts=ts,
                )
        elif role == "tool":
            pruned_at = ms_to_datetime(msg.get("compactedAt")) if msg.get("compactedAt") else None
            items = content_items(msg.get("content"))
            if not any(is_text for is_text, _ in items):
                items.insert(0, (True, ""))
            for n, (is_text, text) in enumerate(items):
                b.add(
                    f"{base}:{n}",
                    index,
                    role="tool",
                    kind="tool_result" if is_text else "file",
                    text=text,
                    message_id=mid,
                    tool_name=msg.get("name"),
                    ts=ts,
                    pruned_at=pruned_at,
                    pruned_text=(PRUNED_TEXT if n == 0 else "") if pruned_at else None,
                )
        elif role == "system":
            for n, (_, text) in enumerate(content_items(msg.get("content"))):
                b.add(f"{base}:{n}", index, role="system", kind="system", text=text, message_id=mid, ts=ts)
        else:  # `parse_db` leaves such a message out before
            raise ValueError(f"message of key {key!r} sequence {row.sequence} has unknown role {role!r}")

    times = [p.ts for p in b.parts if p.ts is not None]
    meta: dict[str, Any] = {"agent": agent}
    if info:
        meta["session"] = info
    if summary_usage:
        meta["summary_usage"] = summary_usage
    metadata = info.get("metadata")
    title = metadata.get("title") if isinstance(metadata, dict) else None
    parent = info.get("parentSessionId")
    session = Session(
        uid=uid,
        tool=TOOL,
        native_id=session_id,
        source_path=str(path),
        layout=LAYOUT_LEGACY if legacy else LAYOUT_DB,
        project=project,
        title=title if isinstance(title, str) else None,
        started_at=ms_to_datetime(info.get("createdAt")) or (min(times) if times else None),
        ended_at=ms_to_datetime(info.get("lastActivity")) or (max(times) if times else None),
        parent_uid=f"{TOOL}:{parent}" if isinstance(parent, str) and parent else None,
        is_subagent=isinstance(parent, str) and bool(parent),
        meta=meta,
    )
    return ParsedSession(session=session, calls=b.calls, parts=b.parts)


def _call(
    msg: dict[str, Any],
    session_uid: str,
    uid: str,
    seq: int,
    prompt_start: int,
    prompt_end: int,
    turn_summed: bool,
    legacy: bool,
) -> Call:
    provider = msg.get("provider") if isinstance(msg.get("provider"), str) else None
    model = msg.get("model") if isinstance(msg.get("model"), str) else None
    usage = msg.get("tokenUsage") if isinstance(msg.get("tokenUsage"), dict) else None
    raw = usage or {}
    counts = token_counts(*map(raw.get, _USAGE_KEYS))
    inp, out, reasoning, read, write, total = counts or (None,) * len(_USAGE_KEYS)
    status: UsageStatus
    ctx = carry = None
    if counts is None:
        status = INVALID
    elif usage is None or is_missing(inp, out, read, write):
        status = "missing"
    else:
        ctx = context_tokens("anthropic", inp or 0, read, write)
        # AI-SDK v5 outputTokens already include reasoning (OpenAI, Anthropic) or leave it apart (Google),
        # and Dexto stores it as is: the whole of it is the output that re-enters the history.
        carry = carried_tokens("anthropic", out or 0)
        anthropic = is_anthropic(provider, model)
        if turn_summed:
            status = "turn_summed"
        elif anthropic and ((inp == 0 and (read or 0) > 0) or legacy):
            status = "suspect"
        else:
            status = "ok"
    output = msg.get("assistantOutput")
    state = output.get("status") if isinstance(output, dict) else None
    error = None
    if state == "stopped":
        reason = output.get("reason") if isinstance(output, dict) else None
        error = str(reason) if reason else "stopped"
    elif state == "draft":
        error = "incomplete (draft)"
    return Call(
        uid=uid,
        session_uid=session_uid,
        seq=seq,
        prompt_start=prompt_start,
        prompt_end=prompt_end,
        usage_status=status,
        usage_style="anthropic",
        message_id=str(msg["id"]),
        ts=ms_to_datetime(msg.get("timestamp")),
        provider=provider,
        model=model,
        input=inp,
        output=out,
        reasoning=reasoning,
        cache_read=read,
        cache_write=write,
        total=total,
        usage_raw=usage,
        ctx=ctx,
        carry=carry,
        error=error,
        finish=state if isinstance(state, str) else None,
    )
