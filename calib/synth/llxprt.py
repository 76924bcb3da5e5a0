"""Write synthetic sessions as llxprt-code session recordings, with or without the token-usage log.

Layouts (`calib.importers.llxprt` documents the format facts and their sources):

- `llxprt-chats-usage` (the 0.11 nightlies): `out/.local/state/llxprt-code/tmp/<sha256 of the project
  root>/chats/session-<YYYY-MM-DDTHH-MM-SS>-<first 12 chars of the id>.jsonl` and, beside it,
  `token-usage/<sessionId>.jsonl`;
- `llxprt-chats` (v0.10.0): the recording alone, in the same place. (v0.9.x wrote under `~/.llxprt` and
  stamped no model on ai contents, so its Anthropic prompt counts, which left the cache out, are
  never targets: nothing of it could round-trip.)

The recording: `session_start` (provider as llxprt names it: `gemini` for Google; `cwd` only in the
usage layout, as newer clients write it), in the usage layout a `session_metadata` title (neither is in
v0.10.0), then per step the input contents and the ai content (stamped with its model), each an
envelope `{v: 1, seq, ts, type, payload}`. A turn's user message is a human content stamped with the
turn id and prompt id minted for its first send; the tool results of a step are one tool content
stamped with the turn id of the step's own ai content (an id already on a content wins in llxprt), so
only the prompt id and the count join those sends to their token-usage records. The ai content holds
`thinking` (the reasoning text), `text` and `tool_call` blocks, and `metadata.usage` =
{promptTokens: ctx, completionTokens, totalTokens}: completion is output + reasoning except for
Google, whose candidates count leaves thoughts out (then total adds them). A step without usage gets
no `usage`, and no token-usage record. A compacted step (always the first of a turn) is preceded by a
`compressed` record whose summary is one ai text block.

The token-usage log: per step with usage one `turn` record (schema 1): `actual_prompt_tokens` = ctx,
`cached_tokens` = `cache_read_tokens` = cache reads, `cache_write_tokens` (Anthropic),
`output_tokens` = completion, `reasoning_tokens` (not for Anthropic, whose API does not report it),
an `estimated_tokens` of the agent's own (within -25%..+15% of ctx, from the step id), and every
seventh step first a failed attempt of the same turn with no provider count. A `compression` record
follows each compaction.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.synth._common import epoch_ms, iso_ms
from calib.synth.model import Step, SynthSession, Usage

LAYOUTS = ("llxprt-chats-usage", "llxprt-chats")
_PROVIDERS = {"google": "gemini"}
_ESTIMATORS = {"anthropic": "anthropic-char", "openai": "openai-tiktoken"}
_RETRY_EVERY = 7


def _uid(session: SynthSession, *names: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(("calib-synth-llxprt", session.id, *names))))


def _turn_id(session: SynthSession, *names: str) -> str:
    return "turn_" + _uid(session, "turn", *names)


def _completion(session: SynthSession, usage: Usage) -> int:
    """llxprt's completionTokens: Gemini's candidates leave thoughts out; the others fold them in."""
    return usage.output if session.provider == "google" else usage.output + usage.reasoning


class _Writer:
    """The lines of one session's recording and token-usage log."""

    def __init__(self, session: SynthSession, with_log: bool) -> None:
        self.session = session
        self.with_log = with_log
        self.lines: list[dict[str, Any]] = []
        self.usage_lines: list[dict[str, Any]] = []
        self.seq = 0
        self.steps = 0
        self.provider = _PROVIDERS.get(session.provider, session.provider)

    def line(self, ts: datetime, kind: str, payload: dict[str, Any]) -> None:
        self.seq += 1
        self.lines.append({"v": 1, "seq": self.seq, "ts": iso_ms(ts), "type": kind, "payload": payload})

    def content(self, ts: datetime, speaker: str, blocks: list[dict[str, Any]], meta: dict[str, Any]) -> None:
        self.line(ts, "content", {"content": {"speaker": speaker, "blocks": blocks, "metadata": meta}})

    def start(self) -> None:
        s = self.session
        self.line(
            s.started_at,
            "session_start",
            {
                "sessionId": s.id,
                "projectHash": hashlib.sha256(s.project_dir.encode()).hexdigest(),
                "workspaceDirs": [s.project_dir],
                **({"cwd": s.project_dir} if self.with_log else {}),
                "provider": self.provider,
                "model": s.model,
                "startTime": iso_ms(s.started_at),
            },
        )
        if self.with_log:  # titles and cwd came after v0.10.0, as did the token-usage log
            self.line(s.started_at, "session_metadata", {"title": s.title})

    def _thinking(self, text: str) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "thinking", "thought": text, "sourceField": "thinking"}
        if self.session.provider == "anthropic":
            block["signature"] = hashlib.sha256(text.encode()).hexdigest()[:48]
        elif self.session.provider == "openai":
            block["sourceField"] = "reasoning_content"
        else:
            block["sourceField"] = "thought"
        return block

    def ai(self, step: Step, turn_id: str) -> None:
        s = self.session
        blocks: list[dict[str, Any]] = []
        if step.reasoning:
            blocks.append(self._thinking(step.reasoning))
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        for tool in step.tools:
            blocks.append(
                {
                    "type": "tool_call",
                    "id": tool.call_id,
                    "name": tool.name,
                    "parameters": _args(tool.args_json),
                }
            )
        meta: dict[str, Any] = {"timestamp": epoch_ms(step.ts), "turnId": turn_id, "model": s.model}
        if step.usage is not None:
            completion = _completion(s, step.usage)
            total = step.usage.ctx + step.usage.output + step.usage.reasoning
            meta["usage"] = {
                "promptTokens": step.usage.ctx,
                "completionTokens": completion,
                "totalTokens": total,
            }
        meta["id"] = _uid(s, step.id, "response")
        self.content(step.ts, "ai", blocks, meta)

    def tool_results(self, step: Step, turn_id: str, prompt_id: str) -> None:
        blocks = []
        for tool in step.tools:
            block: dict[str, Any] = {
                "type": "tool_response",
                "callId": tool.call_id,
                "toolName": tool.name,
                "result": tool.output,
            }
            if tool.is_error:
                block["error"] = tool.output.splitlines()[0] if tool.output else "error"
            blocks.append(block)
        done = step.ts + timedelta(milliseconds=40)
        self.content(
            done, "tool", blocks, {"timestamp": epoch_ms(done), "turnId": turn_id, "promptId": prompt_id}
        )

    def turn_record(
        self, step: Step, prompt_id: str, turn_id: str, position: tuple[int | None, int | None]
    ) -> None:
        usage = step.usage
        if usage is None or not self.with_log:
            return
        s = self.session
        self.steps += 1
        digest = int(hashlib.sha256(step.id.encode()).hexdigest()[:8], 16)
        estimated = usage.ctx * (750 + digest % 401) // 1000
        base: dict[str, Any] = {
            "record_type": "turn",
            "schema_version": 1,
            "ts": iso_ms(step.ts),
            "prompt_id": prompt_id,
            "provider": self.provider,
            "model": s.model,
            "estimated_tokens": estimated,
            "estimator": _ESTIMATORS.get(s.provider, "core-fallback"),
            "tiktoken_tokens": estimated if s.provider == "openai" else None,
            "tiktoken_estimation_failed": False,
            "session_id": s.id,
            "turn_id": turn_id,
            "user_turn": position[0],
            "step": position[1],
            "runtime_id": _uid(s, "runtime"),
            "parent_runtime_id": None,
            "subagent_name": None,
        }
        if self.steps % _RETRY_EVERY == 0:
            failed = {
                **base,
                "ts": iso_ms(step.ts - timedelta(seconds=2)),
                "actual_prompt_tokens": 0,
                "cached_tokens": 0,
                "effective_actual_tokens": 0,
                "attempt_index": 0,
                "attempt_outcome": "error",
                "http_status": 529,
            }
            self.usage_lines.append(failed)
        record = {
            **base,
            "actual_prompt_tokens": usage.ctx,
            "cached_tokens": usage.cache_read,
            "effective_actual_tokens": max(0, usage.ctx - usage.cache_read),
            "output_tokens": _completion(s, usage),
            "cache_read_tokens": usage.cache_read,
            "total_tokens": usage.ctx + usage.output + usage.reasoning,
            "attempt_index": 1 if self.steps % _RETRY_EVERY == 0 else 0,
            "attempt_outcome": "success",
        }
        if s.provider == "anthropic":
            record["cache_write_tokens"] = usage.cache_write
        else:
            record["reasoning_tokens"] = usage.reasoning
        self.usage_lines.append(record)

    def compression(self, step: Step, items: int, before: int) -> None:
        s = self.session
        summary = {
            "speaker": "ai",
            "blocks": [{"type": "text", "text": step.summary}],
            "metadata": {"isSummary": True, "timestamp": epoch_ms(step.ts)},
        }
        at = step.ts - timedelta(milliseconds=300)
        self.line(at, "compressed", {"summary": summary, "itemsCompressed": items})
        if self.with_log:
            self.usage_lines.append(
                {
                    "record_type": "compression",
                    "schema_version": 1,
                    "ts": iso_ms(at),
                    "session_id": s.id,
                    "turn_id": None,
                    "tokens_before": before,
                    "tokens_after": len(step.summary) // 4,
                    "compression_model": s.model,
                    "compression_provider": self.provider,
                }
            )

    def write(self) -> None:
        s = self.session
        self.start()
        items = 0
        last_ctx = 0
        position: tuple[int | None, int | None] = (None, None)
        for ti, turn in enumerate(s.turns):
            prompt_id = f"{s.id}########{ti}"
            for si, step in enumerate(turn.steps):
                send_turn = _turn_id(s, step.id, "send")
                if si == 0:
                    if step.compacted:
                        self.compression(step, items, last_ctx)
                        items = 1
                    meta = {"timestamp": epoch_ms(turn.ts), "turnId": send_turn, "promptId": prompt_id}
                    self.content(step.ts, "human", [{"type": "text", "text": turn.user_text}], meta)
                    items += 1
                own = _turn_id(s, step.id, "ai")
                self.turn_record(step, prompt_id, send_turn, position)
                self.ai(step, own)
                items += 1
                if step.tools:
                    self.tool_results(step, own, prompt_id)
                    items += 1
                position = (ti, si)
                if step.usage is not None:
                    last_ctx = step.usage.ctx


def _args(args_json: str) -> Any:
    """The arguments object of a tool call (its part text is their compact JSON)."""
    return json.loads(args_json)


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session in `layout` under `out` (laid out as a home folder); returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown llxprt layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    with_log = layout == "llxprt-chats-usage"
    base = Path(out) / ".local" / "state" / "llxprt-code" / "tmp"
    written: list[Path] = []
    for session in sessions:
        temp = base / hashlib.sha256(session.project_dir.encode()).hexdigest()
        writer = _Writer(session, with_log)
        writer.write()
        first = (
            session.turns[0].steps[0].ts if session.turns and session.turns[0].steps else session.started_at
        )
        chats = temp / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        path = chats / f"session-{first:%Y-%m-%dT%H-%M-%S}-{session.id[:12]}.jsonl"
        path.write_text("".join(compact_json(r) + "\n" for r in writer.lines), encoding="utf-8")
        written.append(path)
        if with_log:
            log = temp / "token-usage" / f"{session.id}.jsonl"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("".join(compact_json(r) + "\n" for r in writer.usage_lines), encoding="utf-8")
            written.append(log)
    return written
