"""Write synthetic sessions in gemini-cli's real on-disk layouts (formats.md section 1).

`gemini-json-string` (v0.2-0.3) and `gemini-json-parts` (v0.4-0.38) are one pretty-printed
`ConversationRecord` per session in a `tmp/<sha256 of the project root>/chats/` folder; they record no
compaction, so a compacted step is written as if nothing happened. `gemini-jsonl` (v0.44+) is the
append log in a `tmp/<slug>/chats/` folder with a `.project_root` marker: every message is re-appended
as it changes (tool calls, then their results), tool results also come back as synthetic `user`
turns, and a compacted step is preceded by a `$set.messages` checkpoint holding a `<state_snapshot>`
user message with the step's summary (the text is written as given).

Usage maps to `tokens` as gemini-cli records it: input=ctx, output, thoughts=reasoning,
cached=cache_read, tool=0, total=input+output+thoughts. A step without usage gets `tokens: null`.
Reasoning becomes one thought summary that `calib.importers.gemini_cli.thought_text` reads back as
the same text. Pruned tool outputs are written unmasked (the model defines no placeholder text).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.importers.gemini_cli import thought_text
from calib.synth._common import iso_ms
from calib.synth.model import Step, SynthSession, ToolUse, Turn

LAYOUTS = ("gemini-json-string", "gemini-json-parts", "gemini-jsonl")

_SUBJECT = re.compile(r"\*\*([^*\n]+)\*\*\n\n(.+)", re.DOTALL)
_SUBJECT_ONLY = re.compile(r"\*\*([^*\n]+)\*\*")


def _file_stamp(ts: datetime) -> str:
    return iso_ms(ts)[:16].replace(":", "-")


def _slugify(name: str) -> str:
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", name.lower())).strip("-")
    return slug or "project"


def _uid(session: SynthSession, *names: str) -> str:
    """A stable UUID for a message the session model has no id for."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(("calib-synth", session.id, *names))))


def thought_for(reasoning: str, ts: datetime) -> dict[str, str]:
    """The thought summary that reads back (via `thought_text`) as exactly `reasoning`."""
    for pattern in (_SUBJECT, _SUBJECT_ONLY):
        match = pattern.fullmatch(reasoning)
        if match:
            subject = match.group(1)
            description = match.group(2) if pattern is _SUBJECT else ""
            thought = {"subject": subject, "description": description, "timestamp": iso_ms(ts)}
            if thought_text(thought) == reasoning:
                return thought
    return {"subject": "", "description": reasoning, "timestamp": iso_ms(ts)}


def _tokens(step: Step) -> dict[str, int] | None:
    usage = step.usage
    if usage is None:
        return None
    return {
        "input": usage.ctx,
        "output": usage.output,
        "cached": usage.cache_read,
        "thoughts": usage.reasoning,
        "tool": 0,
        "total": usage.ctx + usage.output + usage.reasoning,
    }


def _response(tool: ToolUse) -> dict[str, Any]:
    # An error keeps the output under "output" (as a failing shell command reports it), so the part
    # text reads back as the output string, per the synthetic model's round-trip contract.
    return {"functionResponse": {"id": tool.call_id, "name": tool.name, "response": {"output": tool.output}}}


def _tool_call(tool: ToolUse, ts: datetime, done: bool) -> dict[str, Any]:
    return {
        "id": tool.call_id,
        "name": tool.name,
        "args": json.loads(tool.args_json),
        "result": [_response(tool)] if done else None,
        "status": ("error" if tool.is_error else "success") if done else "executing",
        "timestamp": iso_ms(ts),
        "displayName": tool.name,
        "description": "",
        "renderOutputAsMarkdown": False,
        **({"resultDisplay": tool.output} if done else {}),
    }


def _user(turn: Turn, as_parts: bool) -> dict[str, Any]:
    content: Any = [{"text": turn.user_text}] if as_parts else turn.user_text
    return {"id": turn.id, "timestamp": iso_ms(turn.ts), "type": "user", "content": content}


def _gemini(session: SynthSession, step: Step, tools_done: bool | None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": step.id,
        "timestamp": iso_ms(step.ts),
        "type": "gemini",
        "content": step.text,
        "thoughts": [thought_for(step.reasoning, step.ts)] if step.reasoning else [],
        "tokens": _tokens(step),
        "model": session.model,
    }
    if step.tools and tools_done is not None:
        message["toolCalls"] = [_tool_call(t, step.ts, tools_done) for t in step.tools]
    return message


def _error(session: SynthSession, step: Step) -> dict[str, Any]:
    return {
        "id": _uid(session, step.id, "error"),
        "timestamp": iso_ms(step.ts),
        "type": "error",
        "content": step.error,
    }


def _legacy_record(session: SynthSession, as_parts: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for turn in session.turns:
        messages.append(_user(turn, as_parts))
        for step in turn.steps:
            messages.append(_gemini(session, step, tools_done=True))
            if step.error:
                messages.append(_error(session, step))
    steps = session.steps()
    record: dict[str, Any] = {
        "sessionId": session.id,
        "projectHash": hashlib.sha256(session.project_dir.encode()).hexdigest(),
        "startTime": iso_ms(session.started_at),
        "lastUpdated": iso_ms(steps[-1].ts if steps else session.started_at),
        "messages": messages,
    }
    if as_parts:  # fields v0.4+ builds add after the messages
        if session.title:
            record["summary"] = session.title
        record["kind"] = "main"
    return record


def _jsonl_records(session: SynthSession) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {
            "sessionId": session.id,
            "projectHash": hashlib.sha256(session.project_dir.encode()).hexdigest(),
            "startTime": iso_ms(session.started_at),
            "lastUpdated": iso_ms(session.started_at),
            "kind": "main",
        }
    ]

    def push(message: dict[str, Any]) -> None:
        out.append(message)
        out.append({"$set": {"lastUpdated": message["timestamp"]}})

    for turn in session.turns:
        turn_messages: dict[str, dict[str, Any]] = {}

        def record(message: dict[str, Any], into: dict[str, dict[str, Any]] = turn_messages) -> None:
            into[message["id"]] = message
            push(message)

        for index, step in enumerate(turn.steps):
            if step.compacted:
                snapshot = {
                    "id": _uid(session, step.id, "state-snapshot"),
                    "timestamp": iso_ms(step.ts),
                    "type": "user",
                    "content": [{"text": step.summary}],
                }
                # Compression runs before the request: the turn's earlier messages are the kept tail.
                kept = list(turn_messages.values()) if index else []
                out.append({"$set": {"messages": [snapshot, *kept], "lastUpdated": iso_ms(step.ts)}})
            if index == 0:
                record(_user(turn, as_parts=True))
            record(_gemini(session, step, tools_done=None))
            if step.tools:
                record(_gemini(session, step, tools_done=False))
                record(_gemini(session, step, tools_done=True))
                record(
                    {
                        "id": _uid(session, step.id, "tool-responses"),
                        "timestamp": iso_ms(step.ts),
                        "type": "user",
                        "content": [_response(t) for t in step.tools],
                    }
                )
            if step.error:
                record(_error(session, step))
        if not turn.steps:
            record(_user(turn, as_parts=True))
    if session.title:
        out.append({"$set": {"summary": session.title}})
    return out


def _project_dir(tmp: Path, session: SynthSession, slug_dirs: bool) -> Path:
    if not slug_dirs:
        return tmp / hashlib.sha256(session.project_dir.encode()).hexdigest()
    base = _slugify(Path(session.project_dir).name)
    counter = 0
    while True:
        candidate = tmp / (base if counter == 0 else f"{base}-{counter}")
        marker = candidate / ".project_root"
        if not marker.exists():
            candidate.mkdir(parents=True, exist_ok=True)
            marker.write_text(session.project_dir, encoding="utf-8")
            return candidate
        if marker.read_text(encoding="utf-8").strip() == session.project_dir:
            return candidate
        counter += 1


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session under `out/.gemini/tmp/<project>/chats/` in `layout`; returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown gemini-cli layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    tmp = Path(out) / ".gemini" / "tmp"
    written: list[Path] = []
    for session in sessions:
        jsonl = layout == "gemini-jsonl"
        chats = _project_dir(tmp, session, slug_dirs=jsonl) / "chats"
        chats.mkdir(parents=True, exist_ok=True)
        name = f"session-{_file_stamp(session.started_at)}-{session.id[:8]}.json{'l' if jsonl else ''}"
        path = chats / name
        if jsonl:
            text = "".join(compact_json(r) + "\n" for r in _jsonl_records(session))
        else:
            record = _legacy_record(session, as_parts=layout == "gemini-json-parts")
            text = json.dumps(record, ensure_ascii=False, indent=2)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
