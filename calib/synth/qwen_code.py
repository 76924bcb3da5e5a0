"""Write synthetic sessions in Qwen Code's real on-disk layout (`calib.importers.qwen_code`).

`qwen-code-jsonl`: one chat log per session, `.qwen/projects/<project>/chats/<sessionId>.jsonl`, the
project folder being the project directory with every character that is not an ASCII letter or digit
replaced by `-`. Each line is a `ChatRecord` as Qwen Code 0.18 writes it, each the child
(`parentUuid`) of the line before:

- the user prompt as a `user` record (`message` = `{role: user, parts: [{text}]}`);
- each step (one API call) as a `system`/`ui_telemetry` record holding its `qwen-code.api_response`
  event (the same counts, and the `auth_type` of the session's back end), then the `assistant` record
  (`message` = `{role: model, parts}`: a `thought` text part for the reasoning, the text, a
  `functionCall` per tool), with `model`, `contextWindowSize` and `usageMetadata`;
- each tool's result as a `qwen-code.tool_call` telemetry record and a `tool_result` record
  (`functionResponse.response` = `{output}`, or `{error}` for a failed call);
- a compacted step is preceded by a `system`/`chat_compression` record whose `compressedHistory` holds
  the summary as a user turn (written before the turn's prompt, as Qwen Code compresses before it
  sends). Qwen Code's own composer also adds the model's acknowledgement; the generator's truth has no
  part for it, so it is not written (the importer reads it where it is).

Usage maps to `usageMetadata` as the back end's converter writes it: `promptTokenCount` = ctx,
`cachedContentTokenCount` = cache read; OpenAI-compatible back ends (`qwen-oauth`, `openai`):
`candidatesTokenCount` = output + reasoning, `thoughtsTokenCount` = reasoning, total = prompt +
candidates; Gemini (`gemini-api-key`): candidates = output, total = prompt + candidates + thoughts. A
step without usage has no `usageMetadata` and no api_response event.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.synth._common import iso_ms
from calib.synth.model import Step, SynthSession, ToolUse

LAYOUTS = ("qwen-code-jsonl",)
VERSION = "0.18.1"
# provider -> the `auth_type` Qwen Code reaches it with
AUTH_TYPES = {"qwen": "qwen-oauth", "openai": "openai", "google": "gemini-api-key", "anthropic": "anthropic"}
WINDOWS = {
    "coder-model": 1_000_000,
    "qwen3-coder-plus": 1_000_000,
    "gpt-4.1": 1_047_576,
    "gemini-2.5-pro": 1_048_576,
}
_DEFAULT_WINDOW = 131_072


def project_folder(directory: str) -> str:
    """Qwen Code's folder name for a project: every character that is not ASCII alphanumeric as `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", directory)


def _uuid(*seed: str) -> str:
    return str(uuid.UUID(bytes=hashlib.sha256(":".join(seed).encode()).digest()[:16], version=4))


def usage_metadata(provider: str, step: Step) -> dict[str, int] | None:
    """The `usageMetadata` Qwen Code records for a step's usage (None: none reported)."""
    u = step.usage
    if u is None:
        return None
    if provider == "google":
        candidates, total = u.output, u.ctx + u.output + u.reasoning
    else:
        candidates = u.output + u.reasoning
        total = u.ctx + candidates
    return {
        "promptTokenCount": u.ctx,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": u.reasoning,
        "totalTokenCount": total,
        "cachedContentTokenCount": u.cache_read,
    }


class _Writer:
    def __init__(self, session: SynthSession) -> None:
        self.session = session
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.prompts = 0

    def record(self, kind: str, key: str, ts: datetime, **fields: Any) -> dict[str, Any]:
        s = self.session
        uid = _uuid(s.id, key)
        line: dict[str, Any] = {
            "uuid": uid,
            "parentUuid": self.parent,
            "sessionId": s.id,
            "timestamp": iso_ms(ts),
            "type": kind,
            "cwd": s.project_dir,
            "version": VERSION,
            "gitBranch": "main",
        }
        line.update(fields)
        self.lines.append(line)
        self.parent = uid
        return line

    def prompt_id(self) -> str:
        return f"{self.session.id}########{self.prompts}"

    def telemetry(self, key: str, ts: datetime, event: dict[str, Any]) -> None:
        self.record("system", key, ts, subtype="ui_telemetry", systemPayload={"uiEvent": event})

    def step(self, step: Step) -> None:
        s = self.session
        # The calls' times are the steps' (what the generator's truth holds).
        done = step.ts
        metadata = usage_metadata(s.provider, step)
        response_id = "chatcmpl-" + _uuid(s.id, step.id, "response").replace("-", "")[:24]
        if metadata is not None:
            self.telemetry(
                f"{step.id}:api-response",
                done,
                {
                    "event.name": "qwen-code.api_response",
                    "event.timestamp": iso_ms(done),
                    "response_id": response_id,
                    "model": s.model,
                    "status_code": 200,
                    "duration_ms": 900 + len(step.text) % 4000,
                    "input_token_count": metadata["promptTokenCount"],
                    "output_token_count": metadata["candidatesTokenCount"],
                    "cached_content_token_count": metadata["cachedContentTokenCount"],
                    "thoughts_token_count": metadata["thoughtsTokenCount"],
                    "total_token_count": metadata["totalTokenCount"],
                    "prompt_id": self.prompt_id(),
                    "auth_type": AUTH_TYPES[s.provider],
                },
            )
        parts: list[dict[str, Any]] = []
        if step.reasoning:
            parts.append({"text": step.reasoning, "thought": True})
        if step.text:
            parts.append({"text": step.text})
        for tool in step.tools:
            parts.append({"functionCall": {"id": tool.call_id, "name": tool.name, "args": _args(tool)}})
        fields: dict[str, Any] = {"model": s.model, "message": {"role": "model", "parts": parts}}
        if metadata is not None:
            fields["usageMetadata"] = metadata
        fields["contextWindowSize"] = WINDOWS.get(s.model, _DEFAULT_WINDOW)
        self.record("assistant", step.id, done, **fields)
        at = done
        for tool in step.tools:
            at = at + timedelta(milliseconds=40 + len(tool.output) % 900)
            self.telemetry(
                f"{tool.call_id}:tool-call",
                at,
                {
                    "event.name": "qwen-code.tool_call",
                    "event.timestamp": iso_ms(at),
                    "function_name": tool.name,
                    "function_args": _args(tool),
                    "duration_ms": 40 + len(tool.output) % 900,
                    "status": "error" if tool.is_error else "success",
                    "success": not tool.is_error,
                    "prompt_id": self.prompt_id(),
                    "response_id": response_id,
                    "tool_type": "native",
                    "content_length": len(tool.output),
                },
            )
            response = {"error": tool.output} if tool.is_error else {"output": tool.output}
            self.record(
                "tool_result",
                f"{tool.call_id}:result",
                at,
                message={
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"id": tool.call_id, "name": tool.name, "response": response}}
                    ],
                },
                toolCallResult={
                    "callId": tool.call_id,
                    "status": "error" if tool.is_error else "success",
                    "resultDisplay": tool.output[:2000],
                },
            )

    def compression(self, step: Step, before: int | None, ts: datetime) -> None:
        summary = {"role": "user", "parts": [{"text": step.summary}]}
        info = {
            "originalTokenCount": before or 0,
            "newTokenCount": len(step.summary) // 4,
            "compressionStatus": 1,
        }
        self.record(
            "system",
            f"{step.id}:compression",
            ts,
            subtype="chat_compression",
            systemPayload={"info": info, "compressedHistory": [summary]},
        )


def _args(tool: ToolUse) -> Any:
    return json.loads(tool.args_json)


def _lines(session: SynthSession) -> list[dict[str, Any]]:
    writer = _Writer(session)
    last_ctx: int | None = None
    for turn in session.turns:
        for index, step in enumerate(turn.steps):
            if index == 0:
                if step.compacted:
                    writer.compression(step, last_ctx, turn.ts - timedelta(milliseconds=300))
                writer.record(
                    "user",
                    f"{turn.id}:prompt",
                    turn.ts,
                    message={"role": "user", "parts": [{"text": turn.user_text}]},
                )
            writer.step(step)
            if step.usage is not None:
                last_ctx = step.usage.ctx + step.usage.output
        if not turn.steps:
            writer.record(
                "user",
                f"{turn.id}:prompt",
                turn.ts,
                message={"role": "user", "parts": [{"text": turn.user_text}]},
            )
        writer.prompts += 1
    if session.title:
        end = writer.lines[-1]["timestamp"] if writer.lines else iso_ms(session.started_at)
        writer.lines.append(
            {
                "uuid": _uuid(session.id, "title"),
                "parentUuid": writer.parent,
                "sessionId": session.id,
                "timestamp": end,
                "type": "system",
                "cwd": session.project_dir,
                "version": VERSION,
                "subtype": "custom_title",
                "systemPayload": {"customTitle": session.title, "titleSource": "auto"},
            }
        )
    return writer.lines


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session as `out/.qwen/projects/<project>/chats/<sessionId>.jsonl`; returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown Qwen Code layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    projects = Path(out) / ".qwen" / "projects"
    written: list[Path] = []
    for session in sessions:
        folder = projects / project_folder(session.project_dir) / "chats"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session.id}.jsonl"
        path.write_text("".join(compact_json(line) + "\n" for line in _lines(session)), encoding="utf-8")
        written.append(path)
    return written
