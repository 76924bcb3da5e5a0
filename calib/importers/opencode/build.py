"""Turn one OpenCode session's messages (any layout, normalised to MessageV2 dicts) into calls and parts.

Every layout reader in `calib.importers.opencode` hands this module a list of `(info, parts)` pairs in
conversation order, the shape `opencode export` prints; this module knows how OpenCode turns them into
model requests (`toModelMessages`, `filterCompacted`, the processor's step parts) and nothing about files.

Rules (reference/formats.md section 2, and OpenCode's `session/message-v2.ts`):

- One call per step: a `step-start` opens it, its `step-finish` carries its usage. Message-level `tokens`
  are those of the last step and are used only when a message has no step parts at all (the earliest
  per-project tree, MessageV1, where they are the only usage). Every assistant message makes at least one
  call (usage "missing" if none was recorded), except a summary with no steps, usage or error, whose
  text is history but whose call cannot be scored.
- Output parts (text, reasoning, tool calls) carry their call's uid; tool results follow the step's outputs
  and are the prompt of the next step. A pruned result (`state.time.compacted`) is sent as
  `[Old tool result content cleared]` from that time on, the same text Dexto sends (`_common.PRUNED_TEXT`).
- Compaction: a user message with a `compaction` part (sent as "What did we do so far?") and the assistant
  message answering it with `summary: true`. Once that summary completed without error, later calls'
  history starts at the compaction user message, or at `tail_start_id` when OpenCode kept a verbatim
  tail. A summary without a compaction message (MessageV1) restarts history at the summary itself.
- `system: string[]` (2025 assistant messages, and MessageV1 metadata) is the full system prompt: each
  distinct string becomes one `system` part, inserted once, before the first user part of the prompt
  of the first call that used it.
- Usage is Anthropic-style (`input` uncached). Before OpenCode PR #4256 (merged 2025-11-12) `input` of
  non-Anthropic providers still included cache reads; calls of that era (no `tokens.total`, cache reads,
  a non-Anthropic provider) are kept with `usage_status = "suspect"`.
- Reasoning is carried into the next prompt when it is reported apart from `output` (`total` equals
  input + output + reasoning + cache; or, without `total`, reasoning exceeds output, so it cannot be part
  of it, or the provider is Google) and the next call uses the same provider and model.
- Parts of an errored assistant message get `resent=False`: `toModelMessages` drops such a message unless
  it was aborted after producing more than reasoning.
- `Call.provider` is the vendor of the model (`calib.importers.opencode.providers`); the usage rules above
  use the `providerID` route, which is kept in `usage_raw["route"]` when it differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from calib.core.records import Call, ParsedSession, Part, Session, UsageStatus
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts
from calib.importers.common import compact_json, ms_to_datetime
from calib.importers.opencode.layout import Layout, Mark, as_int, as_str
from calib.importers.opencode.providers import route_to_vendor

COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
INTERRUPTED_TOOL = "[Tool execution was interrupted]"
# OpenCode PR #4256 made `input` uncached for every provider; older non-Anthropic usage included cache reads.
INPUT_UNCACHED_SINCE = datetime(2025, 11, 13)
# Providers whose SDK reports `inputTokens` without cache (Anthropic API, Bedrock, Vertex Claude).
_ANTHROPIC_LIKE = {"anthropic", "amazon-bedrock", "google-vertex-anthropic"}
# Providers whose reasoning tokens are reported apart from `output` (@ai-sdk/google v2).
_REASONING_APART = {"google", "google-vertex"}
# Files OpenCode turns into synthetic text parts instead of sending them (see toModelMessages).
_UNSENT_MIMES = {"text/plain", "application/x-directory"}

Info = dict[str, Any]
RawPart = dict[str, Any]


def error_text(error: object) -> str | None:
    """An OpenCode `error` object ({name, data: {message}}) as one string."""
    if not error:
        return None
    if isinstance(error, dict):
        data = error.get("data")
        if isinstance(data, dict) and isinstance(data.get("message"), str) and data["message"]:
            return str(data["message"])
        if isinstance(error.get("message"), str):
            return str(error["message"])
        return str(error.get("name") or "error")
    return str(error)


def obj(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (OpenCode fields are optional across versions)."""
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class _CallDraft:
    call: Call
    start: Mark
    end: Mark
    tokens: dict[str, Any] | None


@dataclass
class _Builder(Layout):
    calls: list[_CallDraft] = field(default_factory=list)
    message_marks: dict[str, Mark] = field(default_factory=dict)
    compactions: dict[str, RawPart] = field(default_factory=dict)
    system_seen: set[str] = field(default_factory=set)

    # -- messages ------------------------------------------------------------------------------------

    def user(self, info: Info, parts: list[RawPart]) -> None:
        msg_id = str(info.get("id"))
        ts = ms_to_datetime(obj(info.get("time")).get("created"))
        for index, part in enumerate(parts):
            pid = str(part.get("id") or f"{msg_id}:{index}")
            kind = part.get("type")
            if kind == "text":
                if part.get("ignored"):
                    continue
                self.add(pid, "user", "user_text", str(part.get("text") or ""), msg_id, ts=ts)
            elif kind == "file":
                if part.get("mime") in _UNSENT_MIMES:
                    continue
                self.add(pid, "user", "file", str(part.get("url") or ""), msg_id, ts=ts)
            elif kind == "compaction":
                self.compactions[msg_id] = part
                self.add(pid, "user", "user_text", COMPACTION_PROMPT, msg_id, ts=ts)
            elif kind == "subtask":
                self.add(pid, "user", "user_text", SUBTASK_PROMPT, msg_id, ts=ts)

    def assistant(self, info: Info, parts: list[RawPart]) -> None:
        msg_id = str(info.get("id"))
        created = ms_to_datetime(obj(info.get("time")).get("created"))
        error = info.get("error")
        is_summary = info.get("summary") is True
        # toModelMessages drops errored messages, except aborted ones that produced more than reasoning.
        aborted_with_content = (
            isinstance(error, dict)
            and error.get("name") == "MessageAbortedError"
            and any(p.get("type") not in ("step-start", "reasoning") for p in parts)
        )
        resent = not error or aborted_with_content
        text_kind = "summary" if is_summary else "assistant_text"

        has_steps = any(p.get("type") in ("step-start", "step-finish") for p in parts)
        message_tokens = info.get("tokens") if isinstance(info.get("tokens"), dict) else None
        if not has_steps:
            if is_summary and not error and _tokens_missing(message_tokens):
                # A summary without recorded usage: its text is history, but no call can be scored.
                self._outputs(msg_id, parts, None, created, resent, text_kind)
                return
            groups: list[tuple[list[RawPart], RawPart | None]] = [(parts, None)]
        else:
            groups = _split_steps(parts)
        has_finish = any(finish is not None for _, finish in groups)

        drafts: list[_CallDraft] = []
        for index, (group, finish) in enumerate(groups):
            tokens = finish.get("tokens") if finish is not None else None
            if tokens is None and not has_finish and len(groups) == 1:
                tokens = message_tokens
            ts = created if index == 0 else (_first_time(group) or created)
            end = self.mark()
            call = Call(
                uid=f"{self.uid}:{msg_id}:{index}",
                session_uid=self.uid,
                seq=len(self.calls),
                prompt_start=0,
                prompt_end=0,
                usage_status="ok",
                usage_style="anthropic",
                message_id=msg_id,
                ts=ts,
                provider=as_str(info.get("providerID")),
                model=as_str(info.get("modelID")),
                finish=as_str(finish.get("reason")) if finish is not None else None,
            )
            if finish is not None and "cost" in finish:
                call.usage_raw = {"cost": finish.get("cost")}
            draft = _CallDraft(call, self.start, end, tokens if isinstance(tokens, dict) else None)
            self.calls.append(draft)
            drafts.append(draft)
            system = info.get("system")
            if isinstance(system, list):
                self._system(system, draft, msg_id, ts)
            self._outputs(msg_id, group, call.uid, ts, resent, text_kind)
        last = drafts[-1].call
        last.error = error_text(error)
        if last.finish is None:
            last.finish = as_str(info.get("finish"))

    def _outputs(
        self,
        msg_id: str,
        parts: list[RawPart],
        call_uid: str | None,
        ts: datetime | None,
        resent: bool,
        text_kind: str,
    ) -> None:
        results: list[tuple[str, RawPart]] = []
        for index, part in enumerate(parts):
            pid = str(part.get("id") or f"{msg_id}:{index}")
            kind = part.get("type")
            part_ts = ms_to_datetime(obj(part.get("time")).get("start")) or ts
            if kind in ("text", "reasoning"):
                # OpenCode re-sends reasoning (with its provider metadata) while the model stays the same.
                self.add(
                    pid,
                    "assistant",
                    text_kind if kind == "text" else "reasoning",
                    str(part.get("text") or ""),
                    msg_id,
                    call_uid=call_uid,
                    ts=part_ts,
                    resent=resent,
                )
            elif kind == "tool":
                state = obj(part.get("state"))
                tool_ts = ms_to_datetime(obj(state.get("time")).get("start")) or ts
                self.add(
                    pid,
                    "assistant",
                    "tool_call",
                    compact_json(state.get("input") if state.get("input") is not None else {}),
                    msg_id,
                    tool_name=as_str(part.get("tool")),
                    call_uid=call_uid,
                    ts=tool_ts,
                    resent=resent,
                )
                results.append((pid, part))
            elif kind == "file":
                if part.get("mime") in _UNSENT_MIMES:
                    continue
                self.add(
                    pid,
                    "assistant",
                    "file",
                    str(part.get("url") or ""),
                    msg_id,
                    call_uid=call_uid,
                    ts=part_ts,
                )
        # Tool results reach the model after the assistant turn that called them.
        for pid, part in results:
            state = obj(part.get("state"))
            times = obj(state.get("time"))
            status = state.get("status")
            pruned_at = None
            if status == "completed":
                output = state.get("output")
                text = output if isinstance(output, str) else compact_json(output)
                pruned_at = ms_to_datetime(times.get("compacted"))
            elif status == "error":
                text = str(state.get("error") or "")
            else:
                text = INTERRUPTED_TOOL
            self.add(
                f"{pid}:result",
                "tool",
                "tool_result",
                text,
                msg_id,
                tool_name=as_str(part.get("tool")),
                ts=ms_to_datetime(times.get("end")) or ts,
                resent=resent,
                pruned_at=pruned_at,
            )

    def _system(self, system: list[Any], draft: _CallDraft, msg_id: str, ts: datetime | None) -> None:
        new = [s for s in system if isinstance(s, str) and s not in self.system_seen]
        if not new:
            return
        # Before the first user part of this call's prompt, or at its end if it has none.
        lo = next(i for i, item in enumerate(self.items) if item is draft.start)
        at = len(self.items)
        for i in range(lo, len(self.items)):
            item = self.items[i]
            if item is draft.end:
                at = i
                break
            if isinstance(item, Part) and item.role == "user":
                at = i
                break
        parts = []
        for text in dict.fromkeys(new):
            self.system_seen.add(text)
            digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
            parts.append(
                Part(
                    uid=f"{self.uid}:system:{digest}",
                    session_uid=self.uid,
                    seq=0,
                    role="system",
                    kind="system",
                    text=text,
                    message_id=msg_id,
                    ts=ts,
                )
            )
        self.items[at:at] = parts

    # -- compaction ----------------------------------------------------------------------------------

    def after_message(self, info: Info, mark: Mark) -> None:
        """Move the history start once a compaction summary completed."""
        if info.get("role") != "assistant" or info.get("summary") is not True or info.get("error"):
            return
        parent = as_str(info.get("parentID"))
        compaction = self.compactions.get(parent) if parent else None
        if compaction is None:
            self.start = mark
            return
        tail = as_str(compaction.get("tail_start_id"))
        start = self.message_marks.get(tail) if tail else None
        self.start = start or self.message_marks[str(parent)]

    # -- result --------------------------------------------------------------------------------------

    def finish(self) -> ParsedSession:
        parts = self.number()
        calls = [d.call for d in self.calls]
        for index, draft in enumerate(self.calls):
            call = draft.call
            call.prompt_start = draft.start.seq
            call.prompt_end = draft.end.seq
            nxt = calls[index + 1] if index + 1 < len(calls) else None
            same_model = nxt is None or (nxt.provider, nxt.model) == (call.provider, call.model)
            _apply_usage(call, draft.tokens, same_model)
        # Usage rules above look at the route (providerID); the store groups calls by vendor.
        for call in calls:
            route_to_vendor(call)
        return ParsedSession(self.session, calls, parts)


def _tokens_missing(tokens: dict[str, Any] | None) -> bool:
    if not tokens:
        return True
    counts = usage_counts(tokens)
    return counts is not None and is_missing(*counts[:5])


def _split_steps(parts: list[RawPart]) -> list[tuple[list[RawPart], RawPart | None]]:
    """Parts grouped per step: a `step-start` opens a group, its `step-finish` closes it."""
    groups: list[tuple[list[RawPart], RawPart | None]] = []
    current: list[RawPart] = []
    finish: RawPart | None = None
    started = False
    for part in parts:
        kind = part.get("type")
        if kind == "step-start":
            if started:
                groups.append((current, finish))
                current, finish = [], None
            # Parts before the first step-start (none in practice) belong to the first step.
            started = True
        elif kind == "step-finish":
            if finish is not None:
                # Two finishes without a start between them: each is its own step.
                groups.append((current, finish))
                current = []
            finish, started = part, True
        else:
            current.append(part)
    if started or current or not groups:
        groups.append((current, finish))
    return groups


def _first_time(parts: Iterable[RawPart]) -> datetime | None:
    for part in parts:
        times = part.get("time")
        if part.get("type") == "tool" and isinstance(part.get("state"), dict):
            times = part["state"].get("time")
        if isinstance(times, dict) and times.get("start") is not None:
            return ms_to_datetime(times.get("start"))
    return None


def reasoning_apart(tokens: dict[str, Any], provider: str | None) -> bool:
    """True when `reasoning` is reported apart from `output` (formats.md 2.4 and 5.1)."""
    reasoning = as_int(tokens.get("reasoning")) or 0
    if reasoning <= 0:
        return False
    output = as_int(tokens.get("output")) or 0
    cache = obj(tokens.get("cache"))
    total = as_int(tokens.get("total"))
    if total is not None:
        parts = (as_int(tokens.get("input")) or 0) + output + reasoning
        parts += (as_int(cache.get("read")) or 0) + (as_int(cache.get("write")) or 0)
        return total == parts
    # Without a total: reasoning larger than output cannot be a subset of it.
    return reasoning > output or provider in _REASONING_APART


def _input_may_include_cache(call: Call, tokens: dict[str, Any]) -> bool:
    if "total" in tokens or not call.cache_read or call.ts is None or call.ts >= INPUT_UNCACHED_SINCE:
        return False
    provider, model = call.provider or "", (call.model or "").lower()
    return provider not in _ANTHROPIC_LIKE and not (provider == "opencode" and "claude" in model)


def usage_counts(tokens: dict[str, Any]) -> tuple[int | None, ...] | None:
    """(input, output, reasoning, cache read, cache write, total) of an OpenCode `tokens` object, None
    when one is not a count (`calib.core.usage.token_counts`)."""
    cache = tokens.get("cache")
    if cache is not None and not isinstance(cache, dict):
        return None
    cache = cache or {}
    return token_counts(
        tokens.get("input"),
        tokens.get("output"),
        tokens.get("reasoning"),
        cache.get("read"),
        cache.get("write"),
        tokens.get("total"),
    )


def _apply_usage(call: Call, tokens: dict[str, Any] | None, same_model_next: bool) -> None:
    status: UsageStatus = "ok"
    raw = dict(call.usage_raw or {})
    if tokens is not None:
        raw["tokens"] = tokens
    call.usage_raw = raw or None
    if tokens is None:
        call.usage_status = "missing"
        return
    counts = usage_counts(tokens)
    if counts is None:
        call.usage_status = INVALID
        return
    call.input, call.output, call.reasoning, call.cache_read, call.cache_write, call.total = counts
    if is_missing(*counts[:5]):
        call.usage_status = "missing"
        return
    if _input_may_include_cache(call, tokens):
        status = "suspect"
    call.usage_status = status
    call.ctx = context_tokens("anthropic", call.input or 0, call.cache_read, call.cache_write)
    resent = same_model_next and reasoning_apart(tokens, call.provider)
    call.carry = carried_tokens("anthropic", call.output or 0, call.reasoning, reasoning_resent=resent)


def build_session(session: Session, messages: list[tuple[Info, list[RawPart]]]) -> ParsedSession:
    """Calls and parts of one session from its messages in conversation order."""
    builder = _Builder(session)
    for info, parts in messages:
        mark = builder.mark()
        msg_id = str(info.get("id"))
        builder.message_marks[msg_id] = mark
        role = info.get("role")
        if role == "user":
            builder.user(info, parts)
        elif role == "assistant":
            builder.assistant(info, parts)
        builder.after_message(info, mark)
    return builder.finish()


def from_message_v1(message: dict[str, Any]) -> tuple[Info, list[RawPart]]:
    """A MessageV1 (the earliest per-project tree: inline parts, usage in metadata) as MessageV2 info and parts."""
    meta = obj(message.get("metadata"))
    assistant = obj(meta.get("assistant"))
    tools = obj(meta.get("tool"))
    msg_id = str(message.get("id"))
    info: Info = {
        "id": msg_id,
        "sessionID": meta.get("sessionID"),
        "role": message.get("role"),
        "time": meta.get("time") or {},
        "error": meta.get("error"),
    }
    if message.get("role") == "assistant":
        info.update(
            modelID=assistant.get("modelID"),
            providerID=assistant.get("providerID"),
            path=assistant.get("path"),
            cost=assistant.get("cost"),
            summary=assistant.get("summary"),
            tokens=assistant.get("tokens"),
            system=assistant.get("system"),
        )
    parts: list[RawPart] = []
    for index, raw in enumerate(message.get("parts") or []):
        if not isinstance(raw, dict):
            continue
        pid = f"{msg_id}:{index}"
        kind = raw.get("type")
        if kind in ("text", "reasoning"):
            parts.append({"id": pid, "type": kind, "text": raw.get("text") or ""})
        elif kind == "file":
            parts.append({"id": pid, "type": "file", "mime": raw.get("mediaType"), "url": raw.get("url")})
        elif kind == "tool-invocation":
            inv = obj(raw.get("toolInvocation"))
            call_id = str(inv.get("toolCallId") or pid)
            tool_meta = obj(tools.get(call_id))
            done = inv.get("state") == "result"
            state: dict[str, Any] = {
                "status": "completed" if done else "pending",
                "input": inv.get("args"),
                "time": tool_meta.get("time") or {},
            }
            if done:
                state["output"] = inv.get("result") if isinstance(inv.get("result"), str) else ""
            parts.append(
                {"id": pid, "type": "tool", "callID": call_id, "tool": inv.get("toolName"), "state": state}
            )
        # step-start is dropped on purpose: MessageV1 usage is per message, so the message is one call.
    return info, parts


def message_sort_key(info: Info) -> tuple[int, str]:
    """Conversation order: creation time, then the time-ordered id (ids alone wrap every ~795 days)."""
    created = as_int(obj(info.get("time")).get("created"))
    return (created or 0, str(info.get("id") or ""))


def load_json(data: bytes | str) -> Any:
    """Parse JSON bytes (orjson: several times faster than the standard library on large trees)."""
    return orjson.loads(data)
