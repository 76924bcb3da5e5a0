"""A recording's timeline laid out as calls and parts, its usage joined with the token-usage log beside it.

Usage of a call (`packages/agents/src/core/streamResponseHelpers.ts` `recordHistoryWithUsage`,
`ConversationManager.ts` `mergeTurnMetadata`): the ai content's `metadata.usage` holds
`{promptTokens, completionTokens, totalTokens}` from the last stream chunk that carried usage; the cache
and reasoning breakdown is not written there. `promptTokens` includes cached tokens for every provider
(Anthropic: input + cache read + cache creation, `AnthropicStreamProcessor.ts`; OpenAI Responses:
`input_tokens`, `parseResponsesStream.ts`; Gemini: `promptTokenCount`, `neutralConverters.ts`
`geminiUsageToUsageStats`), so `ctx = promptTokens` (style "openai" or "gemini"). Completion:
Anthropic's `output_tokens` and OpenAI's include thinking/reasoning, kept in the history and sent back by
default (`reasoning.includeInContext` true, `stripFromContext` none: `docs/reference/ephemerals.md`), so
`carry` is all of it (style "openai", reasoning re-sent); Gemini's `candidatesTokenCount` leaves the
thoughts out (style "gemini": `carry = output`). llxprt does send thinking back to Gemini as `thought`
parts (`neutralConverters.ts` `blockToGeminiPart`); whether Gemini counts them in the next prompt is
not known from the source, and `carry` cannot hold them, so they are stored as not re-sent, as
gemini-cli's are (an assumption: their cost would show up in the next call's delta).
Before v0.10.0 Anthropic's `promptTokens` left the cache out and the recording kept no cache counts:
such a call (an ai content without `metadata.model`) is `suspect`, never a target (see
`_legacy_anthropic`), unless its usage still holds the cache counts (then it reads Anthropic-style).

The join (`docs/token-usage-log.md`, `packages/agents/src/core/turnIdentity.ts`): a turn record is
written before its turn reaches the history; the `turn_id` and `prompt_id` minted for that send are
stamped on the input contents persisted with it (an id already on a content wins, so a tool response
may keep an older one). A call takes the successful attempt whose `turn_id` one of its inputs (or its
own ai content) carries; failing that, the first unclaimed successful attempt of its inputs' `prompt_id`
(shared by the steps of one user prompt) whose `actual_prompt_tokens` equals the call's own
`promptTokens`. `user_turn` is never used, nor a sub-agent's record (`subagent_name`: its sends are
not in the recording; `packages/agents/src/core/chatSession.ts` names the log by the session id).
The joined record gives the reasoning (`reasoning_tokens`), cache reads (`cache_read_tokens`, else `cached_tokens`), cache writes
(`cache_write_tokens`) and `tool_tokens`, and is kept whole in `usage_raw["token_usage"]`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.paths import readable_path
from calib.core.records import Call, ParsedSession, Part, Session, UsageStatus, UsageStyle
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts
from calib.importers.common import timestamp
from calib.importers.llxprt.chats import Item, Recording, Restart, Switch, block_text
from calib.importers.llxprt.identity import NAME, call_uid, part_uid, session_uid
from calib.importers.llxprt.usage_log import TurnRecord

LAYOUT_CHATS = "llxprt-chats"
LAYOUT_CHATS_USAGE = "llxprt-chats-usage"
LAYOUTS = (LAYOUT_CHATS_USAGE, LAYOUT_CHATS)

# llxprt's provider names as calib names providers (the rest are kept as written).
PROVIDERS = {"gemini": "google", "openai-responses": "openai", "openaivercel": "openai"}
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "summary": "assistant"}
_TEXT_KINDS = {"human": "user_text", "ai": "assistant_text", "tool": "tool_result", "summary": "summary"}


def calib_provider(name: object) -> str | None:
    """llxprt's provider name as calib's (`gemini` is `google`)."""
    if not isinstance(name, str) or not name:
        return None
    return PROVIDERS.get(name, name)


def usage_style(provider: str | None) -> UsageStyle:
    """How a call's usage reads: Gemini's completion leaves thoughts out, every other's holds them."""
    return "gemini" if provider == "google" else "openai"


@dataclass(slots=True)
class _Call:
    seq: int
    prompt_start: int
    prompt_end: int
    ts: datetime | None
    provider: str | None
    model: str | None
    usage: dict[str, Any] | None
    meta: dict[str, Any]
    turn_ids: list[str] = field(default_factory=list)
    prompt_ids: list[str] = field(default_factory=list)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _part_kind(speaker: str, block: dict[str, Any]) -> tuple[str, str]:
    """(role, kind) of a block of an item of `speaker`."""
    kind = block.get("type")
    if kind == "tool_response":
        return "tool", "tool_result"
    if kind == "tool_call":
        return _ROLES[speaker], "tool_call"
    if kind == "thinking":
        return _ROLES[speaker], "reasoning"
    if kind == "media":
        return _ROLES[speaker], "file"
    return _ROLES[speaker], _TEXT_KINDS[speaker]


def _join(calls: list[_Call], turns: list[TurnRecord], session_id: str) -> dict[int, TurnRecord]:
    """The successful attempt each call joins to, by `turn_id`, else by `prompt_id` in order."""
    usable = [  # a sub-agent's sends share the log, not the recording
        t
        for t in turns
        if t.succeeded
        and _str(t.fields.get("session_id")) in (None, session_id)
        and _str(t.fields.get("subagent_name")) is None
    ]
    by_turn = {tid: t for t in usable if (tid := _str(t.fields.get("turn_id"))) is not None}
    joined: dict[int, TurnRecord] = {}
    claimed: set[int] = set()
    for call in calls:
        own = _str(call.meta.get("turnId"))
        for tid in [*reversed(call.turn_ids), *([own] if own else [])]:
            record = by_turn.get(tid)
            if record is not None and record.line not in claimed:
                joined[call.seq] = record
                claimed.add(record.line)
                break
    queues: dict[str, deque[TurnRecord]] = {}
    for t in usable:
        pid = _str(t.fields.get("prompt_id"))
        if pid is not None and t.line not in claimed:
            queues.setdefault(pid, deque()).append(t)
    for call in calls:
        prompt = call.usage.get("promptTokens") if call.usage is not None else None
        if call.seq in joined or prompt is None:
            continue  # by order alone, only a call with its own count: it must equal the record's
        for pid in reversed(call.prompt_ids):
            queue = queues.get(pid, deque())
            record = next((t for t in queue if t.fields.get("actual_prompt_tokens") == prompt), None)
            if record is not None:
                queue.remove(record)
                joined[call.seq] = record
                break
    return joined


def _first(*values: object) -> object:
    """The first value that was recorded (not None)."""
    return next((v for v in values if v is not None), None)


def _legacy_anthropic(call: _Call) -> bool:
    """True for an Anthropic response recorded before llxprt counted the cache in `promptTokens`.

    Up to the v0.10 nightlies of 2026-06-25 (commit 1ab6181a9) Anthropic's `promptTokens` was
    `input_tokens` alone (`packages/core/src/providers/anthropic/AnthropicProvider.ts@v0.9.0`) and the
    recording kept no cache counts (`geminiChat.ts@v0.9.0`). Those versions stamped no `metadata.model`
    on ai contents; from 2026-07-02 (80939f318, in v0.10.0) every ai content has it.
    """
    return call.provider == "anthropic" and "model" not in call.meta


def _call_record(uid: str, call: _Call, joined: TurnRecord | None) -> Call:
    style = usage_style(call.provider)
    usage = call.usage or {}
    legacy = _legacy_anthropic(call)
    if legacy and ("cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage):
        style = "anthropic"  # the cache counts were kept beside an input that leaves them out
    log = joined.fields if joined is not None else {}
    if call.usage is not None:
        prompt, completion, total = (
            usage.get(k) for k in ("promptTokens", "completionTokens", "totalTokens")
        )
    else:  # the response carried no usage: the provider count the token-usage log has, if any
        prompt, completion, total = (
            log.get(k) for k in ("actual_prompt_tokens", "output_tokens", "total_tokens")
        )
    reasoning = _first(usage.get("reasoningTokens"), log.get("reasoning_tokens"))
    cache_read = _first(
        usage.get("cache_read_input_tokens"),
        usage.get("cachedTokens"),
        log.get("cache_read_tokens"),
        log.get("cached_tokens"),
    )
    cache_write = _first(
        usage.get("cache_creation_input_tokens"),
        usage.get("cacheCreationTokens"),
        log.get("cache_write_tokens"),
    )
    tool_prompt = _first(usage.get("toolTokens"), log.get("tool_tokens"))
    raw: dict[str, Any] = {}
    if call.usage is not None:
        raw["usage"] = call.usage
    if joined is not None:
        raw["token_usage"] = joined.fields
    counts = token_counts(prompt, completion, total, reasoning, cache_read, cache_write, tool_prompt)
    status: UsageStatus
    ctx = carry = None
    if counts is None:
        status = INVALID
        prompt = completion = total = reasoning = cache_read = cache_write = tool_prompt = None
    else:
        prompt, completion, total, reasoning, cache_read, cache_write, tool_prompt = counts
        if is_missing(prompt, completion):
            status = "missing"
        elif legacy and style != "anthropic":
            status = "suspect"  # the cache is not in this prompt count, and not recorded apart
        else:
            status = "ok"
            ctx = context_tokens(style, prompt, cache_read, cache_write)
            carry = carried_tokens(style, completion, reasoning, reasoning_resent=True)
    return Call(
        uid=call_uid(uid, call.seq),
        session_uid=uid,
        seq=call.seq,
        prompt_start=call.prompt_start,
        prompt_end=call.prompt_end,
        usage_status=status,
        usage_style=style,
        message_id=_str(call.meta.get("id")),
        ts=call.ts,
        provider=call.provider,
        model=call.model,
        input=prompt,
        output=completion,
        reasoning=reasoning,
        cache_read=cache_read,
        cache_write=cache_write,
        tool_prompt=tool_prompt,
        total=total,
        usage_raw=raw or None,
        ctx=ctx,
        carry=carry,
        finish=_str(_first(call.meta.get("finishReason"), call.meta.get("stopReason"))),
    )


def build_session(
    path: Path, rec: Recording, turns: list[TurnRecord] | None, log: Path | None
) -> ParsedSession:
    """The session of a recording; `turns`: the records of its token-usage log (None: there is none)."""
    start = rec.start
    session_id = str(start["sessionId"])
    uid = session_uid(session_id)
    provider = calib_provider(start.get("provider"))
    model = _str(start.get("model"))
    parts: list[Part] = []
    calls: list[_Call] = []
    prompt_start = 0
    current: _Call | None = None
    pending_turns: list[str] = []
    pending_prompts: list[str] = []
    last_prompts: list[str] = []
    for entry in rec.entries:
        if isinstance(entry, Restart):
            prompt_start, current = len(parts), None
            continue
        if isinstance(entry, Switch):
            provider, model, current = calib_provider(entry.provider), entry.model, None
            continue
        item: Item = entry
        meta = item.metadata
        produced: str | None = None
        if item.speaker == "ai":
            usage = meta.get("usage") if isinstance(meta.get("usage"), dict) else None
            # A response split over ai contents gives each the same usage (or none to all): different
            # usage is another response.
            if current is None or usage != current.usage:
                current = _Call(
                    len(calls),
                    prompt_start,
                    len(parts),
                    item.ts,
                    provider,
                    _str(meta.get("model")) or model,
                    usage,
                    meta,
                    pending_turns,
                    pending_prompts or list(last_prompts),
                )
                calls.append(current)
                pending_turns, pending_prompts = [], []
            produced = call_uid(uid, current.seq)
        else:
            current = None
            if item.speaker != "summary":
                if (tid := _str(meta.get("turnId"))) is not None:
                    pending_turns.append(tid)
                if (pid := _str(meta.get("promptId"))) is not None:
                    pending_prompts.append(pid)
                    last_prompts = [pid]
        resent = produced is None or provider != "google"  # Gemini's thoughts are outside its counts
        for block in item.blocks:
            if not isinstance(block, dict):
                continue
            sent = block_text(block)
            if sent is None:
                continue
            text, tool = sent
            role, kind = _part_kind(item.speaker, block)
            parts.append(
                Part(
                    uid=part_uid(uid, len(parts)),
                    session_uid=uid,
                    seq=len(parts),
                    role=role,
                    kind=kind,
                    text=text,
                    message_id=_str(meta.get("id")),
                    tool_name=tool,
                    call_uid=produced,
                    ts=item.ts,
                    resent=resent or kind != "reasoning",
                )
            )
    joined = _join(calls, turns, session_id) if turns else {}
    records = [_call_record(uid, c, joined.get(c.seq)) for c in calls]
    dirs = start.get("workspaceDirs")
    project = _str(start.get("cwd")) or (_str(dirs[0]) if isinstance(dirs, list) and dirs else None)
    info: dict[str, Any] = {
        "project_hash": _str(start.get("projectHash")),
        "provider": _str(start.get("provider")),
        "token_usage_log": readable_path(log) if log is not None else None,  # JSON holds no surrogates
        "token_usage_joined": len(joined) if turns is not None else None,
        **rec.counts,
    }
    session = Session(
        uid=uid,
        tool=NAME,
        native_id=session_id,
        source_path=str(path),
        layout=LAYOUT_CHATS_USAGE if turns is not None else LAYOUT_CHATS,
        project=project,
        title=rec.title,
        started_at=timestamp(start.get("startTime")),
        ended_at=rec.last_ts,
        meta={k: v for k, v in info.items() if v is not None} or None,
    )
    return ParsedSession(session, records, parts)
