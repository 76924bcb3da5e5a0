"""A chat log read into its session: the path of records the conversation took, laid out as parts
and calls (the rules of the package docstring)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.records import Call, ParsedSession, Part, Session
from calib.importers.common import compact_json, timestamp
from calib.importers.qwen_code.log import NAME, Log
from calib.importers.qwen_code.usage import call_usage

LAYOUT = "qwen-code-jsonl"
LAYOUTS = (LAYOUT,)

API_RESPONSE = "qwen-code.api_response"
# `auth_type` of the api_response event -> the provider calib files the call under.
AUTH_PROVIDERS = {
    "qwen-oauth": "qwen",
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini-api-key": "google",
    "vertex-ai": "google",
    "oauth-personal": "google",
}
# Records whose `message` the model is sent: what the user typed (or an injected notification) and
# the results of tools.
_SENT = ("user", "tool_result")

Records = list[tuple[int, dict[str, Any]]]


def conversation_path(records: Records) -> tuple[Records, int]:
    """The records on the path from the first record to the last one written (its `parentUuid`
    chain), in file order, and how many records lie off it (abandoned branches, side chains).

    A parent that is not in the file (its line was damaged) is taken to be the record written just
    before: Qwen Code appends each record as the child of the one before it."""
    main = [(n, r) for n, r in records if r.get("isSidechain") is not True]
    if not main:
        return [], len(records)
    index = {r["uuid"]: i for i, (_, r) in enumerate(main)}
    on: set[int] = set()
    at: int | None = len(main) - 1
    while at is not None and at not in on:
        on.add(at)
        parent = main[at][1].get("parentUuid")
        if parent is None:
            break
        at = index.get(parent, at - 1 if at > 0 else None) if isinstance(parent, str) else None
    path = [main[i] for i in sorted(on)]
    return path, len(records) - len(path)


def _provider(auth_type: Any, model: str | None) -> str | None:
    if isinstance(auth_type, str) and auth_type in AUTH_PROVIDERS:
        return AUTH_PROVIDERS[auth_type]
    name = (model or "").lower()
    for prefix, provider in (
        ("gemini", "google"),
        ("claude", "anthropic"),
        ("gpt", "openai"),
        ("qwen", "qwen"),
        ("coder-model", "qwen"),
    ):
        if name.startswith(prefix):
            return provider
    return None


def response_text(response: Any) -> str:
    """The part text of a `functionResponse.response`: its `output` (or `error`) string when that is
    all it holds, else its compact JSON."""
    if isinstance(response, dict) and len(response) == 1:
        value = next(iter(response.values()))
        if isinstance(value, str) and next(iter(response)) in ("output", "error"):
            return value
    return compact_json(response)


def _file_text(key: str, blob: Any) -> str:
    mime = blob.get("mimeType") if isinstance(blob, dict) else None
    return f"[{key} {mime or 'unknown'}]"


class _Layout:
    """Parts and calls of one session as they are laid out."""

    def __init__(self, uid: str) -> None:
        self.uid = uid
        self.parts: list[Part] = []
        self.calls: list[Call] = []
        self.start = 0
        self.pending: list[Part] = []  # parts sent since the last call

    def add(
        self,
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        message_id: str | None,
        *,
        tool: str | None = None,
        call_uid: str | None = None,
        resent: bool = True,
    ) -> Part:
        part = Part(
            uid=f"{self.uid}:p{len(self.parts)}",
            session_uid=self.uid,
            seq=len(self.parts),
            role=role,
            kind=kind,
            text=text,
            message_id=message_id,
            tool_name=tool,
            call_uid=call_uid,
            ts=ts,
            resent=resent,
        )
        self.parts.append(part)
        if call_uid is None:
            self.pending.append(part)
        return part

    def content(
        self,
        message: Any,
        role: str,
        text_kind: str,
        ts: datetime | None,
        message_id: str | None,
        call_uid: str | None = None,
    ) -> None:
        """The parts one Gemini `Content` sends (a model's own output when `call_uid` is set)."""
        items = message.get("parts") if isinstance(message, dict) else None
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            if "functionResponse" in item:
                response = item["functionResponse"] if isinstance(item["functionResponse"], dict) else {}
                name = response.get("name") if isinstance(response.get("name"), str) else None
                self.add(
                    "tool", "tool_result", response_text(response.get("response")), ts, message_id, tool=name
                )
            elif "functionCall" in item:
                call = item["functionCall"] if isinstance(item["functionCall"], dict) else {}
                name = call.get("name") if isinstance(call.get("name"), str) else None
                args = call.get("args") if call.get("args") is not None else {}
                self.add(role, "tool_call", compact_json(args), ts, message_id, tool=name, call_uid=call_uid)
            elif "inlineData" in item or "fileData" in item:
                key = "inlineData" if "inlineData" in item else "fileData"
                self.add(role, "file", _file_text(key, item[key]), ts, message_id)
            elif isinstance(item.get("text"), str) and item["text"]:
                if item.get("thought") is True:
                    # Thought text: kept, never sent back as input (its tokens are no carry).
                    self.add(role, "reasoning", item["text"], ts, message_id, call_uid=call_uid, resent=False)
                else:
                    self.add(role, text_kind, item["text"], ts, message_id, call_uid=call_uid)


def _title(path: Records) -> str | None:
    title = None
    for _, record in path:
        payload = record.get("systemPayload")
        if record.get("subtype") != "custom_title" or not isinstance(payload, dict):
            continue
        if isinstance(payload.get("customTitle"), str) and payload["customTitle"]:
            title = payload["customTitle"]
    if title is not None:
        return title
    for _, record in path:
        if record.get("type") == "user" and record.get("subtype") is None:
            message = record.get("message")
            items = message.get("parts") if isinstance(message, dict) else None
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip():
                    return str(item["text"].strip().splitlines()[0][:200])
    return None


def parse_session(path: Path, log: Log) -> ParsedSession:
    """The session a chat log holds (one per file: `<sessionId>.jsonl`)."""
    records = log.records
    session_id = next((r["sessionId"] for _, r in records if r.get("sessionId")), path.stem)
    uid = f"{NAME}:{session_id}"
    on_path, off_path = conversation_path(records)
    layout = _Layout(uid)
    event: dict[str, Any] | None = None
    compactions: list[dict[str, Any]] = []
    telemetry = 0
    for _, record in on_path:
        kind = record.get("type")
        ts = timestamp(record.get("timestamp"))
        rid = record.get("uuid")
        if kind == "system":
            payload = record.get("systemPayload")
            payload = payload if isinstance(payload, dict) else {}
            subtype = record.get("subtype")
            if subtype == "ui_telemetry":
                ui = payload.get("uiEvent")
                if isinstance(ui, dict) and ui.get("event.name") == API_RESPONSE:
                    event, telemetry = ui, telemetry + 1
            elif subtype == "chat_compression" and isinstance(payload.get("compressedHistory"), list):
                _compress(layout, payload, ts, rid)
                info = payload.get("info")
                info = info if isinstance(info, dict) else {}
                compactions.append(
                    {
                        "at_call": len(layout.calls),
                        "original_tokens": info.get("originalTokenCount"),
                        "new_tokens": info.get("newTokenCount"),
                    }
                )
            continue
        if kind in _SENT:
            layout.content(record.get("message"), "user", "user_text", ts, rid)
            continue
        # An assistant record: one call, answering everything laid out so far.
        model = record.get("model") if isinstance(record.get("model"), str) else None
        usage = call_usage(record.get("usageMetadata"))
        call_uid = f"{uid}:{rid}"
        layout.calls.append(
            Call(
                uid=call_uid,
                session_uid=uid,
                seq=len(layout.calls),
                prompt_start=layout.start,
                prompt_end=len(layout.parts),
                usage_status=usage.status,
                usage_style=usage.style,
                message_id=rid,
                ts=ts,
                provider=_provider(event.get("auth_type") if event else None, model),
                model=model,
                input=usage.input,
                output=usage.output,
                reasoning=usage.reasoning,
                cache_read=usage.cache_read,
                tool_prompt=usage.tool_prompt,
                total=usage.total,
                usage_raw=usage.raw,
                ctx=usage.ctx,
                carry=usage.carry,
            )
        )
        event = None
        layout.pending = []
        layout.content(record.get("message"), "assistant", "assistant_text", ts, rid, call_uid)
    stamps = [t for t in (timestamp(r.get("timestamp")) for _, r in records) if t is not None]
    cwds = [r["cwd"] for _, r in records if isinstance(r.get("cwd"), str) and r["cwd"]]
    versions = sorted({r["version"] for _, r in records if isinstance(r.get("version"), str)})
    meta: dict[str, Any] = {
        "versions": versions,
        "compactions": compactions,
        "made_up_usage_calls": sum(1 for c in layout.calls if c.usage_status == "suspect"),
        "api_response_events": telemetry,
        "off_path_records": off_path,
        "skipped_lines": len(log.skipped),
    }
    session = Session(
        uid=uid,
        tool=NAME,
        native_id=session_id,
        source_path=str(path),
        layout=LAYOUT,
        project=cwds[0] if cwds else None,
        title=_title(on_path),
        started_at=min(stamps) if stamps else None,
        ended_at=max(stamps) if stamps else None,
        meta={k: v for k, v in meta.items() if v not in (0, [], None)} or None,
    )
    return ParsedSession(session, layout.calls, layout.parts)


def _compress(layout: _Layout, payload: dict[str, Any], ts: datetime | None, rid: Any) -> None:
    """A `chat_compression` record: the model is sent its `compressedHistory` from then on (a summary
    user turn, the model's acknowledgement, restored files), then any tool results that were waiting
    to be sent when it ran (auto-compaction inside a tool loop)."""
    waiting = [p for p in layout.pending if p.kind == "tool_result"]
    layout.start = len(layout.parts)
    for content in payload["compressedHistory"]:
        if not isinstance(content, dict):
            continue
        if content.get("role") == "model":
            layout.content(content, "assistant", "assistant_text", ts, rid)
        else:
            layout.content(content, "user", "summary", ts, rid)
    for part in waiting:
        layout.add(part.role, part.kind, part.text, part.ts, part.message_id, tool=part.tool_name)
