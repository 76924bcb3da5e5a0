"""A whole rollout read into one session: its row (metadata, project, parent) and its records.

- uid `codex:<session_meta.payload.id>`; project = `cwd`; started_at = `session_meta.payload.timestamp`
  (else the line's); ended_at = the last record's timestamp; title = the first line of the first
  `event_msg` `user_message` (what the user typed), else of the first user message item that is not
  injected context (`<environment_context>`, `# AGENTS.md ...`).
- provider = `model_provider` (Codex's configured provider id, "openai" when absent).
- Sub-agents: a `session_meta.source` of the form `{"subagent": ...}` marks a sub-agent thread; its
  parent is named by the `parent_thread_id` found in it (then `parent_uid` = `codex:<that id>`). No
  sub-agent rollout is among the real fixtures, so this follows Codex's `SessionSource` type only.
- `meta`: cli_version, originator, source, thread_source, model_provider, git, the last
  `model_context_window` seen, the names of `dynamic_tools`, the compactions (line, timestamp, items
  in the replacement history), and what was skipped or counted: `skipped_lines` (damaged lines),
  `reemitted_token_counts`, `calls_without_usage`, `output_items_without_usage`, `unknown_items`.
- Lines left out (`calib.importers.codex.reader`): an `InputWarning` for each of the first few damaged
  lines and one `MoreWarnings` counting the rest, then one for a last line still being written, given
  after the session (`line_warnings`), then one for NUL bytes after the last line
  (`calib.importers.logfile.tail_warnings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calib.core.errors import InputError, InputWarning, MoreWarnings
from calib.core.records import ParsedSession, Session
from calib.importers.codex.builder import Builder
from calib.importers.codex.identity import LAYOUT, NAME, session_uid
from calib.importers.codex.reader import READ_MEMORY_FACTOR, Lines, read_lines
from calib.importers.common import damaged_line, timestamp, unfinished_line
from calib.importers.logfile import read_log_bytes

DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
NOT_ROLLOUT_HINT = (
    "pass only rollout-*.jsonl files from $CODEX_HOME/sessions or archived_sessions, or another --format"
)
_META_KEYS = ("cli_version", "originator", "source", "thread_source", "model_provider", "git")


def head_record(path: Path, lines: Lines) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """The `session_meta` record that opens a rollout: (line, record, payload); InputError otherwise."""
    if not lines.records:
        where = lines.skipped.first()
        raise InputError(
            "no complete record in the file (empty, or its only line is cut off or damaged)",
            path=str(path),
            line=where,
            hint=DAMAGED_HINT if where else NOT_ROLLOUT_HINT,
        )
    lineno, record = lines.records[0]
    damaged = lines.skipped.first()
    if damaged is not None and damaged < lineno:
        raise InputError(
            f"line {damaged} does not parse, so the rollout has no session_meta",
            path=str(path),
            line=damaged,
            hint=DAMAGED_HINT,
        )
    payload = record.get("payload")
    if record.get("type") != "session_meta" or not isinstance(payload, dict):
        raise InputError(
            f"line {lineno} is a {record.get('type')!r} record, not the session_meta a Codex rollout starts with",
            path=str(path),
            line=lineno,
            hint=NOT_ROLLOUT_HINT if lineno == 1 else DAMAGED_HINT,
        )
    native = payload.get("id") or payload.get("session_id")
    if not isinstance(native, str) or not native:
        raise InputError("session_meta has no id", path=str(path), line=lineno, hint=DAMAGED_HINT)
    return lineno, record, payload


def _parent(source: Any) -> tuple[bool, str | None]:
    """(is a sub-agent, its parent thread id) from `session_meta.source`."""
    if not isinstance(source, dict) or "subagent" not in source:
        return False, None
    stack: list[Any] = [source["subagent"]]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            found = value.get("parent_thread_id")
            if isinstance(found, str) and found:
                return True, found
            stack.extend(value.values())
    return True, None


def session_row(path: Path, record: dict[str, Any], meta: dict[str, Any], builder: Builder) -> Session:
    """The session row of a rollout whose first record is `record` (payload `meta`), as laid out by `builder`."""
    native = str(meta.get("id") or meta.get("session_id"))
    is_subagent, parent = _parent(meta.get("source"))
    info: dict[str, Any] = {k: meta.get(k) for k in _META_KEYS}
    tools = meta.get("dynamic_tools")
    if isinstance(tools, list):
        info["dynamic_tools"] = [t.get("name") for t in tools if isinstance(t, dict)] or None
    info["parent_thread_id"] = parent
    info["model_context_window"] = builder.window
    info["compactions"] = builder.compactions or None
    info.update(sorted(builder.counts.items()))
    info["unknown_items"] = builder.unknown or None
    cwd = meta.get("cwd")
    return Session(
        uid=session_uid(native),
        tool=NAME,
        native_id=native,
        source_path=str(path),
        layout=LAYOUT,
        project=cwd if isinstance(cwd, str) and cwd else None,
        title=builder.title or builder.title_fallback,
        started_at=timestamp(meta.get("timestamp")) or timestamp(record.get("timestamp")),
        ended_at=timestamp(builder.last_ts),
        parent_uid=session_uid(parent) if parent else None,
        is_subagent=is_subagent,
        meta={k: v for k, v in info.items() if v is not None} or None,
    )


def line_warnings(path: Path, lines: Lines) -> list[InputWarning]:
    """A warning for each line the read of `lines` left out: damaged lines, then an unfinished last line."""
    kept, more = lines.skipped.after()
    out: list[InputWarning] = [damaged_line(path, n, why) for n, why in kept]
    if more:
        out.append(MoreWarnings(more, path=str(path)))
    if lines.torn_tail:
        out.append(unfinished_line(path, lines.torn_tail, NAME))
    return out


def build(path: Path, data: bytes) -> tuple[ParsedSession, Builder, Lines]:
    """The session of a whole rollout, with the builder that laid it out and the lines read."""
    lines = read_lines(data)
    first, record, meta = head_record(path, lines)
    builder = Builder(session_uid(str(meta.get("id") or meta.get("session_id"))), meta)
    builder.last_ts = record.get("timestamp") if isinstance(record.get("timestamp"), str) else None
    feed = builder.feed
    for lineno, rec in lines.records:
        if lineno != first:
            feed(lineno, rec)
    builder.count("skipped_lines", len(lines.skipped))
    session = session_row(path, record, meta, builder)
    return ParsedSession(session, builder.calls, builder.parts), builder, lines


def parse_session(path: Path) -> ParsedSession:
    """Parse one Codex rollout into a session with its calls and parts."""
    return build(path, read_log_bytes(path, READ_MEMORY_FACTOR).data)[0]
