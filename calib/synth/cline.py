"""Write synthetic sessions in Cline's two on-disk layouts (see `calib.importers.cline` for the facts).

- `cline-sdk`: `<home>/.cline/data/sessions/<id>/<id>.messages.json` (`{version: 1, updated_at, agent,
  sessionId, messages, system_prompt}`) and the manifest `<id>.json`. Each assistant message (one call)
  carries `modelInfo {id, provider, family}` and, when the call reported usage, `metrics` with
  `inputTokens` = the whole prompt (cache included), `outputTokens`, `cacheReadTokens`,
  `cacheWriteTokens`, `cost`; its `ts` is the call's time.
- `cline-task`: the legacy task folder `<home>/.config/Code/User/globalStorage/saoudrizwan.claude-dev/
  tasks/<id>/` with `api_conversation_history.json` (the messages; the assistant's `ts` a second after
  its request, as it is written when the stream ends), `ui_messages.json` (one `api_req_started` per call
  at the call's time, holding `request` and the counts as the provider's handler yields them: the
  input without the cache for `anthropic`, `openai-native` and `gemini`, DeepSeek's prompt misses as
  both `tokensIn` and `cacheWrites` for `deepseek`; `modelInfo` on every entry) and `task_metadata.json`.

A call without usage gets no `metrics` (SDK) or a request entry without counts (task folder).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.synth._common import epoch_ms, iso_ms
from calib.synth.model import Step, SynthSession, Turn

LAYOUTS = ("cline-sdk", "cline-task")
CLINE_EXTENSION = "saoudrizwan.claude-dev"
# Cline's provider id (its handler) for each vendor the generator draws.
PROVIDER_IDS = {
    "anthropic": "anthropic",
    "openai": "openai-native",
    "google": "gemini",
    "deepseek": "deepseek",
}
# The assistant message of a task folder is written when the stream ends: this long after its request.
STREAM_MS = 1000


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2) + "\n"


def _ms(ts: datetime) -> int:
    return epoch_ms(ts)


def user_message(turn: Turn, ts: datetime) -> dict[str, Any]:
    """The user's prompt as a history message: its text blocks, split where Roo appends its environment."""
    text = turn.user_text
    head, sep, tail = text.partition("\n\n<environment_details>")
    blocks = [{"type": "text", "text": head}]
    if sep:
        blocks.append({"type": "text", "text": "<environment_details>" + tail})
    return {"role": "user", "content": blocks, "ts": _ms(ts)}


def assistant_content(step: Step) -> list[dict[str, Any]]:
    """A step's output as Anthropic-format content blocks."""
    blocks: list[dict[str, Any]] = []
    if step.reasoning:
        blocks.append({"type": "thinking", "thinking": step.reasoning, "signature": ""})
    if step.text:
        blocks.append({"type": "text", "text": step.text})
    for tool in step.tools:
        blocks.append(
            {"type": "tool_use", "id": tool.call_id, "name": tool.name, "input": json.loads(tool.args_json)}
        )
    return blocks


def results_message(step: Step, ts: datetime, *, named: bool) -> dict[str, Any] | None:
    """The tool results of a step as one user message (None when it called no tool)."""
    if not step.tools:
        return None
    blocks = []
    for tool in step.tools:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool.call_id}
        if named:
            block["name"] = tool.name
        block["content"] = tool.output
        if tool.is_error:
            block["is_error"] = True
        blocks.append(block)
    return {"role": "user", "content": blocks, "ts": _ms(ts)}


def _cost(step: Step) -> float:
    usage = step.usage
    if usage is None:
        return 0.0
    return round(
        (usage.uncached * 3 + usage.cache_write * 3.75 + usage.cache_read * 0.3 + usage.output * 15) / 1e6, 6
    )


# -- cline-sdk -----------------------------------------------------------------------------------


def _sdk_messages(session: SynthSession) -> list[dict[str, Any]]:
    provider = PROVIDER_IDS.get(session.provider, session.provider)
    out: list[dict[str, Any]] = []
    for n, turn in enumerate(session.turns, 1):
        message = user_message(turn, turn.ts)
        out.append({"id": f"msg_{_ms(turn.ts):x}_{n}", **message})
        for step in turn.steps:
            assistant: dict[str, Any] = {
                "id": f"msg_{step.id[:8]}",
                "role": "assistant",
                "content": assistant_content(step),
                "ts": _ms(step.ts),
                "modelInfo": {
                    "id": session.model,
                    "provider": provider,
                    "family": session.model.split("-")[0],
                },
            }
            usage = step.usage
            if usage is not None:
                assistant["metrics"] = {
                    "inputTokens": usage.ctx,
                    "outputTokens": usage.output + usage.reasoning,
                    "cacheReadTokens": usage.cache_read,
                    "cacheWriteTokens": usage.cache_write,
                    "cost": _cost(step),
                }
            out.append(assistant)
            results = results_message(step, step.ts + timedelta(milliseconds=8), named=True)
            if results is not None:
                ids = "".join(f"_tool_{t.call_id}" for t in step.tools)
                out.append({"id": f"msg_{step.id[:8]}{ids}", **results})
    return out


def _write_sdk(session: SynthSession, root: Path) -> list[Path]:
    folder = root / ".cline" / "data" / "sessions" / session.id
    folder.mkdir(parents=True, exist_ok=True)
    messages = _sdk_messages(session)
    last = max([session.started_at] + [s.ts for s in session.steps()])
    messages_path = folder / f"{session.id}.messages.json"
    document = {
        "version": 1,
        "updated_at": iso_ms(last),
        "agent": "lead",
        "sessionId": session.id,
        "messages": messages,
        "system_prompt": session.system,
    }
    messages_path.write_text(_dump(document), encoding="utf-8")
    manifest = {
        "version": 1,
        "session_id": session.id,
        "source": "vscode",
        "pid": 4242,
        "started_at": iso_ms(session.started_at),
        "ended_at": iso_ms(last),
        "exit_code": 0,
        "status": "completed",
        "interactive": True,
        "provider": PROVIDER_IDS.get(session.provider, session.provider),
        "model": session.model,
        "cwd": session.project_dir,
        "workspace_root": session.project_dir,
        "enable_tools": True,
        "enable_spawn": False,
        "enable_teams": False,
        "metadata": {"title": session.title, "mode": "act"},
        "messages_path": str(messages_path),
    }
    manifest_path = folder / f"{session.id}.json"
    manifest_path.write_text(_dump(manifest), encoding="utf-8")
    return [messages_path, manifest_path]


# -- task folders (shared with calib.synth.roo_code) -----------------------------------------------


def task_request(session: SynthSession, step: Step, request: str) -> dict[str, Any]:
    """Cline's `api_req_started` text: the request, and the counts as the provider's handler yields them."""
    info: dict[str, Any] = {"request": request}
    usage = step.usage
    if usage is None:
        return info
    uncached = usage.ctx - usage.cache_read - usage.cache_write
    writes = uncached if session.provider == "deepseek" else usage.cache_write
    info.update(
        tokensIn=uncached,
        tokensOut=usage.output + usage.reasoning,
        cacheWrites=writes,
        cacheReads=usage.cache_read,
        cost=_cost(step),
    )
    return info


def write_task_folder(
    session: SynthSession,
    folder: Path,
    request_info: Any,
    model_info: dict[str, Any] | None,
    extra: dict[str, Any],
) -> list[Path]:
    """A task folder: `api_conversation_history.json`, `ui_messages.json` and the files in `extra`.

    `request_info(step, request_text)` gives each call's `api_req_started` text object; `model_info`
    is put on every UI entry when given.
    """
    folder.mkdir(parents=True, exist_ok=True)
    history: list[dict[str, Any]] = []
    ui: list[dict[str, Any]] = []

    def say(ts: datetime, kind: str, text: str, **more: Any) -> None:
        entry: dict[str, Any] = {"ts": _ms(ts), "type": "say", "say": kind, "text": text, **more}
        if model_info is not None:
            entry["modelInfo"] = model_info
        ui.append(entry)

    for index, turn in enumerate(session.turns):
        if index == 0:
            say(turn.ts, "task", turn.user_text.partition("\n\n<environment_details>")[0])
        else:
            say(turn.ts, "user_feedback", turn.user_text.partition("\n\n<environment_details>")[0])
        pending: dict[str, Any] | None = user_message(turn, turn.ts)
        for step in turn.steps:
            sent = pending["content"] if pending is not None else []
            request = "\n\n".join(str(b.get("text") or b.get("content") or "") for b in sent)
            say(step.ts, "api_req_started", json.dumps(request_info(step, request), ensure_ascii=False))
            if pending is not None:
                history.append(pending)
            done = step.ts + timedelta(milliseconds=STREAM_MS)
            if step.text:
                say(done, "text", step.text)
            for tool in step.tools:
                args = json.loads(tool.args_json)
                say(done, "tool", json.dumps({"tool": tool.name, **args}, ensure_ascii=False))
            history.append({"role": "assistant", "content": assistant_content(step), "ts": _ms(done)})
            pending = results_message(step, done + timedelta(milliseconds=1), named=False)
        if pending is not None:
            history.append(pending)  # results the model never answered (the turn was cut off)
        if turn.steps:
            say(turn.steps[-1].ts + timedelta(milliseconds=STREAM_MS + 2), "completion_result", "")
    paths = []
    for name, value in (("api_conversation_history.json", history), ("ui_messages.json", ui), *extra.items()):
        path = folder / name
        path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
        paths.append(path)
    return paths


def editor_tasks(root: Path, extension: str) -> Path:
    """`<home>/.config/Code/User/globalStorage/<extension>/tasks`: VS Code's on Linux."""
    return root / ".config" / "Code" / "User" / "globalStorage" / extension / "tasks"


def _write_task(session: SynthSession, root: Path) -> list[Path]:
    provider = PROVIDER_IDS.get(session.provider, session.provider)
    folder = editor_tasks(root, CLINE_EXTENSION) / session.id
    metadata: dict[str, list[Any]] = {"files_in_context": [], "model_usage": [], "environment_history": []}
    return write_task_folder(
        session,
        folder,
        lambda step, request: task_request(session, step, request),
        {"modelId": session.model, "providerId": provider, "mode": "act"},
        {"task_metadata.json": metadata},
    )


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session in `layout` under `out` (laid out as a home folder); returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown Cline layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    written: list[Path] = []
    for session in sessions:
        written += (
            _write_sdk(session, Path(out)) if layout == "cline-sdk" else _write_task(session, Path(out))
        )
    return written
