"""Write synthetic sessions in Claude Code's real on-disk layout (formats.md section 8).

`claude-code-jsonl`: one transcript per session, `.claude/projects/<slug of the project dir>/<id>.jsonl`
(the slug is the directory with every character that is not a letter or digit replaced by `-`), lines
as Claude Code 2.1.112 writes them:

- a SessionStart `progress` line first, a `file-history-snapshot` before each prompt, a `progress`
  hook line beside each tool call, and a `summary` title line at the end: noise that is no prompt;
- the user prompt as a `user` line with string content;
- each step (one API call) as one `assistant` line per content block (`thinking`, `text`, then one per
  `tool_use`), all with the step's `message.id` and `requestId` and a copy of the usage:
  `input_tokens` = uncached, `cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens` =
  output + reasoning (Claude's output includes thinking). Earlier lines carry a smaller streaming count
  and no `stop_reason`; the last line the full count and its `stop_reason`. A step without usage gets
  zeros (a stream that lost its usage), which reads back as `missing`;
- tool results as `user` lines with a `tool_result` block, with the parallel-tool quirk of the real
  files: the assistant line of tool_use n+1 is a child of the line of tool_use n, the result of
  tool_use n a child of the line of tool_use n, and the next step continues from the last result;
- a compacted step is preceded by a `system/compact_boundary` line (`parentUuid` null,
  `logicalParentUuid` the line before, `compactMetadata` trigger `auto`, `preTokens` = the previous
  call's ctx + output) and the summary as an `isCompactSummary` user line.

Pruning is never generated for this layout (see `calib.synth.agents`), so nothing is microcompacted.
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
from calib.synth.model import Step, SynthSession, ToolUse, Turn

LAYOUTS = ("claude-code-jsonl",)
VERSION = "2.1.112"
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def project_slug(directory: str) -> str:
    """Claude Code's folder name for a project: every non-alphanumeric character replaced by `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", directory)


def _b62(seed: str, n: int) -> str:
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
    out = []
    for _ in range(n):
        digest, r = divmod(digest, 62)
        out.append(_B62[r])
    return "".join(out)


class _Writer:
    """The lines of one session, each linked to the line before it as Claude Code links them."""

    def __init__(self, session: SynthSession) -> None:
        self.session = session
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None  # uuid of the line the next message continues
        self.count = 0
        self.prev_usage_total = 0

    def uid(self, *names: str) -> str:
        self.count += 1
        return str(
            uuid.uuid5(
                uuid.NAMESPACE_URL, "/".join(("calib-synth", self.session.id, str(self.count), *names))
            )
        )

    def envelope(self, kind: str, ts: datetime, parent: str | None, **fields: Any) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.session.project_dir,
            "sessionId": self.session.id,
            "version": VERSION,
            "gitBranch": "main",
            "type": kind,
        }
        line.update(fields)
        line["uuid"] = self.uid(kind)
        line["timestamp"] = iso_ms(ts)
        self.lines.append(line)
        return line

    def progress(self, ts: datetime, parent: str | None, event: str) -> None:
        self.envelope(
            "progress",
            ts,
            parent,
            data={"type": "hook_progress", "hookEvent": event, "hookName": event, "command": "true"},
            toolUseID=self.uid("hook"),
        )

    def snapshot(self, ts: datetime) -> None:
        mid = self.uid("snapshot")
        self.lines.append(
            {
                "type": "file-history-snapshot",
                "messageId": mid,
                "snapshot": {"messageId": mid, "trackedFileBackups": {}, "timestamp": iso_ms(ts)},
                "isSnapshotUpdate": False,
            }
        )

    def user(self, ts: datetime, content: Any, **fields: Any) -> str:
        line = self.envelope("user", ts, self.last, message={"role": "user", "content": content}, **fields)
        self.last = line["uuid"]
        return str(line["uuid"])

    def compaction(self, step: Step) -> None:
        boundary = self.envelope(
            "system",
            step.ts,
            None,
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            logicalParentUuid=self.last,
            compactMetadata={"trigger": "auto", "preTokens": self.prev_usage_total},
        )
        self.last = boundary["uuid"]
        self.user(step.ts, step.summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)

    def step(self, step: Step) -> None:
        usage = step.usage
        blocks: list[dict[str, Any]] = []
        if step.reasoning:
            blocks.append(
                {"type": "thinking", "thinking": step.reasoning, "signature": _b62(step.id + "sig", 40)}
            )
        if step.text:
            blocks.append({"type": "text", "text": step.text})
        for tool in step.tools:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": tool.call_id,
                    "name": tool.name,
                    "input": json.loads(tool.args_json),
                }
            )
        if not blocks:
            blocks.append({"type": "text", "text": ""})
        total = (usage.output + usage.reasoning) if usage is not None else 0
        request = "req_011C" + _b62(step.id + "req", 16)
        tool_lines: list[tuple[ToolUse, str]] = []
        for n, block in enumerate(blocks):
            last = n == len(blocks) - 1
            counts = {
                "input_tokens": usage.uncached if usage else 0,
                "cache_creation_input_tokens": usage.cache_write if usage else 0,
                "cache_read_input_tokens": usage.cache_read if usage else 0,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 0,
                    "ephemeral_1h_input_tokens": usage.cache_write if usage else 0,
                },
                # The stream's first count on earlier lines, the final one on the last.
                "output_tokens": total if last else min(total, 1 + n),
                "service_tier": "standard",
            }
            stop = ("tool_use" if step.tools else "end_turn") if last else None
            message = {
                "model": self.session.model,
                "id": step.id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": counts,
            }
            line = self.envelope("assistant", step.ts, self.last, message=message, requestId=request)
            self.last = line["uuid"]
            if block["type"] == "tool_use":
                tool_lines.append((step.tools[len(tool_lines)], str(line["uuid"])))
        self.prev_usage_total = (usage.ctx + total) if usage is not None else 0
        for n, (tool, parent) in enumerate(tool_lines):
            at = step.ts + timedelta(milliseconds=5 * (n + 1))
            self.progress(at, parent, "PostToolUse")
            result: dict[str, Any] = {
                "tool_use_id": tool.call_id,
                "type": "tool_result",
                "content": tool.output,
            }
            if tool.is_error:
                result["is_error"] = True
            line = self.envelope(
                "user",
                at,
                parent,
                message={"role": "user", "content": [result]},
                toolUseResult={"stdout": tool.output, "stderr": "", "interrupted": False},
                sourceToolAssistantUUID=parent,
            )
            self.last = line["uuid"]

    def turn(self, turn: Turn) -> None:
        self.snapshot(turn.ts)
        for index, step in enumerate(turn.steps):
            if index == 0:
                if step.compacted:
                    self.compaction(step)
                self.user(turn.ts, turn.user_text)
            self.step(step)
        if not turn.steps:
            self.user(turn.ts, turn.user_text)


def _lines(session: SynthSession) -> list[dict[str, Any]]:
    writer = _Writer(session)
    writer.progress(session.started_at, None, "SessionStart")
    writer.last = writer.lines[-1]["uuid"]
    for turn in session.turns:
        writer.turn(turn)
    if session.title:
        writer.lines.append({"type": "summary", "summary": session.title, "leafUuid": writer.last})
    return writer.lines


def write(sessions: list[SynthSession], out: Path, layout: str) -> list[Path]:
    """Write each session as `out/.claude/projects/<slug>/<sessionId>.jsonl`; returns the files."""
    if layout not in LAYOUTS:
        raise UsageError(f"unknown Claude Code layout {layout!r}", hint=f"use one of: {', '.join(LAYOUTS)}")
    projects = Path(out) / ".claude" / "projects"
    written: list[Path] = []
    for session in sessions:
        folder = projects / project_slug(session.project_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{session.id}.jsonl"
        path.write_text("".join(compact_json(line) + "\n" for line in _lines(session)), encoding="utf-8")
        written.append(path)
    return written
