"""Write synthetic sessions in Dexto's real on-disk layout: its SQLite database, and its session logs.

Layouts:
- `dexto-db`: `.dexto/database/<agent>.db` as Dexto >= 1.5.5 writes it. Each step is one assistant
  message whose `tokenUsage` is that call's usage: `inputTokens` is the uncached part, with
  `cacheReadTokens`, `cacheWriteTokens`, `outputTokens` (AI-SDK v5: including reasoning, except for
  Google, which reports it apart), `reasoningTokens` and `totalTokens`.
- `dexto-db-legacy`: the Dexto <= 1.3 shape: no cache fields, no reasoning text, no `assistantOutput`,
  and usage summed over each turn onto its last assistant message (`inputTokens` then excludes the
  cache for Anthropic-style models, as the AI SDK reported it, and includes it otherwise).
- `dexto-log`: the `dexto-db` database plus `.dexto/logs/<agent>/<sessionId>.log`, whose
  `Context estimation accuracy` lines are computed as Dexto computes them: after a call with usage,
  `lastInput + lastOutput + estimate(messages added since that call)`; before any such call and after
  a compaction, the pure estimate of the visible history (plus `truth["static_overhead"]` when the
  generator recorded one, standing in for the system prompt and tools that Dexto also estimates).
  The estimate of a message counts only its content parts, `round(len/4)` of each text in UTF-16
  code units, as JavaScript measures it.

Events: a pruned tool output gets `compactedAt`; a compacted step is preceded by a summary message
(`metadata.isSummary`) whose `originalMessageCount` keeps the current turn (its user message and
earlier steps), so after the summary the model sees the summary and the current turn, as Dexto's
compaction keeps the latest turns. Both are written in every layout so that a round trip keeps them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import PRUNED_TEXT, compact_json
from calib.importers.dexto.db import is_anthropic
from calib.synth._common import epoch_ms, iso_ms, wal_database
from calib.synth.model import Step, SynthSession, Usage

LAYOUTS = ("dexto-db", "dexto-db-legacy", "dexto-log")
AGENT_ID = "default-agent"

# Dexto's SQLiteStore tables (packages/storage/src/database/sqlite-store.ts).
_DDL = (
    "CREATE TABLE IF NOT EXISTS kv_store (key TEXT PRIMARY KEY, value TEXT NOT NULL, "
    "created_at INTEGER DEFAULT (strftime('%s', 'now')), updated_at INTEGER DEFAULT (strftime('%s', 'now')))",
    "CREATE TABLE IF NOT EXISTS list_store (key TEXT NOT NULL, value TEXT NOT NULL, sequence INTEGER, "
    "created_at INTEGER DEFAULT (strftime('%s', 'now')), PRIMARY KEY (key, sequence))",
    "CREATE INDEX IF NOT EXISTS idx_kv_store_key ON kv_store(key)",
    "CREATE INDEX IF NOT EXISTS idx_list_store_key ON list_store(key)",
    "CREATE INDEX IF NOT EXISTS idx_list_store_sequence ON list_store(key, sequence)",
)
_NS = uuid.UUID("5f0b8c52-6a43-4d55-9d0e-3d2a7c1e9b10")


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write `sessions` under `out/.dexto` in `layout`; returns the files written (database first)."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown Dexto layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    legacy = layout == "dexto-db-legacy"
    db = out / ".dexto" / "database" / f"{AGENT_ID}.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    rendered = [_render(s, legacy=legacy) for s in sessions]
    with wal_database(db, _DDL) as con:
        for r in rendered:
            key = f"messages:{r.session.id}"
            con.execute("DELETE FROM list_store WHERE key = ?", [key])
            con.executemany(
                "INSERT INTO list_store (key, value, sequence, created_at) VALUES (?, ?, ?, ?)",
                [
                    (key, compact_json(m), n, int(m["timestamp"]) // 1000)
                    for n, m in enumerate(r.messages, start=1)
                ],
            )
            created = epoch_ms(r.session.started_at) // 1000
            con.execute(
                "INSERT OR REPLACE INTO kv_store (key, value, created_at, updated_at) VALUES (?, ?, ?, ?)",
                [f"session:{r.session.id}", compact_json(r.info), created, r.info["lastActivity"] // 1000],
            )
    written = [db]
    if layout == "dexto-log":
        for r in rendered:
            written.append(_write_log(out, r))
    return written


# -- rendering ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Estimate:
    ts: datetime
    estimated: int
    actual: int


@dataclass(slots=True)
class _Rendered:
    session: SynthSession
    messages: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    estimates: list[_Estimate] = field(default_factory=list)


def _id(session: SynthSession, *parts: str) -> str:
    return str(uuid.uuid5(_NS, "/".join((session.id, *parts))))


def _is_google(provider: str, model: str) -> bool:
    return provider == "google" or "gemini" in model.lower()


def output_tokens(session: SynthSession, usage: Usage) -> int:
    """Dexto's `outputTokens` for a call: AI-SDK v5 folds reasoning in, except for Google."""
    if _is_google(session.provider, session.model):
        return usage.output
    return usage.output + usage.reasoning


def token_usage(session: SynthSession, usage: Usage) -> dict[str, int]:
    """The `tokenUsage` Dexto >= 1.5.5 stores for one call."""
    out = output_tokens(session, usage)
    return {
        "inputTokens": usage.uncached,
        "outputTokens": out,
        "reasoningTokens": usage.reasoning,
        "totalTokens": usage.ctx + out,
        "cacheReadTokens": usage.cache_read,
        "cacheWriteTokens": usage.cache_write,
    }


def legacy_token_usage(session: SynthSession, usages: list[Usage]) -> dict[str, int]:
    """The `tokenUsage` Dexto <= 1.3 stored on a turn's last message: the sum over its calls, no cache."""
    anthropic = is_anthropic(session.provider, session.model)
    inp = sum(u.uncached if anthropic else u.ctx for u in usages)
    out = sum(output_tokens(session, u) for u in usages)
    return {
        "inputTokens": inp,
        "outputTokens": out,
        "reasoningTokens": sum(u.reasoning for u in usages),
        "totalTokens": inp + out,
    }


def js_round_quarter(length: int) -> int:
    """`Math.round(length / 4)` (halves round up, unlike Python's `round`)."""
    return (length + 2) // 4


def estimate_text(text: str) -> int:
    """Dexto's `estimateStringTokens`: JavaScript string length (UTF-16 units) over four, rounded."""
    return js_round_quarter(len(text.encode("utf-16-le")) // 2) if text else 0


def estimate_messages(messages: list[dict[str, Any]]) -> int:
    """Dexto's `estimateMessagesTokens`: content parts only (text by length, media 1,000 each)."""
    total = 0
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            kind = part.get("type")
            if kind == "text":
                total += estimate_text(part.get("text") or "")
            elif kind in ("image", "file"):
                total += 1000
    return total


def _visible(messages: list[dict[str, Any]], at_ms: int) -> list[dict[str, Any]]:
    """What Dexto sends at `at_ms`: history from the latest summary on, pruned outputs as placeholders."""
    summary = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("metadata", {}).get("isSummary")),
        None,
    )
    if summary is None:
        view = list(messages)
    else:
        start = messages[summary]["metadata"]["originalMessageCount"]
        view = [messages[summary], *messages[start:summary], *messages[summary + 1 :]]
    out = []
    for m in view:
        if m.get("role") == "tool" and m.get("compactedAt") is not None and m["compactedAt"] <= at_ms:
            m = {**m, "content": [{"type": "text", "text": PRUNED_TEXT}]}
        out.append(m)
    return out


def _render(session: SynthSession, *, legacy: bool) -> _Rendered:
    r = _Rendered(session)
    msgs = r.messages
    steps = session.steps()
    last_ts = max([s.ts for s in steps] + [t.ts for t in session.turns] + [session.started_at])
    overhead = int(session.truth.get("static_overhead", 0) or 0)
    # Dexto's in-memory tracking: (lastInput, lastOutput, message count after that call), or None.
    tracking: tuple[int, int, int] | None = None
    totals = dict.fromkeys(
        (
            "inputTokens",
            "outputTokens",
            "reasoningTokens",
            "cacheReadTokens",
            "cacheWriteTokens",
            "totalTokens",
        ),
        0,
    )
    for turn in session.turns:
        turn_start = len(msgs)
        msgs.append(
            {
                "id": turn.id,
                "role": "user",
                "content": [{"type": "text", "text": turn.user_text}],
                "timestamp": epoch_ms(turn.ts),
            }
        )
        turn_usages: list[Usage] = []
        for index, step in enumerate(turn.steps):
            at = epoch_ms(step.ts)
            if step.compacted:
                msgs.append(
                    {
                        "id": _id(session, step.id, "summary"),
                        "role": "assistant",
                        "content": [{"type": "text", "text": step.summary}],
                        "timestamp": at,
                        "metadata": {
                            "isSummary": True,
                            "summarizedAt": at,
                            "originalMessageCount": turn_start,
                            "originalFirstTimestamp": msgs[0]["timestamp"],
                            "originalLastTimestamp": msgs[max(turn_start - 1, 0)]["timestamp"],
                        },
                    }
                )
                tracking = None
            if step.usage is not None:
                if tracking is not None:
                    last_input, last_output, count = tracking
                    estimated = last_input + last_output + estimate_messages(msgs[count:])
                else:
                    estimated = overhead + estimate_messages(_visible(msgs, at))
                r.estimates.append(_Estimate(step.ts, estimated, step.usage.ctx))
            last_of_turn = index == len(turn.steps) - 1
            msgs.append(_assistant(session, step, legacy, turn_usages, last_of_turn))
            if step.usage is not None:
                tracking = (step.usage.ctx, output_tokens(session, step.usage), len(msgs))
                for k, v in token_usage(session, step.usage).items():
                    totals[k] += v
            for tool in step.tools:
                message: dict[str, Any] = {
                    "id": _id(session, step.id, tool.call_id),
                    "role": "tool",
                    "content": [{"type": "text", "text": tool.output}],
                    "toolCallId": tool.call_id,
                    "name": tool.name,
                    "success": not tool.is_error,
                    "timestamp": at,
                }
                if tool.pruned:
                    message["compactedAt"] = epoch_ms(tool.pruned_at or last_ts)
                msgs.append(message)
    r.info = {
        "id": session.id,
        "createdAt": epoch_ms(session.started_at),
        "lastActivity": epoch_ms(last_ts),
        "messageCount": len(msgs),
        "metadata": {"title": session.title},
    }
    if not legacy:
        r.info["tokenUsage"] = totals
    return r


def _assistant(
    session: SynthSession, step: Step, legacy: bool, turn_usages: list[Usage], last_of_turn: bool
) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "id": step.id,
        "role": "assistant",
        "content": [{"type": "text", "text": step.text}] if step.text else None,
        "timestamp": epoch_ms(step.ts),
        "provider": session.provider,
        "model": session.model,
    }
    if step.tools:
        msg["toolCalls"] = [
            {"id": t.call_id, "type": "function", "function": {"name": t.name, "arguments": t.args_json}}
            for t in step.tools
        ]
    if legacy:
        if step.usage is not None:
            turn_usages.append(step.usage)
        if last_of_turn and turn_usages:
            msg["tokenUsage"] = legacy_token_usage(session, turn_usages)
        return msg
    if step.reasoning:
        msg["reasoning"] = step.reasoning
    if step.usage is not None:
        msg["tokenUsage"] = token_usage(session, step.usage)
    msg["assistantOutput"] = (
        {"status": "stopped", "reason": step.error} if step.error else {"status": "complete"}
    )
    return msg


# -- logs --------------------------------------------------------------------------------------------


def _write_log(out: Path, r: _Rendered) -> Path:
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in r.session.id)
    path = out / ".dexto" / "logs" / AGENT_ID / f"{safe}.log"
    path.parent.mkdir(parents=True, exist_ok=True)

    def line(level: str, message: str, ts: datetime, component: str, **extra: Any) -> str:
        entry = {
            "level": level,
            "message": message,
            "timestamp": iso_ms(ts),
            "component": component,
            "agentId": AGENT_ID,
            "sessionId": r.session.id,
            **extra,
        }
        return compact_json(entry) + "\n"

    lines = [line("info", f"Session {r.session.id} started", r.session.started_at, "session")]
    for e in r.estimates:
        diff = e.estimated - e.actual
        pct = f"{diff / e.actual * 100:.1f}" if e.actual > 0 else "0.0"
        lines.append(
            line(
                "info",
                f"Context estimation accuracy: estimated={e.estimated}, actual={e.actual}, error={diff} ({pct}%)",
                e.ts,
                "executor",
            )
        )
        lines.append(
            line("info", "LLM response complete", e.ts, "llm", context={"usage": {"actual": e.actual}})
        )
    path.write_text("".join(lines), encoding="utf-8")
    return path
