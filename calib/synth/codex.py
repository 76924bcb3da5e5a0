"""Write synthetic sessions as Codex CLI rollouts (formats.md section 9).

One file per session, `out/.codex/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDTHH-MM-SS>-<id>.jsonl`, each
line a `{timestamp, type, payload}` record as Codex 0.142 writes them:

- `session_meta` first, with the system prompt as `base_instructions.text`, cwd, originator, cli
  version "0.142.2", source and git;
- per turn: `event_msg/task_started`, `turn_context` (model), the user `message` item and its
  `event_msg/user_message` duplicate, all at `turn.ts`: the `task_started` line is where the importer
  starts a turn, so the previous turn's reasoning reads back pruned at exactly `turn.ts`, as
  `flatten` prunes it. Then per step its `reasoning` item (the text as one reasoning summary, no
  `encrypted_content`: the importer reads one summary back as exactly its text, and re-sends it within
  the turn as the "resent" policy does), an `event_msg/agent_message` duplicate and
  the assistant `message`, its `function_call`s and their `function_call_output`s, and its
  `event_msg/token_count` (at the step's time), then `task_complete`. No developer message is written:
  the session model has no text for one, so the truth could not include it.
- usage: `last_token_usage` = {input_tokens: ctx, cached_input_tokens: cache_read, output_tokens:
  output + reasoning, reasoning_output_tokens: reasoning, total_tokens: input + output}, with the
  running `total_token_usage`. A step without usage gets `info: null`: model output is waiting, so
  the importer counts it as a call without usage. Every fifth step's `token_count` is written twice
  (Codex re-emits unchanged events; the copy must be dropped), and each turn opens with an `info:
  null` event before any output (as 0.118 wrote), which must be skipped.
- a compacted step (always the first of a turn) is preceded by `compacted` with a
  `replacement_history` of one user message holding the summary (first seen there, so it reads back
  as kind `summary`) and `event_msg/context_compacted`; the turn's user message follows it.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.synth._common import iso_ms
from calib.synth.model import Step, SynthSession, Turn

LAYOUTS = ("codex-jsonl",)
CLI_VERSION = "0.142.2"
# model_context_window Codex reports (95% of the model's window).
_WINDOWS = {"gpt-5.3-codex-spark": 121600}
_DEFAULT_WINDOW = 258400
_REEMIT_EVERY = 5


def _uid(session: SynthSession, *names: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(("calib-synth-codex", session.id, *names))))


def _line(ts: datetime, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": iso_ms(ts), "type": kind, "payload": payload}


def _event(ts: datetime, payload: dict[str, Any]) -> dict[str, Any]:
    return _line(ts, "event_msg", payload)


def _item(ts: datetime, payload: dict[str, Any]) -> dict[str, Any]:
    return _line(ts, "response_item", payload)


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _meta(session: SynthSession) -> dict[str, Any]:
    commit = hashlib.sha1(session.id.encode()).hexdigest()
    name = Path(session.project_dir).name or "project"
    return {
        "id": session.id,
        "timestamp": iso_ms(session.started_at),
        "cwd": session.project_dir,
        "originator": "codex-tui",
        "cli_version": CLI_VERSION,
        "source": "cli",
        "thread_source": "user",
        "model_provider": session.provider,
        "base_instructions": {"text": session.system},
        "git": {
            "commit_hash": commit,
            "branch": "main",
            "repository_url": f"https://example.com/dev/{name}.git",
        },
    }


class _Usage:
    """The running `total_token_usage` of a session."""

    def __init__(self) -> None:
        self.total = dict.fromkeys(
            (
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            ),
            0,
        )

    def info(self, step: Step, window: int) -> dict[str, Any] | None:
        usage = step.usage
        if usage is None:
            return None
        output = usage.output + usage.reasoning
        last = {
            "input_tokens": usage.ctx,
            "cached_input_tokens": usage.cache_read,
            "output_tokens": output,
            "reasoning_output_tokens": usage.reasoning,
            "total_tokens": usage.ctx + output,
        }
        for key, value in last.items():
            self.total[key] += value
        return {
            "total_token_usage": dict(self.total),
            "last_token_usage": last,
            "model_context_window": window,
        }


def _turn(
    session: SynthSession, turn: Turn, usage: _Usage, window: int, counter: list[int]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    turn_id = _uid(session, turn.id, "turn")
    first = turn.steps[0] if turn.steps else None
    if first is not None and first.compacted:
        out.append(
            _line(
                first.ts,
                "compacted",
                {"message": "", "replacement_history": [_message("user", first.summary)]},
            )
        )
        out.append(_event(first.ts, {"type": "context_compacted"}))
    out.append(_event(turn.ts, {"type": "task_started", "turn_id": turn_id, "model_context_window": window}))
    out.append(
        _line(
            turn.ts,
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": session.project_dir,
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write"},
                "model": session.model,
                "effort": "medium",
                "summary": "auto",
            },
        )
    )
    out.append(_item(turn.ts, _message("user", turn.user_text)))
    out.append(
        _event(turn.ts, {"type": "user_message", "message": turn.user_text, "images": [], "local_images": []})
    )
    out.append(_event(turn.ts, {"type": "token_count", "info": None, "rate_limits": None}))
    last_text = None
    for step in turn.steps:
        ts = step.ts
        if step.reasoning:
            out.append(
                _item(
                    ts,
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": step.reasoning}],
                        "content": None,
                    },
                )
            )
        if step.text:
            out.append(_event(ts, {"type": "agent_message", "message": step.text, "phase": "commentary"}))
            out.append(_item(ts, _message("assistant", step.text)))
            last_text = step.text
        for tool in step.tools:
            out.append(
                _item(
                    ts,
                    {
                        "type": "function_call",
                        "name": tool.name,
                        "arguments": tool.args_json,
                        "call_id": tool.call_id,
                    },
                )
            )
        for tool in step.tools:
            out.append(
                _item(ts, {"type": "function_call_output", "call_id": tool.call_id, "output": tool.output})
            )
        event = _event(ts, {"type": "token_count", "info": usage.info(step, window), "rate_limits": None})
        out.append(event)
        counter[0] += 1
        if counter[0] % _REEMIT_EVERY == 0:
            out.append(event)
    done = turn.steps[-1].ts if turn.steps else turn.ts
    out.append(_event(done, {"type": "task_complete", "turn_id": turn_id, "last_agent_message": last_text}))
    return out


def _records(session: SynthSession) -> list[dict[str, Any]]:
    window = _WINDOWS.get(session.model, _DEFAULT_WINDOW)
    out = [_line(session.started_at, "session_meta", _meta(session))]
    usage = _Usage()
    counter = [0]
    for turn in session.turns:
        out.extend(_turn(session, turn, usage, window, counter))
    return out


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session as `out/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`; returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown codex layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    root = Path(out) / ".codex" / "sessions"
    written: list[Path] = []
    for session in sessions:
        start = session.started_at
        folder = root / f"{start:%Y}" / f"{start:%m}" / f"{start:%d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{session.id}.jsonl"
        path.write_text("".join(compact_json(r) + "\n" for r in _records(session)), encoding="utf-8")
        written.append(path)
    return written
