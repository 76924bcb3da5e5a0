"""An llxprt-code session recording read into one session: the history as the model saw it, and its calls.

Reading (`packages/core/src/recording/types.ts`, `ReplayEngine.ts`): every line is `{v, seq, ts, type,
payload}`, `v` 1 the only version. `session_start` (first line) names sessionId, projectHash,
workspaceDirs, cwd (newer), provider, model, startTime. Then:

- `content`: `payload.content` is one `IContent` `{speaker: human|ai|tool, blocks, metadata}` appended
  to the history;
- `compressed`: the history becomes `[payload.summary]` (an ai IContent): a compaction; what
  llxprt re-adds while compressing is not recorded (`RecordingIntegration.ts`);
- `rewind`: the last `payload.itemsRemoved` history items are dropped (all of them when it is more);
- `provider_switch`: `payload.provider`/`model` serve the calls from then on;
- `session_metadata` (title), `session_event`, `directories_changed` and the checkpoint/fork events
  never enter the history.

Laying out: blocks (`packages/core/src/services/history/IContent.ts`) become parts: `text` (a user,
assistant or tool text), `tool_call` (its `parameters` as compact JSON), `tool_response` (its `result`,
a string kept as is, else compact JSON; its `error` when there is no result), `thinking` (`thought`),
`code` (fenced as the Gemini converter sends it), `media` (a placeholder naming its type: its bytes
are not text). One call is a run of ai contents between two inputs: each model response is recorded
once (`recordHistoryWithUsage`), and when the consolidated output is split over several ai contents
each carries the same usage, counted once here. The summary of a compaction is a `summary` part, an
input; the calls after it are sent only it and what follows. Rewound items and the calls they held
leave the session, as they left llxprt's history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning
from calib.core.tally import WarningTally
from calib.importers.common import compact_json, damaged_line, timestamp, unfinished_line
from calib.importers.llxprt.identity import NAME
from calib.importers.logfile import is_blank, iter_lines, out_of_memory, read_log_bytes, tail_warnings

VERSIONS = (1,)
READ_MEMORY_FACTOR = 4.5
DAMAGED_HINT = (
    "the file is truncated or damaged; restore it or leave it out (other files were still imported)"
)
_NEWER_HINT = "it was written by a newer llxprt-code; upgrade calib, or leave this file out"
_METADATA_EVENTS = frozenset(
    (
        "session_event",
        "session_metadata",
        "directories_changed",
        "checkpoint_created",
        "checkpoint_renamed",
        "checkpoint_deleted",
        "session_forked",
        "session_named",
    )
)
SPEAKERS = frozenset(("human", "ai", "tool"))


@dataclass(slots=True)
class Item:
    """One history item: an IContent (or a compaction's summary) and where it was recorded."""

    speaker: str  # human | ai | tool | summary
    blocks: list[Any]
    metadata: dict[str, Any]
    ts: datetime | None
    line: int


@dataclass(slots=True)
class Restart:
    """A compaction: the prompt starts again here."""

    line: int


@dataclass(slots=True)
class Switch:
    """A provider switch: the calls after it are served by `provider`/`model`."""

    provider: str
    model: str | None


Entry = Item | Restart | Switch


@dataclass(slots=True)
class Recording:
    """A recording read: its `session_start` payload, the timeline, and what was counted or left out."""

    start: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)
    title: str | None = None
    last_ts: datetime | None = None
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[InputWarning] = field(default_factory=list)

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n


def _rewind(entries: list[Entry], n: int) -> int:
    """Drop the last `n` history items (those after the last compaction); how many were dropped."""
    dropped = 0
    index = len(entries) - 1
    while index >= 0 and dropped < n:
        entry = entries[index]
        if isinstance(entry, Restart):
            break
        if isinstance(entry, Item):
            del entries[index]
            dropped += 1
        index -= 1
    return dropped


def _speaker_content(value: object) -> dict[str, Any] | None:
    """`value` when it is an IContent (a known speaker and a list of blocks), else None."""
    if isinstance(value, dict) and value.get("speaker") in SPEAKERS and isinstance(value.get("blocks"), list):
        return value
    return None


def _start(path: Path, record: dict[str, Any], lineno: int) -> dict[str, Any]:
    payload = record.get("payload")
    if record.get("type") != "session_start" or not isinstance(payload, dict):
        raise InputError(
            "the first line is not an llxprt-code session_start record",
            path=str(path),
            line=lineno,
            hint="pass only files from <llxprt log dir>/tmp/<project>/chats, or another --format",
        )
    if not isinstance(payload.get("sessionId"), str) or not payload["sessionId"]:
        raise InputError("session_start names no sessionId", path=str(path), line=lineno, hint=DAMAGED_HINT)
    return payload


def _version_check(path: Path, record: dict[str, Any], lineno: int) -> bool:
    """True when the line's `v` is one calib reads; an `InputError` for a later one; False if absent."""
    v = record.get("v")
    if isinstance(v, bool) or not isinstance(v, int):
        return False
    if v not in VERSIONS:
        raise InputError(
            f"recording format version v={v} is unknown (calib reads v=1)",
            path=str(path),
            line=lineno,
            hint=_NEWER_HINT,
        )
    return True


def read_recording(path: Path) -> Recording:
    """Read a recording's lines into its timeline (a bad line costs only itself, with a warning)."""
    source = read_log_bytes(path, READ_MEMORY_FACTOR)
    data = source.data.removeprefix(b"\xef\xbb\xbf")
    if not data.strip():
        raise InputError("empty file", path=str(path), hint="it holds no session yet; ingest it again later")
    warnings = WarningTally(str(path))
    rec: Recording | None = None
    last = data.count(b"\n") + 1
    for lineno, raw in enumerate(iter_lines(data), 1):
        if is_blank(raw):
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {lineno} is too large to read") from exc
            if rec is None:
                raise InputError(
                    f"the first line is not valid JSON ({exc.msg})",
                    path=str(path),
                    line=lineno,
                    hint=DAMAGED_HINT,
                ) from exc
            if lineno == last:  # no newline after it: llxprt is still writing it
                warnings.append(unfinished_line(path, lineno, NAME))
            else:
                warnings.append(damaged_line(path, lineno, f"not valid JSON ({exc.msg})"))
            continue
        if not isinstance(record, dict):
            if rec is None:
                raise InputError(
                    "the first line is not a JSON object", path=str(path), line=lineno, hint=DAMAGED_HINT
                )
            warnings.append(damaged_line(path, lineno, "not a JSON object"))
            continue
        known = _version_check(path, record, lineno)
        if rec is None:
            if not known:
                raise InputError(
                    "the first line has no format version (v)", path=str(path), line=lineno, hint=DAMAGED_HINT
                )
            rec = Recording(_start(path, record, lineno))
            rec.last_ts = timestamp(record.get("ts"))
            continue
        if not known:
            warnings.append(damaged_line(path, lineno, "a record without a version (v)"))
            continue
        _apply(path, rec, record, lineno, warnings)
    if rec is None:
        raise InputError("no records, only blank lines", path=str(path), hint=DAMAGED_HINT)
    rec.warnings = [*warnings, *tail_warnings(path, source, NAME)]
    return rec


def _apply(path: Path, rec: Recording, record: dict[str, Any], lineno: int, warnings: WarningTally) -> None:
    """Apply one event after `session_start` to the timeline."""
    kind = record.get("type")
    payload = record.get("payload")
    ts = timestamp(record.get("ts"))
    if ts is not None:
        rec.last_ts = ts
    if not isinstance(payload, dict):
        warnings.append(damaged_line(path, lineno, f"a {kind} record without a payload object"))
        return
    if kind == "content":
        content = _speaker_content(payload.get("content"))
        if content is None:
            warnings.append(damaged_line(path, lineno, "a content record without a valid IContent"))
            return
        meta = content.get("metadata")
        rec.entries.append(
            Item(
                str(content["speaker"]), content["blocks"], meta if isinstance(meta, dict) else {}, ts, lineno
            )
        )
    elif kind == "compressed":
        summary = _speaker_content(payload.get("summary"))
        if summary is None or "itemsCompressed" not in payload:
            warnings.append(damaged_line(path, lineno, "a compressed record without a valid summary"))
            return
        rec.count("compressions")
        meta = summary.get("metadata")
        rec.entries.append(Restart(lineno))
        rec.entries.append(
            Item("summary", summary["blocks"], meta if isinstance(meta, dict) else {}, ts, lineno)
        )
    elif kind == "rewind":
        n = payload.get("itemsRemoved")
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            warnings.append(damaged_line(path, lineno, "a rewind record without a valid itemsRemoved"))
            return
        rec.count("rewinds")
        rec.count("rewound_items", _rewind(rec.entries, n))
    elif kind == "provider_switch":
        provider, model = payload.get("provider"), payload.get("model")
        if not isinstance(provider, str) or not provider:
            warnings.append(damaged_line(path, lineno, "a provider_switch record without a provider"))
            return
        rec.count("provider_switches")
        rec.entries.append(Switch(provider, model if isinstance(model, str) and model else None))
    elif kind == "session_metadata":
        title = payload.get("title")
        if title is None or isinstance(title, str):
            rec.title = title if "title" in payload else rec.title
    elif kind == "session_start":
        rec.count("repeated_session_start")
    elif isinstance(kind, str) and kind in _METADATA_EVENTS:
        rec.count(kind)
    else:
        rec.count("unknown_records")


def block_text(block: dict[str, Any]) -> tuple[str, str | None] | None:
    """(text, tool name) of a block as it is sent, by its type; None for a block that sends nothing."""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return (text, None) if isinstance(text, str) and text else None
    if kind == "tool_call":
        name = block.get("name")
        return compact_json(block.get("parameters", {})), name if isinstance(name, str) else None
    if kind == "tool_response":
        name = block.get("toolName")
        result = block.get("result")
        if result is None and isinstance(block.get("error"), str):
            result = block["error"]
        text = result if isinstance(result, str) else compact_json(result)
        return text, name if isinstance(name, str) else None
    if kind == "thinking":
        thought = block.get("thought")
        return (thought, None) if isinstance(thought, str) and thought else None
    if kind == "code":
        code = block.get("code")
        if not isinstance(code, str) or not code:
            return None
        language = block.get("language")
        return (f"```{language}\n{code}\n```" if isinstance(language, str) and language else code), None
    if kind == "media":
        what = [str(block.get(k)) for k in ("mimeType", "filename") if isinstance(block.get(k), str)]
        return f"[media {' '.join(what)}]".replace(" ]", "]"), None
    return None
