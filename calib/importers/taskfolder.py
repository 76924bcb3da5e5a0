"""The task folders Cline (before its SDK) and Roo Code (and Kilo Code's extension) keep, read as one source.

Shared by `calib.importers.cline` (legacy layout) and `calib.importers.roo_code`; each passes its own
usage rule (`UsageRule`) and model lookup. Facts this module relies on, with where they were read:

- A task is a folder `<globalStorage>/<extension id>/tasks/<task id>/` holding `ui_messages.json` (what
  the webview shows) and `api_conversation_history.json` (the messages sent), each one JSON array,
  rewritten whole on every change (cline/cline `apps/vscode/src/core/storage/disk.ts` `GlobalFileNames`,
  `apps/vscode/src/sdk/legacy-state-reader.ts`; RooCodeInc/Roo-Code `src/utils/storage.ts`,
  `src/core/task-persistence/apiMessages.ts`).
- One request is one `{"type": "say", "say": "api_req_started", "ts", "text"}` entry of `ui_messages.json`;
  `text` is a JSON string, first written without counts and rewritten with `tokensIn`, `tokensOut`,
  `cacheWrites`, `cacheReads` and `cost` once the stream ends (cline/cline
  `apps/vscode/src/shared/ExtensionMessage.ts` `ClineApiReqInfo`, `src/core/task/utils.ts@v3.85.0`
  `updateApiReqMsg`; Roo-Code `src/core/task/Task.ts`). A request that failed or was retried keeps
  its entry, without counts or with the counts of the partial stream.
- `api_conversation_history.json` holds Anthropic-format messages `{role, content, ts?}` (content a string
  or blocks `text`, `image`, `tool_use`, `tool_result`, `thinking`, `redacted_thinking`). The user message
  of a request is written right after its `api_req_started` entry, the assistant message when the
  stream has ended, both with `ts = Date.now()` (cline/cline `src/core/task/index.ts@v3.85.0`
  `recursivelyMakeClineRequests`; Roo-Code `src/core/task/Task.ts`, `ApiMessage` in `apiMessages.ts`).

How calib reads it:

- Each assistant message of the history is one call. Its usage is that of the last `api_req_started`
  with counts whose `ts` lies after the previous assistant message and at or before this one (a retried
  request leaves earlier entries in that window); when some message has no `ts` (older versions),
  requests with counts are paired with assistant messages in order. A call whose window holds no counts
  has `missing` usage. The call's time is its request's `ts`.
- Parts follow the history: a user message's adjacent text blocks are one `user_text` part (joined by a
  blank line: Roo sends the task and its `<environment_details>` as two blocks of one message), a
  `tool_result` a `tool_result` part (its text blocks joined by newlines), an image a `file` part with a
  placeholder; assistant `text`, `thinking`/`redacted_thinking` and `tool_use` are `assistant_text`,
  `reasoning` and `tool_call` (compact JSON of the input). Roo's stored reasoning items (`type:
  "reasoning"`, encrypted) hold no text and give no part. A history message flagged `isSummary` (Roo's
  condensing) is a `summary` part; the condensed-away messages stay in the file, and calib keeps every
  prompt starting at the first part (no compaction is read from these folders).
- Bad input costs only itself: a `ui_messages.json` that is not a JSON array (cut off while being
  rewritten) is one warning naming it, and the calls keep no usage; an `api_conversation_history.json`
  that is not one is one warning, and the calls come from the requests alone, with no parts; an entry
  or message that is not an object, or an `api_req_started` whose text is not a JSON object, is one
  warning naming the file and the entry.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning
from calib.core.paths import open_regular, read_regular
from calib.core.records import Call, ParsedSession, Part, Session, UsageStatus, UsageStyle
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts
from calib.importers.claude_code.content import media_text
from calib.importers.common import compact_json, damaged_file, ms_to_datetime

UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
# The extension ids whose globalStorage folder holds task folders, and the agent each is.
CLINE_EXTENSION = "saoudrizwan.claude-dev"
ROO_EXTENSION = "rooveterinaryinc.roo-cline"
KILO_EXTENSION = "kilocode.kilo-code"
EXTENSION_AGENT = {CLINE_EXTENSION: "cline", ROO_EXTENSION: "roo-code", KILO_EXTENSION: "roo-code"}
# VS Code and its forks: the folder each keeps under the OS's application-data folder.
EDITORS = ("Code", "Code - Insiders", "Cursor", "Windsurf", "VSCodium")
# How much of `ui_messages.json` sniffing reads to tell Cline's from Roo's outside their usual folders.
_SNIFF_BYTES = 65536
_REST = "the rest of the task was imported"
# What to do about a file the agent rewrites whole and may have been caught half-written.
RETRY_HINT = "ingest again once the agent has finished writing it"
_TITLE_CHARS = 80


def editor_storage_dirs(extension: str) -> list[Path]:
    """`<user dir>/User/globalStorage/<extension>/tasks` of VS Code and its forks on Linux, macOS and Windows.

    Linux: `$XDG_CONFIG_HOME` (default `~/.config`) and VS Code Server's `~/.vscode-server/data`; macOS:
    `~/Library/Application Support`; Windows: `%APPDATA%` (default `~/AppData/Roaming`).
    """
    home = Path.home()
    xdg = os.environ.get("XDG_CONFIG_HOME", "").strip()
    appdata = os.environ.get("APPDATA", "").strip()
    bases = [
        Path(xdg) if xdg else home / ".config",
        home / "Library" / "Application Support",
        Path(appdata) if appdata else home / "AppData" / "Roaming",
    ]
    users = [base / editor for base in bases for editor in EDITORS]
    users.append(home / ".vscode-server" / "data")
    return [user / "User" / "globalStorage" / extension / "tasks" for user in users]


def _regular(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def is_task_folder(path: Path) -> bool:
    """True when the folder holds a task's `ui_messages.json` or `api_conversation_history.json`."""
    return _regular(path / UI_MESSAGES) or _regular(path / API_HISTORY)


def task_agent(path: Path) -> str | None:
    """`"cline"` or `"roo-code"` for a task folder, from the extension folder it lies in, else its content.

    Outside a known extension folder (a copied task), Roo's request entries name their `apiProtocol`
    and Cline's hold the `request` text or a `modelInfo`: the first 64 KB of `ui_messages.json` tell.
    Cline's own data folder (`~/.cline/data/tasks`) holds Cline's.
    """
    if not is_task_folder(path):
        return None
    for parent in path.parents:
        agent = EXTENSION_AGENT.get(parent.name)
        if agent is not None:
            return agent
    text = sniff_head(path / UI_MESSAGES)
    if b'\\"apiProtocol\\"' in text:
        return "roo-code"
    if b'\\"request\\"' in text or b'"modelInfo"' in text:
        return "cline"
    if path.parent.name == "tasks" and path.parent.parent.name == "data" and ".cline" in path.parts:
        return "cline"
    return None


def sniff_head(path: Path) -> bytes:
    """The first `_SNIFF_BYTES` of a regular file (empty when it cannot be read)."""
    try:
        with open_regular(path) as fh:
            return fh.read(_SNIFF_BYTES)
    except OSError:
        return b""


def load_json_file(path: Path) -> Any:
    """The JSON value in a regular file; `ValueError` naming what is wrong when it holds none."""
    data = read_regular(path)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg}, cut off while being written?)") from exc


def json_value(path: Path, expected: type[Any], lost: str, out: list[InputWarning]) -> Any:
    """The JSON value of type `expected` (`dict` or `list`) in `path`; None, with a warning in `out`,
    when the file holds no such value (cut off while being written: `RETRY_HINT`)."""
    try:
        value = load_json_file(path)
    except ValueError as exc:
        warning = damaged_file(path, str(exc), lost)
        warning.hint = RETRY_HINT
        out.append(warning)
        return None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=str(path)) from exc
    if not isinstance(value, expected):
        out.append(damaged_file(path, f"not a JSON {'object' if expected is dict else 'array'}", lost))
        return None
    return value


def _array(path: Path, lost: str, out: list[InputWarning]) -> list[Any] | None:
    """The JSON array in `path` (None when absent); a warning in `out` when the file holds none."""
    if not _regular(path):
        return None
    result: list[Any] | None = json_value(path, list, lost, out)
    return result


# -- usage ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Usage:
    """A call's usage in calib's terms, as a rule made it from one request's counts."""

    status: UsageStatus
    style: UsageStyle
    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    ctx: int | None = None
    carry: int | None = None


# A usage rule: the request's parsed `text` and its entry (for `modelInfo`) -> the call's usage.
UsageRule = Callable[[dict[str, Any], dict[str, Any]], Usage]

COUNT_KEYS = ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")


def has_counts(info: dict[str, Any]) -> bool:
    """True when a request's text carries token counts (it finished, or stopped with a partial count)."""
    return any(info.get(key) is not None for key in COUNT_KEYS)


def request_counts(info: dict[str, Any]) -> tuple[int, int, int, int] | None:
    """(tokensIn, tokensOut, cacheReads, cacheWrites), absent ones 0; None when one is not a count."""
    counts = token_counts(*(info.get(key) for key in COUNT_KEYS))
    if counts is None:
        return None
    return (counts[0] or 0, counts[1] or 0, counts[2] or 0, counts[3] or 0)


def exclusive(tokens_in: int, tokens_out: int, read: int, write: int) -> Usage:
    """Usage whose input count leaves the cache out (Anthropic's convention): ctx = in + read + write."""
    return Usage(
        "ok",
        "anthropic",
        tokens_in,
        tokens_out,
        read,
        write,
        context_tokens("anthropic", tokens_in, read, write),
        carried_tokens("anthropic", tokens_out),
    )


def inclusive(tokens_in: int, tokens_out: int, read: int, write: int) -> Usage:
    """Usage whose input count already holds the cached tokens: ctx = in.

    Stored Anthropic-style, `input` being the uncached rest, so that every call of these agents is
    priced and compared alike (the counts as recorded stay in `usage_raw`). A write count that does not
    fit inside the input (Cline's OpenAI-compatible handlers put DeepSeek's cache-miss count there) is
    no cache write and is stored as 0; an input below the cache reads cannot hold them and is taken as
    exclusive.
    """
    if tokens_in >= read + write:
        return exclusive(tokens_in - read - write, tokens_out, read, write)
    if tokens_in >= read:
        return exclusive(tokens_in - read, tokens_out, read, 0)
    return exclusive(tokens_in, tokens_out, read, write)


def no_usage(status: UsageStatus = "missing") -> Usage:
    """The usage of a call that recorded none (or, `INVALID`, one whose counts are not counts)."""
    return Usage(status, "anthropic")


def checked(info: dict[str, Any], rule: Callable[[int, int, int, int], Usage]) -> Usage:
    """`rule` applied to a request's counts, after the checks every rule shares (missing, invalid)."""
    if not has_counts(info):
        return no_usage()
    counts = request_counts(info)
    if counts is None:
        return no_usage(INVALID)
    if is_missing(*counts):
        return no_usage()
    return rule(*counts)


# -- reading a folder -------------------------------------------------------------------------------


@dataclass(slots=True)
class Request:
    """One `api_req_started` entry: its time, its parsed text and the entry itself."""

    ts: float | None
    info: dict[str, Any]
    entry: dict[str, Any]


@dataclass(slots=True)
class Task:
    """What a task folder holds, as read: its UI entries, its requests and its history (None if unusable)."""

    path: Path
    ui: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    history: list[dict[str, Any]] | None = None
    warnings: list[InputWarning] = field(default_factory=list)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def read_task(path: Path) -> Task:
    """Read a task folder's two files, each damaged one (or entry) becoming a warning."""
    task = Task(path)
    ui_path, history_path = path / UI_MESSAGES, path / API_HISTORY
    ui = _array(ui_path, f"the usage of this task's requests was left out, {_REST}", task.warnings)
    for index, entry in enumerate(ui or ()):
        if not isinstance(entry, dict):
            task.warnings.append(_entry_warning(ui_path, index, "not a JSON object"))
            continue
        task.ui.append(entry)
        if entry.get("say") != "api_req_started":
            continue
        text = entry.get("text")
        try:
            info = orjson.loads(text) if isinstance(text, str) else None
        except orjson.JSONDecodeError:
            info = None
        if not isinstance(info, dict):
            task.warnings.append(_entry_warning(ui_path, index, "a request whose text is not a JSON object"))
            continue
        task.requests.append(Request(_number(entry.get("ts")), info, entry))
    history = _array(
        history_path, f"the messages of this task were left out (its calls kept), {_REST}", task.warnings
    )
    if history is not None:
        task.history = []
        for index, message in enumerate(history):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                task.warnings.append(_entry_warning(history_path, index, "not a user or assistant message"))
                continue
            task.history.append(message)
    if ui is None and history is None and not task.warnings:
        raise InputError(
            f"no {UI_MESSAGES} or {API_HISTORY} in this task folder",
            path=str(path),
            hint="pass a task folder of Cline or Roo Code",
        )
    return task


def _entry_warning(path: Path, index: int, what: str) -> InputWarning:
    return InputWarning(f"entry {index} of this file is {what}; left out, {_REST}", path=str(path))


def pair_requests(requests: list[Request], assistant_ts: list[float | None]) -> list[Request | None]:
    """The request of each assistant message (see the module docstring), None where there is none."""
    if all(ts is not None for ts in assistant_ts) and all(r.ts is not None for r in requests):
        out: list[Request | None] = []
        low = float("-inf")
        at = 0
        for ts in assistant_ts:
            assert ts is not None
            window: list[Request] = []
            while at < len(requests) and (requests[at].ts or 0.0) <= ts:
                if (requests[at].ts or 0.0) > low:
                    window.append(requests[at])
                at += 1
            counted = [r for r in window if has_counts(r.info)]
            out.append(counted[-1] if counted else (window[-1] if window else None))
            low = ts
        return out
    counted = [r for r in requests if has_counts(r.info)]
    return [counted[i] if i < len(counted) else None for i in range(len(assistant_ts))]


# -- laying a task out ------------------------------------------------------------------------------

# (kind, text, tool name)
Entry = tuple[str, str, str | None]


def _result_text(block: dict[str, Any]) -> tuple[str, list[Entry]]:
    content = block.get("content")
    files: list[Entry] = []
    if content is None:
        return "", files
    if isinstance(content, str):
        return content, files
    if not isinstance(content, list):
        return compact_json(content), files
    texts = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
        elif isinstance(item, dict) and media_text(item) is not None:
            files.append(("file", media_text(item) or "", None))
        elif isinstance(item, dict) and item.get("type") == "file" and isinstance(item.get("content"), str):
            files.append(("file", item["content"], None))
        else:
            texts.append(item if isinstance(item, str) else compact_json(item))
    return "\n".join(texts), files


def message_entries(message: dict[str, Any], tool_names: dict[str, str]) -> list[Entry]:
    """The parts one history message sends, as (kind, text, tool name) in order."""
    content = message.get("content")
    role = message.get("role")
    if message.get("type") == "reasoning":
        return []  # Roo's stored reasoning item: encrypted, no text
    if role == "user":
        kind = "summary" if message.get("isSummary") else "user_text"
        if isinstance(content, str):
            return [(kind, content, None)] if content else []
        out: list[Entry] = []
        texts: list[str] = []

        def flush() -> None:
            if texts:
                out.append((kind, "\n\n".join(texts), None))
                texts.clear()

        for block in content if isinstance(content, list) else ():
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
                continue
            flush()
            if btype == "tool_result":
                text, files = _result_text(block)
                tool_id = block.get("tool_use_id")
                name = block.get("name") if isinstance(block.get("name"), str) else None
                out.append(("tool_result", text, name or tool_names.get(str(tool_id))))
                out.extend(files)
            elif btype == "file" and isinstance(block.get("content"), str):
                out.append(("file", block["content"], None))
            elif media_text(block) is not None:
                out.append(("file", media_text(block) or "", None))
            elif btype == "image":
                out.append(("file", f"[image {block.get('mediaType') or 'unknown'}]", None))
            else:
                out.append((kind, compact_json(block), None))
        flush()
        return out
    if isinstance(content, str):
        return [("assistant_text", content, None)] if content else []
    out = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            if isinstance(block.get("text"), str) and block["text"]:
                out.append(("assistant_text", block["text"], None))
        elif btype == "thinking":
            if isinstance(block.get("thinking"), str) and block["thinking"]:
                out.append(("reasoning", block["thinking"], None))
        elif btype == "redacted_thinking":
            out.append(("reasoning", "[redacted thinking]", None))
        elif btype == "tool_use":
            name = block.get("name") if isinstance(block.get("name"), str) else None
            if name is not None and isinstance(block.get("id"), str):
                tool_names[block["id"]] = name
            args = block.get("input")
            out.append(("tool_call", compact_json(args if args is not None else {}), name))
        else:
            out.append(("assistant_text", compact_json(block), None))
    return out


def title_of(text: str) -> str | None:
    """The first line of a task's first message, shortened to a title."""
    for line in text.strip().splitlines():
        line = re.sub(r"</?task>", "", line).strip()
        if line:
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 3].rstrip() + "..."
    return None


@dataclass(slots=True)
class CallInfo:
    """What an agent's reader says of one call: its usage, provider and model."""

    usage: Usage
    provider: str | None
    model: str | None


# (the request or None, the assistant message or None, the user messages sent before it) -> CallInfo
CallReader = Callable[[Request | None, dict[str, Any] | None, list[dict[str, Any]]], CallInfo]


def build_task(
    task: Task,
    *,
    tool: str,
    layout: str,
    read_call: CallReader,
    project: str | None = None,
    meta: dict[str, Any] | None = None,
) -> ParsedSession:
    """A task folder as one session: parts from its history, one call per assistant message."""
    native = task.path.name
    uid = f"{tool}:{native}"
    parts: list[Part] = []
    calls: list[Call] = []
    history = task.history
    tool_names: dict[str, str] = {}
    times = [t for t in (_number(e.get("ts")) for e in task.ui) if t is not None]

    def add_call(request: Request | None, message: dict[str, Any] | None, users: list[dict[str, Any]]) -> str:
        info = read_call(request, message, users)
        u = info.usage
        seq = len(calls)
        mid = message.get("id") if message is not None and isinstance(message.get("id"), str) else None
        ts = ms_to_datetime(request.ts if request is not None else (message or {}).get("ts"))
        call_uid = f"{uid}#c{seq}"
        raw = dict(request.info) if request is not None and has_counts(request.info) else None
        if raw is not None:
            raw.pop("request", None)  # the request's text is prompt, not usage
        calls.append(
            Call(
                uid=call_uid,
                session_uid=uid,
                seq=seq,
                prompt_start=0,
                prompt_end=len(parts),
                usage_status=u.status,
                usage_style=u.style,
                message_id=mid,
                ts=ts,
                provider=info.provider,
                model=info.model,
                input=u.input,
                output=u.output,
                cache_read=u.cache_read,
                cache_write=u.cache_write,
                usage_raw=raw,
                ctx=u.ctx,
                carry=u.carry,
                error=_error(request),
            )
        )
        return call_uid

    def add(
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        mid: str | None,
        name: str | None,
        call: str | None,
    ) -> None:
        seq = len(parts)
        parts.append(Part(f"{uid}#{seq}", uid, seq, role, kind, text, mid, name, call, ts))

    title: str | None = None
    if history is None:
        for request in task.requests:
            add_call(request, None, [])
    else:
        assistants = [m for m in history if m.get("role") == "assistant" and m.get("type") != "reasoning"]
        paired = iter(pair_requests(task.requests, [_number(m.get("ts")) for m in assistants]))
        users: list[dict[str, Any]] = []
        for index, message in enumerate(history):
            mid = message.get("id") if isinstance(message.get("id"), str) else f"m{index}"
            ts = ms_to_datetime(message.get("ts"))
            if message.get("role") == "user":
                users.append(message)
                for kind, text, name in message_entries(message, tool_names):
                    if title is None and kind == "user_text":
                        title = title_of(text)
                    add("user", kind, text, ts, mid, name, None)
                continue
            call_uid: str | None = None
            if message.get("type") != "reasoning":
                call_uid = add_call(next(paired), message, users)
            for kind, text, name in message_entries(message, tool_names):
                add("assistant", kind, text, ts, mid, name, call_uid)
    for entry in task.ui:
        if entry.get("say") == "task" and isinstance(entry.get("text"), str):
            title = title_of(entry["text"]) or title
            break
    session = Session(
        uid=uid,
        tool=tool,
        native_id=native,
        source_path=str(task.path),
        layout=layout,
        project=project,
        title=title,
        started_at=ms_to_datetime(min(times)) if times else None,
        ended_at=ms_to_datetime(max(times)) if times else None,
        meta=meta,
    )
    return ParsedSession(session, calls, parts)


def _error(request: Request | None) -> str | None:
    if request is None:
        return None
    reason = request.info.get("cancelReason")
    return str(reason) if reason else None


_WORKSPACE = re.compile(r"# Current (?:Working|Workspace) Directory \(([^)\n]+)\)")


def project_of(history: list[dict[str, Any]] | None) -> str | None:
    """The working directory the first environment details name (`# Current Working Directory (...)`)."""
    for message in history or ():
        if message.get("role") != "user":
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str):
                match = _WORKSPACE.search(text)
                if match:
                    return match.group(1)
    return None
