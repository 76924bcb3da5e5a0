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

Masking (opt-in: `mask_tool_outputs`, or `masked_sessions`): gemini-cli v0.29-v0.38 (the later
`gemini-json-parts` versions) masks bulky older tool outputs in batches right before a request,
writes each one's full response as `JSON.stringify(response, null, 2)` to
`<project temp>/tool-outputs/session-<id>/<tool>_<call id>_<suffix>.txt` and keeps only a placeholder
pointing at that file in the record. `mask_tool_outputs` picks such batches, records them in the
session's truth (`tool_output_masking`: which output, from which call on, the placeholder and the
file) and recomputes the usage: the calls before a batch were sent the full output, that call and the
later ones the placeholder. `write` then records the placeholder (its path as the recording machine
had it, under the project's home) and writes the file, dated at the masking time. Sessions without
that truth are written exactly as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import uuid
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.importers.gemini_cli import thought_text
from calib.synth._common import epoch_ms, iso_ms
from calib.synth.agents import LAYOUT_EVENTS
from calib.synth.generate import generate
from calib.synth.model import Step, SynthSession, ToolUse, Turn
from calib.synth.truth import usage_and_truth

LAYOUTS = ("gemini-json-string", "gemini-json-parts", "gemini-jsonl")
# The layouts whose gemini-cli versions mask tool outputs into files and keep only the placeholder in
# the record (v0.29-v0.38). JSONL (v0.44+) records masking as a `$set.messages` checkpoint: not written.
MASKING_LAYOUTS = ("gemini-json-parts",)
# Truth key of a masked session: one entry per masked output (see `mask_tool_outputs`).
MASKING_TRUTH = "tool_output_masking"
# Outputs this long (as the pretty JSON gemini-cli saves) are masked: their placeholder is shorter.
MASK_MIN_CHARS = 1500
# Tools whose outputs gemini-cli never masks.
_UNMASKED_TOOLS = frozenset(("activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"))

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


def _response(tool: ToolUse, masked: str | None = None) -> dict[str, Any]:
    # An error keeps the output under "output" (as a failing shell command reports it), so the part
    # text reads back as the output string, per the synthetic model's round-trip contract. A masked
    # output's response is its placeholder alone, as gemini-cli leaves it.
    output = tool.output if masked is None else masked
    return {"functionResponse": {"id": tool.call_id, "name": tool.name, "response": {"output": output}}}


def _tool_call(tool: ToolUse, ts: datetime, done: bool, masked: str | None = None) -> dict[str, Any]:
    return {
        "id": tool.call_id,
        "name": tool.name,
        "args": json.loads(tool.args_json),
        "result": [_response(tool, masked)] if done else None,
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


def _gemini(
    session: SynthSession, step: Step, tools_done: bool | None, masked: dict[str, str] | None = None
) -> dict[str, Any]:
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
        masked = masked or {}
        message["toolCalls"] = [_tool_call(t, step.ts, tools_done, masked.get(t.call_id)) for t in step.tools]
    return message


def _error(session: SynthSession, step: Step) -> dict[str, Any]:
    return {
        "id": _uid(session, step.id, "error"),
        "timestamp": iso_ms(step.ts),
        "type": "error",
        "content": step.error,
    }


def _legacy_record(session: SynthSession, as_parts: bool) -> dict[str, Any]:
    masked = {m["call_id"]: m["placeholder"] for m in session.truth.get(MASKING_TRUTH) or ()}
    messages: list[dict[str, Any]] = []
    for turn in session.turns:
        messages.append(_user(turn, as_parts))
        for step in turn.steps:
            messages.append(_gemini(session, step, tools_done=True, masked=masked))
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


def _saved_response(tool: ToolUse) -> str:
    """What gemini-cli writes to a masked output's file: the response as `JSON.stringify(r, null, 2)`."""
    return json.dumps(_response(tool)["functionResponse"]["response"], ensure_ascii=False, indent=2)


def _recorded_temp_dir(session: SynthSession) -> str:
    """The project temp dir on the machine that recorded the session (`~/.gemini/tmp/<sha256>`), the
    home taken from the project's path (`/home/<user>`, `/Users/<user>`, else `/home/dev`)."""
    names = PurePosixPath(session.project_dir).parts
    home = (
        str(PurePosixPath(*names[:3])) if len(names) >= 3 and names[1] in ("home", "Users") else "/home/dev"
    )
    return f"{home}/.gemini/tmp/{hashlib.sha256(session.project_dir.encode()).hexdigest()}"


def _placeholder(content: str, path: str) -> str:
    """A masked output's placeholder: a head-and-tail preview of the saved text, and where it is."""
    preview = content if len(content) <= 500 else f"{content[:250]}\n... [TRUNCATED] ...\n{content[-250:]}"
    return (
        f"<tool_output_masked>\n{preview}\n\nOutput too large. Full output available at: {path}\n"
        "</tool_output_masked>"
    )


def _sanitized(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


def mask_tool_outputs(session: SynthSession, *, min_chars: int = MASK_MIN_CHARS) -> int:
    """Mask bulky tool outputs of a session as gemini-cli v0.29-v0.38 does; returns how many.

    Up to two batches, each right before a call `k` (drawn from a stream seeded by the session id):
    the outputs of at least `min_chars` (as saved) that call `k-1` or an earlier one was sent (the
    output call `k` is about to send is never masked), the newest of them kept in the first batch.
    Each masked output gets `pruned` and `pruned_at` (a time between calls `k-1` and `k`) and an entry in
    the truth's `tool_output_masking`; the usage and the per-call truth are computed again, so the calls
    before a batch count the full output and the others its placeholder. A session already masked, or
    with no output to mask, is left as it is.
    """
    if session.truth.get(MASKING_TRUTH):
        return 0
    steps = session.steps()
    # (the call that first sent it, the output), for the outputs big enough to mask
    bulky = [
        (j + 1, tool)
        for j, step in enumerate(steps)
        for tool in step.tools
        if tool.name not in _UNMASKED_TOOLS and len(_saved_response(tool)) >= min_chars
    ]

    def maskable(k: int, done: set[str]) -> list[ToolUse]:
        return [tool for sent, tool in bulky if sent <= k - 1 and tool.call_id not in done]

    calls = [k for k in range(2, len(steps)) if maskable(k, set())]
    if not calls:
        return 0
    rng = random.Random(f"calib-synth:{session.id}:masking")
    first = rng.choice(calls)
    batch = maskable(first, set())
    batches = [(first, batch[:-1] if len(batch) > 1 else batch)]
    done = {tool.call_id for tool in batches[0][1]}
    later = [k for k in range(first + 1, len(steps)) if maskable(k, done)]
    if later and rng.random() < 0.75:
        second = rng.choice(later)
        batches.append((second, maskable(second, done)))
    temp = _recorded_temp_dir(session)
    folder = f"tool-outputs/session-{_sanitized(session.id)}"
    entries: list[dict[str, Any]] = []
    for k, tools in batches:
        before, after = steps[k - 1].ts, steps[k].ts
        at = before + timedelta(milliseconds=max(1, (after - before) // timedelta(milliseconds=2)))
        for tool in tools:
            content = _saved_response(tool)
            suffix = hashlib.sha256(content.encode()).hexdigest()[:6]
            name = f"{_sanitized(tool.name).lower()}_{_sanitized(tool.call_id).lower()}_{suffix}.txt"
            tool.pruned, tool.pruned_at = True, at
            entries.append(
                {
                    "call_id": tool.call_id,
                    "tool": tool.name,
                    "masked_at": iso_ms(at),
                    "masked_before_call": k,
                    "file": f"{folder}/{name}",
                    "placeholder": _placeholder(content, f"{temp}/{folder}/{name}"),
                }
            )
    session.truth[MASKING_TRUTH] = entries
    missing = {step.id for step in steps if step.usage is None}
    events = LAYOUT_EVENTS["gemini-cli"]["gemini-json-parts"]
    usage_and_truth(session, events, random.Random(f"calib-synth:{session.id}:masking:usage"), missing)
    return len(entries)


def masked_sessions(sessions: int, seed: int) -> list[SynthSession]:
    """`generate("gemini-cli", layout="gemini-json-parts")`, with `mask_tool_outputs` applied to each."""
    out = generate("gemini-cli", sessions=sessions, seed=seed, layout="gemini-json-parts")
    for session in out:
        mask_tool_outputs(session)
    return out


def _write_masked_outputs(project: Path, session: SynthSession) -> None:
    """The files of a masked session's outputs, each dated at its masking time, as gemini-cli left them."""
    tools = {tool.call_id: tool for step in session.steps() for tool in step.tools}
    for entry in session.truth[MASKING_TRUTH]:
        tool = tools[entry["call_id"]]
        path = project / entry["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_saved_response(tool), encoding="utf-8")
        if tool.pruned_at is not None:
            ns = epoch_ms(tool.pruned_at) * 1_000_000
            os.utime(path, ns=(ns, ns))


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session under `out/.gemini/tmp/<project>/chats/` in `layout`; returns the files (the
    masked outputs' files beside them, in `tool-outputs/`, are not listed)."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown gemini-cli layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    masked = [s.id for s in sessions if s.truth.get(MASKING_TRUTH)]
    if masked and layout not in MASKING_LAYOUTS:
        raise UsageError(
            f"session {masked[0]} has masked tool outputs, which {layout} does not record",
            hint=f"write masked sessions in {', '.join(MASKING_LAYOUTS)}",
        )
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
        if session.truth.get(MASKING_TRUTH):
            _write_masked_outputs(chats.parent, session)
        written.append(path)
    return written
