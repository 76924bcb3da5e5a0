"""Sessions whose appended content is of known kinds, shared by the report's tests."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from calib.core.records import Call, ParsedSession, Part, Session

T0 = datetime(2026, 2, 1, 10, 0, 0)

CODE = "\n".join(
    [
        "def total(items):",
        "    result = 0",
        "    for item in items:",
        "        if item.archived:",
        "            continue",
        "        result += item.amount",
        "    return result",
    ]
)
JSON_TEXT = json.dumps({"items": [{"id": i, "name": f"item-{i}", "amount": i * 3} for i in range(12)]})
CJK_TEXT = "按事件类型汇总的尝试次数不对，归档之后的数据还在统计里。请查一下并修复。"
LOG_TEXT = "\n".join(f"2026-02-01 10:00:{i:02d} worker started job {i} in queue eu" for i in range(6))
PROSE_TEXT = "Thanks, that looks right now. Please also update the changelog with a short note."


def chars4(text: str) -> int:
    """What the `chars4` estimator counts for `text`."""
    return (len(text) + 2) // 4


# (appended kind, text, delta the provider reports for it)
APPENDS = [
    ("tool_result", JSON_TEXT, round(chars4(JSON_TEXT) * 1.25)),
    ("tool_result", CODE, chars4(CODE) * 2),
    ("user_text", CJK_TEXT, chars4(CJK_TEXT) * 3),
    ("tool_result", LOG_TEXT, chars4(LOG_TEXT)),
    ("user_text", PROSE_TEXT, chars4(PROSE_TEXT) + 4),
]
EXPECTED_KINDS = ["json", "code", "cjk", "tool_output", "prose"]


def kinds_session(uid: str = "t:kinds") -> ParsedSession:
    """Six calls; before each call after the first, one part of a known content kind is appended and the
    provider counts `delta` for it (carry is 0, so ctx grows by exactly delta)."""
    session = Session(uid, "test", uid, "/x", "test")
    parts = [Part(f"{uid}:u0", uid, 0, "user", "user_text", "start the task please")]
    calls = []
    ctx = 3000
    seq = 1
    for k in range(len(APPENDS) + 1):
        if k:
            kind, text, delta = APPENDS[k - 1]
            role = "tool" if kind == "tool_result" else "user"
            parts.append(Part(f"{uid}:in{k}", uid, seq, role, kind, text))
            seq += 1
            ctx += delta
        _append_call(uid, k, seq, ctx, calls, parts)
        seq += 1
    return ParsedSession(session, calls, parts)


def _append_call(uid: str, k: int, seq: int, ctx: int, calls: list[Call], parts: list[Part]) -> None:
    """Call `k` (prompt `[0, seq)`, `ctx` tokens, nothing carried) and its one-word answer at `seq`."""
    call_uid = f"{uid}:c{k}"
    calls.append(
        Call(
            call_uid,
            uid,
            k,
            0,
            seq,
            "ok",
            "openai",
            ts=T0 + timedelta(minutes=k),
            provider="openai",
            model="m1",
            input=ctx,
            output=0,
            ctx=ctx,
            carry=0,
        )
    )
    parts.append(Part(f"{uid}:out{k}", uid, seq, "assistant", "assistant_text", "ok", call_uid=call_uid))


def unrecorded_session(
    uid: str = "t:unrecorded", jumps: tuple[int, ...] = (2000,), path: str = ""
) -> ParsedSession:
    """`kinds_session`, then one call per jump before which the log appends nothing, yet the provider
    counts `jump` more tokens (or, for a negative jump, fewer): the breaks found only from the count,
    `unrecorded` (the log lost what was sent) and `negative_delta`. The session's file is `path`
    (default `/logs/UID.jsonl`)."""
    parsed = kinds_session(uid)
    parsed.session.source_path = path or f"/logs/{uid}.jsonl"
    ctx = parsed.calls[-1].ctx or 0
    seq = max(p.seq for p in parsed.parts) + 1
    for jump in jumps:
        ctx += jump
        _append_call(uid, len(parsed.calls), seq, ctx, parsed.calls, parsed.parts)
        seq += 1
    return parsed
