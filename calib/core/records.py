"""The records importers yield and the store writes: one session with its calls and parts.

This is the one definition of the record schema: the store's columns and their types are derived
from these dataclasses (`COLUMNS`), so a field added here is a column everywhere once a migration
adds it to the tables.

Ordering model: parts of a session are numbered by `seq` in conversation order. Call `k` was sent the
parts with `prompt_start <= seq < prompt_end` (compaction moves `prompt_start` forward); the parts it
produced carry its `call_uid`. So the text appended between two calls is the parts in
`[prompt_end[k-1], prompt_end[k])` that call k-1 did not produce itself (its output is `carry`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal, get_args, get_origin, get_type_hints

from calib.core.errors import InputWarning

# Part kinds as they were on the wire.
PART_KINDS = (
    "user_text",
    "assistant_text",
    "reasoning",
    "tool_call",
    "tool_result",
    "file",
    "summary",
    "system",
)
ROLES = ("user", "assistant", "tool", "system")

# Part kinds grouped into the three kinds a calibration may give their own ratio.
KIND_GROUPS: dict[str, str] = {
    "tool_result": "tool",
    "file": "tool",
    "user_text": "user",
    "summary": "user",
    "system": "user",
    "assistant_text": "model",
    "reasoning": "model",
    "tool_call": "model",
}
# Kinds not listed above (a newer importer's) fall in this group.
DEFAULT_KIND_GROUP = "user"
RATIO_KEYS: tuple[str, ...] = ("model", "tool", "user")

# How ctx was derived from the recorded usage (reference/formats.md section 5.1).
UsageStyle = Literal["gemini", "anthropic", "openai"]
# ok: a per-call target; missing: no or all-zero usage; turn_summed: Dexto <= 1.3 usage summed over a
# turn (kept, never a per-call target); suspect: Anthropic inputTokens == 0 with cache reads (Dexto 1.5.5+),
# or a prompt count that may leave the cache out (llxprt-code before 0.10 on Anthropic);
# invalid: a recorded count is not a count (`calib.core.usage.token_counts`): kept in `usage_raw` only,
# the call's counts, ctx and carry are null.
UsageStatus = Literal["ok", "missing", "turn_summed", "suspect", "invalid"]

# Positions (seq, prompt bounds, log line) are stored as 32-bit integers, other integers as 64-bit.
_INT32: dict[str, str] = {"store": "int32"}


@dataclass(slots=True)
class Session:
    uid: str  # natural key, "<tool>:<native id>[:<discriminator>]"
    tool: str  # "gemini-cli" | "opencode" | "dexto"
    native_id: str
    source_path: str
    layout: str  # the on-disk layout variant, e.g. "gemini-json-parts", "opencode-db"
    project: str | None = None
    title: str | None = None
    started_at: datetime | None = None  # naive UTC
    ended_at: datetime | None = None
    parent_uid: str | None = None  # set for sub-agent sessions
    is_subagent: bool = False
    meta: dict[str, Any] | None = None


@dataclass(slots=True)
class Call:
    uid: str
    session_uid: str
    seq: int = field(metadata=_INT32)  # 0-based order of the call within its session
    prompt_start: int = field(metadata=_INT32)
    prompt_end: int = field(metadata=_INT32)
    usage_status: UsageStatus
    usage_style: UsageStyle
    message_id: str | None = None
    ts: datetime | None = None
    provider: str | None = None
    model: str | None = None
    input: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    tool_prompt: int | None = None
    total: int | None = None
    usage_raw: dict[str, Any] | None = None  # the provider fields exactly as recorded
    ctx: int | None = None  # whole prompt, cached and uncached
    carry: int | None = None  # output tokens that re-enter the next prompt
    error: str | None = None
    finish: str | None = None
    # True when `output` is a streaming placeholder, not the call's output (Claude Code 2.0.x-2.1.6x);
    # `carry` is then None, and the next call's chain counts this call's output parts from their text.
    output_placeholder: bool = False


@dataclass(slots=True)
class Part:
    uid: str
    session_uid: str
    seq: int = field(metadata=_INT32)
    role: str
    kind: str
    text: str
    message_id: str | None = None
    tool_name: str | None = None
    call_uid: str | None = None  # the call that produced this part (model output only)
    ts: datetime | None = None
    resent: bool = True  # False when the agent never sends it back (e.g. Gemini thought summaries)
    pruned_at: datetime | None = None  # from then on the agent sent `pruned_text` instead of `text`
    pruned_text: str | None = None


@dataclass(slots=True)
class AgentEstimate:
    """An agent's own estimate-versus-actual pair from its logs (Dexto's `Context estimation accuracy`)."""

    session_uid: str | None  # None where an older shared log line names no session
    source_path: str
    line: int = field(metadata=_INT32)
    estimated: int
    actual: int
    ts: datetime | None = None
    agent: str | None = None


@dataclass(slots=True)
class ParsedSession:
    """Everything one importer found about one session; the store writes it in one transaction."""

    session: Session
    calls: list[Call] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)


class LaidOutSession(ParsedSession):
    """A session whose calls and parts are kept as rows of their fields until read as records.

    A call row holds every `Call` field, in field order. Part row i holds the `Part` fields from
    `role` on, in field order (the same number in every row; the fields after the last one take
    their defaults), of the part with seq `first_seq + i`, whose uid is `uid_prefix` followed by that
    seq, in the session `session.uid`. The store lays the rows out as its columns directly
    (`calib.store.columns`): ingest makes a quarter of a million parts per 300 MB of logs, and making
    a record of each cost more than laying it out. Read as records it is a `ParsedSession` like any
    other: `calls` and `parts` make them on first use (and keep them, so that changes to them count),
    and it equals the `ParsedSession` with the same session, calls and parts.
    """

    __slots__ = ("_calls", "_parts", "call_rows", "first_seq", "part_rows", "uid_prefix")

    def __init__(
        self,
        session: Session,
        call_rows: list[tuple[Any, ...]],
        uid_prefix: str,
        first_seq: int,
        part_rows: list[tuple[Any, ...]],
    ) -> None:
        self.session = session
        self.call_rows = call_rows
        self.uid_prefix = uid_prefix
        self.first_seq = first_seq
        self.part_rows = part_rows
        self._calls: list[Call] | None = None
        self._parts: list[Part] | None = None

    @property
    def calls(self) -> list[Call]:
        if self._calls is None:
            self._calls = [Call(*row) for row in self.call_rows]
        return self._calls

    @calls.setter
    def calls(self, value: list[Call]) -> None:
        self._calls = value

    @property
    def parts(self) -> list[Part]:
        if self._parts is None:
            prefix, uid = self.uid_prefix, self.session.uid
            self._parts = [
                Part(f"{prefix}{seq}", uid, seq, *row)
                for seq, row in enumerate(self.part_rows, self.first_seq)
            ]
        return self._parts

    @parts.setter
    def parts(self, value: list[Part]) -> None:
        self._parts = value

    @property
    def calls_laid_out(self) -> bool:
        """True while the calls are only rows (no records made, so none changed since)."""
        return self._calls is None

    @property
    def parts_laid_out(self) -> bool:
        """True while the parts are only rows (no records made, so none changed since)."""
        return self._parts is None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedSession):
            return NotImplemented
        return (self.session, self.calls, self.parts) == (other.session, other.calls, other.parts)

    __hash__ = None  # type: ignore[assignment]


# What an importer's `parse` yields: whole sessions, estimate pairs from agent logs, and warnings about
# what it left out of a source it still read (a damaged or unfinished line, or a damaged database row:
# `InputWarning`, which names the path and the line, or the table and row in its message; ingest reports
# it and stores nothing for it).
Record = ParsedSession | AgentEstimate | InputWarning


# -- the store's columns, derived from the records ---------------------------------------------------

ColumnKind = Literal["string", "int32", "int64", "bool", "timestamp", "json"]


@dataclass(frozen=True, slots=True)
class Column:
    """One store column: the record field it holds, its name in the table, and its type."""

    field: str
    name: str  # `uid` is stored as `<record>_uid` (session_uid, call_uid, part_uid)
    kind: ColumnKind  # json: a dict field, stored as its JSON text


# Table of each record type, in the order the store writes them.
TABLES: dict[str, type] = {
    "sessions": Session,
    "calls": Call,
    "parts": Part,
    "agent_estimates": AgentEstimate,
}
_UID_NAMES = {"sessions": "session_uid", "calls": "call_uid", "parts": "part_uid"}


def _kind(hint: Any, metadata: Any) -> ColumnKind:
    if metadata.get("store") == "int32":
        return "int32"
    present = [a for a in get_args(hint) if a is not type(None)] if get_origin(hint) is not Literal else []
    base = present[0] if len(present) == 1 else hint
    base = get_origin(base) or base
    if base is bool:
        return "bool"
    if base is int:
        return "int64"
    if base is datetime:
        return "timestamp"
    if base is dict:
        return "json"
    return "string"


def _columns(table: str, record: type) -> tuple[Column, ...]:
    hints = get_type_hints(record)
    return tuple(
        Column(f.name, _UID_NAMES[table] if f.name == "uid" else f.name, _kind(hints[f.name], f.metadata))
        for f in fields(record)
    )


# table -> its columns in record field order
COLUMNS: dict[str, tuple[Column, ...]] = {table: _columns(table, record) for table, record in TABLES.items()}
