"""Cline's session folders since its SDK (v4.x; layout `cline-sdk`), each read as one source.

Facts relied on (cline/cline, `sdk/` at 21cb8d25):

- A session is a folder `<sessions dir>/<id>/` holding `<id>.messages.json` and the manifest `<id>.json`;
  a sub-agent's messages are `<agent id>.messages.json` (a team task's `<agent>__<task>.messages.json`)
  in its root session's folder, and `<id>.compaction.json` is a compacted view of the history, not read
  (`sdk/packages/core/src/services/session-artifacts.ts`). The sessions dir is `$CLINE_SESSION_DATA_DIR`,
  else `$CLINE_DATA_DIR/sessions`, else `$CLINE_DIR/data/sessions`, else `~/.cline/data/sessions`
  (`sdk/packages/shared/src/storage/paths.ts`).
- The messages file is `{version: 1, updated_at, agent, sessionId, messages, system_prompt?}`
  (`sdk/packages/core/src/services/session-data.ts` `buildMessagesFilePayload`); another `version` is
  a format calib does not know (an error naming the file). The manifest is `{version: 1, session_id,
  started_at, ended_at, provider, model, cwd, workspace_root, metadata {title}, ...}` (same file,
  `buildManifestFromRow`).
- A message is `{id, role: user|assistant, content: string | blocks, ts, modelInfo {id, provider,
  family}, metrics {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost}}`; blocks are
  `text`, `file {path, content}`, `image {data, mediaType}`, `tool_use`, `tool_result {tool_use_id,
  name, content}`, `thinking`, `redacted_thinking` (`sdk/packages/shared/src/llms/messages.ts`).
- `inputTokens` includes cache reads and writes: the AI SDK's input total, from which the SDK prices the
  uncached rest as `inputTokens - cacheReadTokens - cacheWriteTokens`
  (`sdk/packages/llms/src/providers/ai-sdk.ts`). calib stores that rest as `input` (Anthropic style).
- When no assistant message of a run (the messages one prompt appended) carries metrics, the SDK writes
  the run's total usage on the run's last assistant message (`session-data.ts`
  `withLatestAssistantTurnMetadata`), shaped like a call's own. calib takes the last assistant message
  of a run of n >= 2 calls whose only metrics are its own as such a total (`turn_summed`: kept, never a
  per-call target) when its `inputTokens` is at least n times the prompt of the last earlier call that
  recorded its own usage (a total adds n prompts, each at least that large while nothing is compacted),
  or when no earlier call recorded any. A run of one call is that call's usage.
- The system prompt is stored (`system_prompt`) and sent first: it is the session's first part, a
  `system` part.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calib.core.errors import InputError, InputWarning
from calib.core.records import Call, ParsedSession, Part, Session
from calib.core.tally import WarningTally
from calib.importers.common import ms_to_datetime, timestamp
from calib.importers.opencode.providers import vendor
from calib.importers.taskfolder import (
    Usage,
    checked,
    inclusive,
    json_value,
    message_entries,
    no_usage,
    title_of,
)

LAYOUT = "cline-sdk"
MESSAGES_SUFFIX = ".messages.json"
VERSION = 1
_REST = "the rest of the session folder was imported"
_METRIC_KEYS = {
    "inputTokens": "tokensIn",
    "outputTokens": "tokensOut",
    "cacheReadTokens": "cacheReads",
    "cacheWriteTokens": "cacheWrites",
}


def is_session_folder(path: Path) -> bool:
    """True when the folder holds `<its name>.messages.json`."""
    try:
        return (path / f"{path.name}{MESSAGES_SUFFIX}").is_file()
    except OSError:
        return False


def _object(path: Path, lost: str, warnings: list[InputWarning]) -> dict[str, Any] | None:
    result: dict[str, Any] | None = json_value(path, dict, lost, warnings)
    return result


def _check_version(path: Path, document: dict[str, Any]) -> None:
    version = document.get("version")
    if version != VERSION:
        raise InputError(
            f"Cline session file version {version!r} is not one calib knows (it reads version {VERSION})",
            path=str(path),
            hint="update calib; the other sources were still imported",
        )


def _usage(metrics: Any) -> Usage:
    if not isinstance(metrics, dict):
        return no_usage()
    info = {short: metrics.get(key) for key, short in _METRIC_KEYS.items()}
    return checked(info, inclusive)


def _new_prompt(message: dict[str, Any]) -> bool:
    """True for a user message that is a prompt, not only tool results (it starts a run)."""
    content = message.get("content")
    if isinstance(content, str):
        return True
    return any(not (isinstance(b, dict) and b.get("type") == "tool_result") for b in content or ())


def _input(message: dict[str, Any]) -> int | None:
    metrics = message.get("metrics")
    value = metrics.get("inputTokens") if isinstance(metrics, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def run_totals(messages: list[dict[str, Any]]) -> set[int]:
    """Indexes of assistant messages whose metrics are their run's total (see the module docstring)."""
    out: set[int] = set()
    run: list[int] = []
    prev: int | None = None  # the prompt of the last call known to record its own usage

    def close() -> None:
        nonlocal prev
        with_metrics = [i for i in run if isinstance(messages[i].get("metrics"), dict)]
        last = _input(messages[run[-1]]) if run else None
        if len(run) >= 2 and with_metrics == [run[-1]] and (prev is None or (last or 0) >= len(run) * prev):
            out.add(run[-1])
        else:
            for i in with_metrics:
                prev = _input(messages[i]) or prev
        run.clear()

    for index, message in enumerate(messages):
        if message.get("role") == "user" and _new_prompt(message):
            close()
        elif message.get("role") == "assistant":
            run.append(index)
    close()
    return out


def build(
    path: Path,
    document: dict[str, Any],
    uid: str,
    native: str,
    manifest: dict[str, Any] | None,
    parent_uid: str | None,
    warnings: list[InputWarning],
) -> ParsedSession:
    """One messages file as a session (`manifest` gives its project, title and times)."""
    raw = document.get("messages")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(raw if isinstance(raw, list) else ()):
        if isinstance(message, dict) and message.get("role") in ("user", "assistant"):
            messages.append(message)
        else:
            warnings.append(
                InputWarning(
                    f"message {index} of this file is not a user or assistant message; left out, {_REST}",
                    path=str(path),
                )
            )
    totals = run_totals(messages)
    parts: list[Part] = []
    calls: list[Call] = []
    tool_names: dict[str, str] = {}

    def add(
        role: str, kind: str, text: str, ts: Any, mid: str | None, name: str | None, call: str | None
    ) -> None:
        seq = len(parts)
        parts.append(Part(f"{uid}#{seq}", uid, seq, role, kind, text, mid, name, call, ts))

    system = document.get("system_prompt")
    if isinstance(system, str) and system:
        add("system", "system", system, None, None, None, None)
    title: str | None = None
    for index, message in enumerate(messages):
        mid = message.get("id") if isinstance(message.get("id"), str) else f"m{index}"
        ts = ms_to_datetime(message.get("ts"))
        call_uid: str | None = None
        if message.get("role") == "assistant":
            usage = _usage(message.get("metrics"))
            if index in totals and usage.status == "ok":
                usage.status = "turn_summed"
            found = message.get("modelInfo")
            info: dict[str, Any] = found if isinstance(found, dict) else {}
            model = info.get("id") if isinstance(info.get("id"), str) else None
            provider = info.get("provider") if isinstance(info.get("provider"), str) else None
            call_uid = f"{uid}#c{len(calls)}"
            metrics = message.get("metrics")
            calls.append(
                Call(
                    uid=call_uid,
                    session_uid=uid,
                    seq=len(calls),
                    prompt_start=0,
                    prompt_end=len(parts),
                    usage_status=usage.status,
                    usage_style=usage.style,
                    message_id=mid,
                    ts=ts,
                    provider=vendor(provider, model),
                    model=model,
                    input=usage.input,
                    output=usage.output,
                    cache_read=usage.cache_read,
                    cache_write=usage.cache_write,
                    usage_raw=metrics if isinstance(metrics, dict) else None,
                    ctx=usage.ctx,
                    carry=usage.carry,
                )
            )
        role = str(message["role"])
        for kind, text, name in message_entries(message, tool_names):
            if title is None and kind == "user_text":
                title = title_of(text)
            add(role, kind, text, ts, mid, name, call_uid)
    manifest = manifest or {}
    meta_title = (
        (manifest.get("metadata") or {}).get("title") if isinstance(manifest.get("metadata"), dict) else None
    )
    project = manifest.get("workspace_root") or manifest.get("cwd")
    times = [p.ts for p in parts if p.ts is not None]
    session = Session(
        uid=uid,
        tool="cline",
        native_id=native,
        source_path=str(path.parent),
        layout=LAYOUT,
        project=project if isinstance(project, str) else None,
        title=meta_title if isinstance(meta_title, str) and parent_uid is None else title,
        started_at=timestamp(manifest.get("started_at")) or (min(times) if times else None),
        ended_at=timestamp(manifest.get("ended_at")) or (max(times) if times else None),
        parent_uid=parent_uid,
        is_subagent=parent_uid is not None,
        meta={"agent": document["agent"]} if isinstance(document.get("agent"), str) else None,
    )
    return ParsedSession(session, calls, parts)


def parse_session_folder(folder: Path) -> list[ParsedSession | InputWarning]:
    """A session folder: the lead session, then each sub-agent's, then a warning per damaged file."""
    sid = folder.name
    warnings: list[InputWarning] = []
    out: list[ParsedSession | InputWarning] = []
    manifest_path = folder / f"{sid}.json"
    manifest = None
    if manifest_path.is_file():
        manifest = _object(manifest_path, f"the session's title and times were left out, {_REST}", warnings)
    main = folder / f"{sid}{MESSAGES_SUFFIX}"
    lead_uid = f"cline:{sid}"
    document = _object(main, f"the session's messages were left out, {_REST}", warnings)
    if document is not None:
        _check_version(main, document)
        out.append(build(main, document, lead_uid, sid, manifest, None, warnings))
    for child in sorted(folder.iterdir()):
        name = child.name
        if not name.endswith(MESSAGES_SUFFIX) or child == main or not child.is_file():
            continue
        stem = name[: -len(MESSAGES_SUFFIX)]
        sub = _object(child, f"this sub-agent's messages were left out, {_REST}", warnings)
        if sub is None:
            continue
        _check_version(child, sub)
        out.append(build(child, sub, f"{lead_uid}:{stem}", stem, None, lead_uid, warnings))
    tally = WarningTally(str(folder))
    tally.extend(warnings)
    return [*out, *tally]
