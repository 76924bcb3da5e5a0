"""Sessions whose provider counts a known multiple of what `chars4` estimates, for the report's figures."""

from __future__ import annotations

from datetime import datetime, timedelta

from calib.core.records import Call, ParsedSession, Part, Session

T0 = datetime(2026, 3, 1, 9, 0, 0)
# A tool output of 2,000 ASCII characters: `chars4` counts it as 500 tokens.
OUTPUT = "\n".join(f"{i:04d} worker finished job {i:04d} in queue eu-west-1 ok" for i in range(40))[:2000]
CHARS4_TOKENS = 500


def biased_session(
    uid: str,
    *,
    provider: str = "openai",
    model: str = "m1",
    calls: int = 12,
    factor: float = 2.0,
    start: int = 3000,
) -> ParsedSession:
    """`calls` calls of one model; before each call after the first the same tool output is appended and
    the provider counts `factor` times what `chars4` estimates for it (carry is 0, so the context grows
    by exactly that). `chars4`'s predicted context is then low by (factor - 1) * 500 tokens on every
    scored call: `factor` > 1 under-predicts, < 1 over-predicts."""
    session = Session(uid, "test", uid, f"/logs/{uid}.jsonl", "test")
    parts = [Part(f"{uid}:u0", uid, 0, "user", "user_text", "run the jobs please")]
    rows: list[Call] = []
    ctx = start
    seq = 1
    for k in range(calls):
        if k:
            parts.append(Part(f"{uid}:t{k}", uid, seq, "tool", "tool_result", OUTPUT))
            seq += 1
            ctx += round(CHARS4_TOKENS * factor)
        call_uid = f"{uid}:c{k}"
        rows.append(
            Call(
                call_uid,
                uid,
                k,
                0,
                seq,
                "ok",
                "openai",
                ts=T0 + timedelta(minutes=k),
                provider=provider,
                model=model,
                input=ctx,
                output=0,
                ctx=ctx,
                carry=0,
            )
        )
        parts.append(Part(f"{uid}:a{k}", uid, seq, "assistant", "assistant_text", "ok", call_uid=call_uid))
        seq += 1
    return ParsedSession(session, rows, parts)
