"""Small sessions whose scoring figures are known by hand, shared by the scoring tests."""

from __future__ import annotations

from datetime import datetime, timedelta

from calib.core.records import Call, ParsedSession, Part, Session

T0 = datetime(2026, 1, 5, 9, 0, 0)


def call(uid: str, k: int, end: int, ctx: int, carry: int, **kw: object) -> Call:
    """Call `k` of session `uid` (prompt `[0, end)`), one minute after the previous one."""
    fields: dict = {"ts": T0 + timedelta(minutes=k), "provider": "openai", "model": "m1"}
    fields.update(kw)
    return Call(
        f"{uid}:c{k}", uid, k, 0, end, "ok", "openai", input=ctx, output=carry, ctx=ctx, carry=carry, **fields
    )


def basic(uid: str = "t:basic") -> ParsedSession:
    """Three calls; chars4 counts are exact multiples so every figure is known by hand."""
    s = Session(uid, "test", uid, "/x", "test")
    c = [f"{uid}:c{k}" for k in range(3)]
    parts = [
        Part(f"{uid}:p0", uid, 0, "user", "user_text", "a" * 40, message_id="m0"),  # 10
        Part(f"{uid}:p1", uid, 1, "assistant", "assistant_text", "b" * 80, call_uid=c[0]),  # 20
        Part(f"{uid}:p2", uid, 2, "assistant", "reasoning", "r" * 400, call_uid=c[0], resent=False),
        Part(f"{uid}:p3", uid, 3, "assistant", "tool_call", "x" * 8, call_uid=c[0]),  # 2
        Part(f"{uid}:p4", uid, 4, "tool", "tool_result", "y" * 400, message_id="m2"),  # 100
        Part(f"{uid}:p5", uid, 5, "tool", "tool_result", "z" * 200, message_id="m2"),  # 50
        Part(f"{uid}:p6", uid, 6, "assistant", "assistant_text", "c" * 40, call_uid=c[1]),  # 10
        Part(f"{uid}:p7", uid, 7, "user", "user_text", "u" * 100, message_id="m4"),  # 25
    ]
    calls = [
        call(uid, 0, 1, 1000, 20),
        call(uid, 1, 6, 1000 + 20 + 160, 10),
        call(uid, 2, 8, 1180 + 10 + 30, 5),
    ]
    return ParsedSession(s, calls, parts)


def chain(uid: str, *, subagent: bool = False) -> ParsedSession:
    """Three calls, each after one user message of 40 chars (10 chars4 tokens) and a 5% framing."""
    s = Session(uid, "test", uid, "/x", "test", is_subagent=subagent)
    parts, calls = [], []
    ctx = 2000
    for k in range(3):
        parts.append(Part(f"{uid}:u{k}", uid, 2 * k, "user", "user_text", "q" * 40))
        if k:
            ctx += 10 + 12  # previous carry + this message
        calls.append(call(uid, k, 2 * k + 1, ctx, 10))
        parts.append(
            Part(
                f"{uid}:a{k}", uid, 2 * k + 1, "assistant", "assistant_text", "w" * 40, call_uid=calls[-1].uid
            )
        )
    return ParsedSession(s, calls, parts)


def break_chain(reason: str, p: ParsedSession) -> None:
    """Break a `chain` session between its calls 1 and 2 for `reason` (or `compaction_summary`)."""
    last = p.calls[2]
    if reason == "missing_usage":
        last.usage_status = "turn_summed"
    elif reason == "error":
        last.error = "stream aborted"
    elif reason == "model_change":
        last.model = "m2"
    elif reason == "compaction":
        last.prompt_start = 2
    elif reason == "compaction_summary":
        p.parts[4].kind = "summary"
    elif reason == "rewound":
        last.prompt_end = 2
    elif reason == "pruned":
        # pruned, but the calls' times are unknown: the pruning cannot be placed between them
        p.parts[0].pruned_at = T0 + timedelta(minutes=1, seconds=30)
        p.parts[0].pruned_text = "[cleared]"
        last.ts = None
    elif reason == "masked":
        p.parts[4].text = "<tool_output_masked>see tool-outputs/x.txt</tool_output_masked>"
    elif reason == "unlogged_turn":
        # nothing appended after a call whose output is carried: the input that followed went unrecorded
        p.parts[4].resent = False
    elif reason == "unrecorded":
        # nothing appended nor carried, yet the context grew
        p.parts[4].resent = False
        p.calls[1].carry = p.calls[1].output = 0
        last.ctx = (last.ctx or 0) + 5000
    elif reason == "negative_delta":
        last.ctx = (p.calls[1].ctx or 0) - 500
