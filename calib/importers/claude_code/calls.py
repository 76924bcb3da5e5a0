"""Assistant lines grouped into API calls, with the usage each call recorded (formats.md 8.3-8.4).

- One call per `(message.id, requestId)`: every line of a call carries one content block and a copy of
  the usage. Input and cache fields are the same on every line; `output_tokens` grows while the
  stream runs, so the call's output is the group's maximum and `usage_raw` is the usage of the (first)
  line holding it. The same key seen again anywhere in the file is the same call, counted once.
- Not calls: lines whose `message.model` is `<synthetic>` (text Claude Code wrote itself, such as "No
  response requested.", no requestId and zero usage) and API-error lines (`isApiErrorMessage`: the
  error shown to the user). They yield no parts either: neither was produced by the model, and both
  are texts the user saw, not turns of the request history. A line without `message.id` is not a call.
- ctx = input + cache_creation + cache_read; carry = output (thinking included, and re-sent).
  All-zero usage (a stream that lost it) is `missing`: no ctx, no carry.
- Streaming placeholders: Claude Code 2.0.x-2.1.6x often wrote the count of the first stream event
  (1..~30) on every line of a call and never the final one. Such a call has no `stop_reason` on any
  of its lines (the final event that carries it was never written) and records fewer output tokens
  than its own output can have cost: `output < ceil(chars / 8) + 30 * tool_uses`, where chars counts
  the text, thinking and tool-input JSON of its lines. Every call of the shared fixtures that kept its
  `stop_reason` is at least 38 tokens above that floor (a tool_use there costs 73 tokens or more, text
  costs about a token per 1-4 characters); 919 of the 921 calls recording fewer than 32 are below it.
  Such a call is `output_placeholder`, its `carry` None (the store then takes what it carried from its
  output parts' text); `output` stays as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from calib.core.records import Call, UsageStatus
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts
from calib.importers.claude_code.content import output_chars
from calib.importers.common import timestamp

SYNTHETIC_MODEL = "<synthetic>"
# A tool_use block costs at least this many output tokens (73 or more in every finished fixture call).
TOOL_USE_FLOOR = 30
# Characters per output token can exceed 4 only for long runs; 8 keeps a wide margin.
CHARS_PER_TOKEN_CEILING = 8

CallKey = tuple[str, str]


@dataclass(slots=True)
class Group:
    """The lines of one call, and what they add up to."""

    key: CallKey
    first: int  # index (in the partition's records) of its first line
    ts: datetime | None
    model: str | None
    usage: dict[str, Any] | None = None
    output: int = -1
    stop: str | None = None
    chars: int = 0
    tools: int = 0
    lines: list[int] = field(default_factory=list)
    seen_uuids: set[str] = field(default_factory=set)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def call_key(record: dict[str, Any]) -> CallKey | None:
    """The `(message.id, requestId)` of an assistant line that records a call, else None."""
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    if message.get("model") == SYNTHETIC_MODEL or record.get("isApiErrorMessage"):
        return None
    mid = message.get("id")
    if not isinstance(mid, str) or not mid:
        return None
    rid = record.get("requestId")
    return mid, rid if isinstance(rid, str) else ""


def is_output_line(record: dict[str, Any]) -> bool:
    """True for an assistant line the model produced (not synthetic, not an API error)."""
    return call_key(record) is not None


def group_calls(records: list[tuple[int, dict[str, Any]]]) -> dict[CallKey, Group]:
    """Every call of a partition's records, keyed by `(message.id, requestId)`, in order of first line."""
    groups: dict[CallKey, Group] = {}
    for index, (_, record) in enumerate(records):
        if record.get("type") != "assistant":
            continue
        key = call_key(record)
        if key is None:
            continue
        message = record["message"]
        group = groups.get(key)
        if group is None:
            model = message.get("model")
            group = Group(
                key, index, timestamp(record.get("timestamp")), model if isinstance(model, str) else None
            )
            groups[key] = group
        group.lines.append(index)
        uid = record.get("uuid")
        if isinstance(uid, str):
            if uid in group.seen_uuids:
                continue  # the same line written twice
            group.seen_uuids.add(uid)
        usage = message.get("usage")
        if isinstance(usage, dict):
            out = _int(usage.get("output_tokens")) or 0
            if out > group.output:
                group.output = out
                group.usage = usage
        stop = message.get("stop_reason")
        if isinstance(stop, str) and stop:
            group.stop = stop
        chars, tools = output_chars(message.get("content"))
        group.chars += chars
        group.tools += tools
    return groups


def is_placeholder(group: Group, output: int) -> bool:
    """True when the recorded output is a streaming placeholder (see the module docstring)."""
    if group.stop is not None:
        return False
    floor = -(-group.chars // CHARS_PER_TOKEN_CEILING) + TOOL_USE_FLOOR * group.tools
    return output < floor


def make_call(group: Group, uid: str, session_uid: str, seq: int, prompt_start: int, prompt_end: int) -> Call:
    """The call record of a group, placed at `seq` with its prompt range."""
    usage = group.usage or {}
    counts = token_counts(
        usage.get("input_tokens"),
        usage.get("cache_creation_input_tokens"),
        usage.get("cache_read_input_tokens"),
        usage.get("output_tokens"),
    )
    input_, cache_write, cache_read, output = counts or (None, None, None, None)
    status: UsageStatus = "ok"
    ctx = carry = None
    placeholder = False
    if counts is None:
        status = INVALID
    elif not group.usage or is_missing(input_, cache_write, cache_read, output):
        status = "missing"
        input_ = cache_write = cache_read = output = None
    else:
        input_ = input_ or 0
        ctx = context_tokens("anthropic", input_, cache_read, cache_write)
        placeholder = is_placeholder(group, output or 0)
        carry = None if placeholder else carried_tokens("anthropic", output)
    return Call(
        uid=uid,
        session_uid=session_uid,
        seq=seq,
        prompt_start=prompt_start,
        prompt_end=prompt_end,
        usage_status=status,
        usage_style="anthropic",
        message_id=group.key[0],
        ts=group.ts,
        provider="anthropic",
        model=group.model,
        input=input_,
        output=output,
        reasoning=None,
        cache_read=cache_read,
        cache_write=cache_write,
        usage_raw=group.usage,
        ctx=ctx,
        carry=carry,
        finish=group.stop,
        output_placeholder=placeholder,
    )
