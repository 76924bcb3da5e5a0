"""The records importers yield and the store writes: one session with its calls and parts.

Ordering model: parts of a session are numbered by `seq` in conversation order. Call `k` was sent the
parts with `prompt_start <= seq < prompt_end` (compaction moves `prompt_start` forward); the parts it
produced carry its `call_uid`. So the text appended between two calls is the parts in
`[prompt_end[k-1], prompt_end[k])` that call k-1 did not produce itself (its output is `carry`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

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
# turn (kept, never a per-call target); suspect: Anthropic inputTokens == 0 with cache reads (Dexto 1.5.5+).
UsageStatus = Literal["ok", "missing", "turn_summed", "suspect"]


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
    seq: int  # 0-based order of the call within its session
    prompt_start: int
    prompt_end: int
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


@dataclass(slots=True)
class Part:
    uid: str
    session_uid: str
    seq: int
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
    line: int
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


# What an importer's `parse` yields: whole sessions, and estimate pairs from agent logs.
Record = ParsedSession | AgentEstimate
