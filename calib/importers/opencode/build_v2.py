"""Turn one OpenCode 2 session's `session_message` rows (in `seq` order) into calls and parts.

Rules (reference/formats.md section 7.3 and 7.4):

- `assistant` = one provider call. Its `content[]` is its output (`text` -> assistant_text, `reasoning`,
  `tool` -> tool_call with the compact JSON of its input); the results of its tools live in the same row
  and are appended after its outputs, as input of the next call (tool_result, no call uid). A tool whose
  `time.pruned` is set is sent as `PRUNED_TEXT` from that time on (the placeholder of the 1.x code, section
  2.6: 2.x records when, not what, it sends instead). A tool still streaming or running gets the 1.x
  "interrupted" text.
- A step without `time.completed` (unfinished) or whose tokens are absent or all zero (such as an error
  the provider reported no usage for) stays a call with usage "missing", as the 1.x code keeps an
  assistant message without usage; an errored step's parts are not re-sent, as in 1.x, unless it was
  aborted after producing more than reasoning.
- Tokens mean the same for every provider: `ctx = input + cache.read + cache.write` (Anthropic style),
  `output` excludes `reasoning`, `total` = all five (what 2.x's compaction check starts from). Reasoning
  is carried into the next prompt when the next call uses the same provider and model (the 1.x rule;
  2.x always reports it apart from `output`).
- `user`: its text (user_text) and files (file, their URL or path); `system` text -> a `system` part;
  `synthetic` text -> user_text; `shell` (a user's `!` command) -> the command as user_text and its
  output as tool_result (tool `shell`), both input of the next call.
- `compaction` with status `completed` breaks the chain: the next call's prompt starts at a `summary`
  part holding `summary`, followed by `recent` (the kept tail serialised as text) as user_text when it is
  not empty. Running or failed compactions change nothing (the model never saw them).
- `agent-switched`, `model-switched`, `location-switched`, `skill`, `idle` and unknown types are
  bookkeeping: no part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from calib.core.records import Call, ParsedSession, Session
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing
from calib.importers.common import compact_json, ms_to_datetime
from calib.importers.opencode.build import INTERRUPTED_TOOL, error_text, obj, usage_counts
from calib.importers.opencode.layout import Layout, Mark, as_str
from calib.importers.opencode.providers import route_to_vendor

Row = tuple[str, str, dict[str, Any], int | None]  # (message id, type, data, time_created)
SHELL_TOOL = "shell"


@dataclass(slots=True)
class _Draft:
    call: Call
    start: Mark
    end: Mark
    tokens: dict[str, Any] | None
    completed: bool
    cost: object = None


@dataclass
class _Builder(Layout):
    drafts: list[_Draft] = field(default_factory=list)

    # -- rows ----------------------------------------------------------------------------------------

    def row(self, msg_id: str, kind: str, data: dict[str, Any], created: int | None) -> None:
        ts = ms_to_datetime(obj(data.get("time")).get("created")) or ms_to_datetime(created)
        if kind == "user":
            self.user(msg_id, data, ts)
        elif kind == "assistant":
            self.assistant(msg_id, data, ts)
        elif kind in ("system", "synthetic"):
            text = data.get("text")
            if isinstance(text, str) and text:
                role, part_kind = ("system", "system") if kind == "system" else ("user", "user_text")
                self.add(msg_id, role, part_kind, text, msg_id, ts=ts)
        elif kind == "compaction":
            self.compaction(msg_id, data, ts)
        elif kind == "shell":
            self.shell(msg_id, data, ts)

    def user(self, msg_id: str, data: dict[str, Any], ts: datetime | None) -> None:
        text = data.get("text")
        if isinstance(text, str) and text:
            self.add(msg_id, "user", "user_text", text, msg_id, ts=ts)
        files = data.get("files")
        for index, file in enumerate(files if isinstance(files, list) else []):
            where = _file_text(file)
            if where:
                self.add(f"{msg_id}:file:{index}", "user", "file", where, msg_id, ts=ts)

    def shell(self, msg_id: str, data: dict[str, Any], ts: datetime | None) -> None:
        command = data.get("command")
        if isinstance(command, str) and command:
            self.add(msg_id, "user", "user_text", command, msg_id, ts=ts)
        output = data.get("output")
        text = obj(output).get("output") if isinstance(output, dict) else output
        if isinstance(text, str) and text:
            self.add(f"{msg_id}:output", "tool", "tool_result", text, msg_id, ts=ts, tool_name=SHELL_TOOL)

    def compaction(self, msg_id: str, data: dict[str, Any], ts: datetime | None) -> None:
        if data.get("status") != "completed":
            return
        self.start = self.mark()
        summary = data.get("summary")
        self.add(
            f"{msg_id}:summary",
            "assistant",
            "summary",
            summary if isinstance(summary, str) else "",
            msg_id,
            ts=ts,
        )
        recent = data.get("recent")
        if isinstance(recent, str) and recent:
            self.add(f"{msg_id}:recent", "user", "user_text", recent, msg_id, ts=ts)

    def assistant(self, msg_id: str, data: dict[str, Any], ts: datetime | None) -> None:
        model = obj(data.get("model"))
        times = obj(data.get("time"))
        error = data.get("error")
        content = [c for c in data.get("content") or [] if isinstance(c, dict)]
        name = str(obj(error).get("name") or error or "")
        aborted_with_content = "abort" in name.lower() and any(c.get("type") != "reasoning" for c in content)
        resent = not error or aborted_with_content
        uid = self.session.uid
        call = Call(
            uid=f"{uid}:{msg_id}",
            session_uid=uid,
            seq=len(self.drafts),
            prompt_start=0,
            prompt_end=0,
            usage_status="ok",
            usage_style="anthropic",
            message_id=msg_id,
            ts=ts,
            provider=as_str(model.get("providerID")),
            model=as_str(model.get("id")),
            finish=as_str(data.get("finish")),
            error=error_text(error),
        )
        tokens = data.get("tokens")
        completed = times.get("completed") is not None
        draft = _Draft(call, self.start, self.mark(), tokens if isinstance(tokens, dict) else None, completed)
        draft.cost = data.get("cost")
        self.drafts.append(draft)
        tools: list[tuple[str, dict[str, Any]]] = []
        for index, item in enumerate(content):
            key = f"{msg_id}:{index}"
            kind = item.get("type")
            if kind in ("text", "reasoning"):
                part_kind = "assistant_text" if kind == "text" else "reasoning"
                text = str(item.get("text") or "")
                self.add(key, "assistant", part_kind, text, msg_id, ts=ts, call_uid=call.uid, resent=resent)
            elif kind == "tool":
                state = obj(item.get("state"))
                args = state.get("input") if state.get("input") is not None else {}
                self.add(
                    key,
                    "assistant",
                    "tool_call",
                    compact_json(args),
                    msg_id,
                    ts=ts,
                    tool_name=as_str(item.get("name")),
                    call_uid=call.uid,
                    resent=resent,
                )
                tools.append((key, item))
        # Tool results reach the model with the next call, after everything this call produced.
        for key, item in tools:
            tool_times = obj(item.get("time"))
            done = ms_to_datetime(tool_times.get("completed")) or ms_to_datetime(tool_times.get("ran")) or ts
            self.add(
                f"{key}:result",
                "tool",
                "tool_result",
                _result_text(obj(item.get("state"))),
                msg_id,
                ts=done,
                tool_name=as_str(item.get("name")),
                resent=resent,
                pruned_at=ms_to_datetime(tool_times.get("pruned")),
            )

    # -- result --------------------------------------------------------------------------------------

    def finish(self) -> ParsedSession:
        parts = self.number()
        calls = [d.call for d in self.drafts]
        for index, draft in enumerate(self.drafts):
            call = draft.call
            call.prompt_start, call.prompt_end = draft.start.seq, draft.end.seq
            nxt = calls[index + 1] if index + 1 < len(calls) else None
            same_model = nxt is None or (nxt.provider, nxt.model) == (call.provider, call.model)
            _apply_usage(draft, same_model)
        for call in calls:
            route_to_vendor(call)
        return ParsedSession(self.session, calls, parts)


def _file_text(file: object) -> str | None:
    if isinstance(file, str):
        return file or None
    info = obj(file)
    for key in ("url", "uri", "path", "filename", "name"):
        value = info.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _result_text(state: dict[str, Any]) -> str:
    status = state.get("status")
    if status == "error":
        error = state.get("error")
        return error if isinstance(error, str) else (error_text(error) or "")
    if status != "completed":
        return INTERRUPTED_TOOL
    texts = [
        str(c.get("text") or "")
        for c in state.get("content") or []
        if isinstance(c, dict) and c.get("type") == "text"
    ]
    if texts:
        return "\n".join(texts)
    result = state.get("result")
    if isinstance(result, str):
        return result
    for value in (result, state.get("structured")):
        if value is not None:
            return compact_json(value)
    return ""


def _apply_usage(draft: _Draft, same_model_next: bool) -> None:
    call, tokens = draft.call, draft.tokens
    raw: dict[str, Any] = {}
    if tokens is not None:
        raw["tokens"] = tokens
    if draft.cost is not None:
        raw["cost"] = draft.cost
    call.usage_raw = raw or None
    if tokens is None or not draft.completed:
        # An unfinished step's tokens (if any) are not the call's: keep them raw only.
        call.usage_status = "missing"
        return
    counts = usage_counts(tokens)
    if counts is None:
        call.usage_status = INVALID
        return
    values = counts[:5]  # 2.x records no total: it is the sum
    call.input, call.output, call.reasoning, call.cache_read, call.cache_write = values
    if is_missing(*values):
        call.usage_status = "missing"
        return
    call.total = sum(v or 0 for v in values)
    call.ctx = context_tokens("anthropic", call.input or 0, call.cache_read, call.cache_write)
    resent = same_model_next and bool(call.reasoning)
    call.carry = carried_tokens("anthropic", call.output or 0, call.reasoning, reasoning_resent=resent)


def build_session_v2(session: Session, rows: list[Row]) -> ParsedSession:
    """Calls and parts of one session from its `session_message` rows in `seq` order."""
    builder = _Builder(session)
    for msg_id, kind, data, created in rows:
        builder.row(msg_id, kind, data, created)
    return builder.finish()
