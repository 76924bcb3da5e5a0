"""Write synthetic sessions as Roo Code's task folders (see `calib.importers.roo_code` for the facts).

`roo-code-task`: `<home>/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/<id>/`;
`kilo-code-task`: the same under `kilocode.kilo-code` (Kilo Code's extension). Each folder holds
`api_conversation_history.json` (the user's prompt as two text blocks, the task and Roo's
`<environment_details>` naming the model; the assistant's `ts` a second after its request),
`ui_messages.json` (one `api_req_started` per call at the call's time, `{apiProtocol, tokensIn, tokensOut,
cacheWrites, cacheReads, cost}` with `tokensIn` the whole input as current Roo writes it for both
protocols; no counts for a call without usage) and `history_item.json` (the task's totals and workspace).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calib.core.errors import UsageError
from calib.synth._common import epoch_ms
from calib.synth.cline import editor_tasks, write_task_folder
from calib.synth.model import Step, SynthSession

LAYOUTS = ("roo-code-task", "kilo-code-task")
EXTENSIONS = {"roo-code-task": "rooveterinaryinc.roo-cline", "kilo-code-task": "kilocode.kilo-code"}


def _protocol(provider: str) -> str:
    """Roo's `getApiProtocol`: `anthropic` for Anthropic's own API, `openai` for every other."""
    return "anthropic" if provider == "anthropic" else "openai"


def _request(session: SynthSession, step: Step) -> dict[str, Any]:
    info: dict[str, Any] = {"apiProtocol": _protocol(session.provider)}
    usage = step.usage
    if usage is not None:
        info.update(
            tokensIn=usage.ctx,
            tokensOut=usage.output + usage.reasoning,
            cacheWrites=usage.cache_write,
            cacheReads=usage.cache_read,
            cost=round((usage.ctx * 3 + usage.output * 15) / 1e6, 6),
        )
    return info


def _history_item(session: SynthSession, number: int) -> dict[str, Any]:
    steps = [s.usage for s in session.steps() if s.usage is not None]
    return {
        "id": session.id,
        "number": number,
        "ts": epoch_ms(session.started_at),
        "task": session.turns[0].user_text.partition("\n\n<environment_details>")[0] if session.turns else "",
        "tokensIn": sum(u.ctx for u in steps),
        "tokensOut": sum(u.output + u.reasoning for u in steps),
        "cacheWrites": sum(u.cache_write for u in steps),
        "cacheReads": sum(u.cache_read for u in steps),
        "totalCost": 0.0,
        "workspace": session.project_dir,
        "mode": "code",
        "status": "completed",
    }


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session as a task folder under `out` (laid out as a home folder); returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown Roo Code layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    tasks = editor_tasks(Path(out), EXTENSIONS[layout])
    written: list[Path] = []
    for number, session in enumerate(sessions, 1):
        written += write_task_folder(
            session,
            tasks / session.id,
            lambda step, request, session=session: _request(session, step),
            None,
            {"history_item.json": _history_item(session, number)},
        )
    return written
