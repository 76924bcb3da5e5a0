"""Masked tool outputs read back from the files gemini-cli keeps under `<project temp>/tool-outputs/`.

What gemini-cli does (google-gemini/gemini-cli `ToolOutputMaskingService`, read at v0.29.0 in
`packages/core/src/services/toolOutputMaskingService.ts`, in `packages/core/src/context/` from v0.37.0,
the same at 5411f113): right before each main-loop request (`GeminiClient`, before `turn.run`) it masks
the older bulky tool results in one batch (by default those past the newest 50k estimated tool
tokens, once they add up to 30k). For each it writes `JSON.stringify(response, null, 2)` of the whole
`functionResponse.response` to `<project temp>/tool-outputs/session-<session id>/<tool>_<call id>_
<random>.txt` (`[^A-Za-z0-9_-]` in the names made `_`) and replaces the response by `{"output":
"<tool_output_masked>\n<preview>\n\nOutput too large. Full output available at: <path>\n
</tool_output_masked>"}`, `<path>` being that file's absolute path on the machine that wrote it.
`GeminiChat.setHistory` then rewrites the record from the masked history (`ChatRecordingService.
updateMessagesFromHistory`, since 63f7e30790, v0.29.0), so it keeps the placeholder only, while the
calls before the batch were sent the full output. A tool result is never masked in the request that
first sends it (masking runs on the history, which does not hold the request yet).

The newer context pipeline's `ToolMaskingProcessor` (`context/processors/toolMaskingProcessor.ts`,
used from v0.41.0 when `contextManagement.enabled`, off by default) masks a long string as soon as it
enters the history, the request about to send it included (`Full string saved to: ...`, the file
holding that raw string): no call saw the full text, so those are left as recorded.

Reading back (`recoverable`): only the part of the path after its last `tool-outputs` folder is used,
looked up under this session's project temp dir (the folder holding `chats/`), so a recording copied
from another machine or moved from a `tmp/<hash>` to a `tmp/<slug>` folder still finds its files. The
file stays untouched unless it is a regular file inside the temp dir (after symlinks), no larger than
`MAX_OUTPUT_BYTES`, holding a JSON object: anything else leaves the part as recorded.

When the placeholder took effect (`placements`), since the record keeps no time for it:

1. the file's modification time (gemini-cli writes it during masking, after the previous call was
   recorded and before the request): the first call recorded at or after it is the first that saw the
   placeholder, when that call comes after the one that first sent the output;
2. else, the usage: a batch shrinks the prompt at once (30k tokens by default), so the call where it
   took effect is one whose reported prompt dropped: `delta < -max(DROP_TOKENS, ctx[k-1] / 100)`.
   Batches mask in conversation order, so an output is masked no earlier than any output before it
   and no later than any output after it; when exactly one such drop lies in that window, it is
   that call;
3. else the part stays as recorded (the masked text; the scorer breaks the chain there).

The part then holds the full output as `text`, the placeholder as `pruned_text` and that call's time as
`pruned_at`, as a pruned OpenCode output does: earlier calls see the full text, that call and later
ones the placeholder, and scoring counts the text that left at that call as a removal.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from calib.core.paths import open_regular
from calib.core.records import Call
from calib.importers.gemini_cli.content import tool_result_text

MASK_MARKER = "<tool_output_masked>"
_MASK_END = "</tool_output_masked>"
_POINTER = "Output too large. Full output available at: "
TOOL_OUTPUTS = "tool-outputs"
# A tool output file larger than this is left unread (the part stays masked).
MAX_OUTPUT_BYTES = 16 << 20
# The least drop of the reported prompt that tells a masking batch (besides 1% of the prompt).
DROP_TOKENS = 100

_EPOCH = datetime(1970, 1, 1)
_SEPARATORS = re.compile(r"[\\/]")
_CALL = {f.name: i for i, f in enumerate(fields(Call))}
_START, _END, _STATUS, _TS, _CTX, _CARRY = (
    _CALL[name] for name in ("prompt_start", "prompt_end", "usage_status", "ts", "ctx", "carry")
)


@dataclass(slots=True)
class Recovered:
    """A masked part whose full text was read back: its row, that text and its file's modification time."""

    row: int
    seq: int
    text: str
    written: datetime | None


def pointer(text: str) -> str | None:
    """The path a `ToolOutputMaskingService` placeholder points at, or None for any other text."""
    body = text.strip()
    if not (body.startswith(MASK_MARKER) and body.endswith(_MASK_END)):
        return None
    inner = body[: -len(_MASK_END)].rstrip()
    last = inner[inner.rfind("\n") + 1 :]
    if not last.startswith(_POINTER):
        return None
    return last[len(_POINTER) :].strip() or None


def output_file(path: str, temp_dir: Path) -> Path | None:
    """The file under `temp_dir/tool-outputs/` that `path` names, if it is there and inside `temp_dir`."""
    names = _SEPARATORS.split(path)
    if TOOL_OUTPUTS not in names:
        return None
    tail = names[len(names) - names[::-1].index(TOOL_OUTPUTS) :]
    if not tail or any(name in ("", ".", "..") or "\0" in name for name in tail):
        return None
    try:
        root = temp_dir.resolve(strict=True)
        found = temp_dir.joinpath(TOOL_OUTPUTS, *tail).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, unreadable folder, a symlink loop
        return None
    return found if found.is_relative_to(root) else None


def read_output(path: Path, limit: int | None = None) -> tuple[str, datetime] | None:
    """The part text of the tool output a masking file holds, and when the file was written; None
    when it is not a regular file, larger than `limit` (default `MAX_OUTPUT_BYTES`), or not a JSON
    object."""
    limit = MAX_OUTPUT_BYTES if limit is None else limit
    try:
        with open_regular(path) as fh:  # never a FIFO or a device
            info = os.fstat(fh.fileno())
            if info.st_size > limit:
                return None
            data = fh.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    try:
        response = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(response, dict):
        return None
    written = _EPOCH + timedelta(microseconds=info.st_mtime_ns // 1000)
    return tool_result_text(response), written


def recoverable(
    rows: Sequence[tuple[Any, ...]], candidates: Sequence[int], base: int, temp_dir: Path
) -> list[Recovered]:
    """The candidate rows (masked tool results) whose full output could be read back, in order."""
    found: list[Recovered] = []
    for index in candidates:
        target = pointer(rows[index][2])
        if target is None:
            continue
        file = output_file(target, temp_dir)
        if file is None:
            continue
        output = read_output(file)
        if output is not None:
            found.append(Recovered(index, base + index, *output))
    return found


def _drops(calls: Sequence[tuple[Any, ...]]) -> list[int]:
    """Calls whose reported prompt shrank against the previous call (both with usage, same prompt start)."""
    out: list[int] = []
    for k in range(1, len(calls)):
        prev, call = calls[k - 1], calls[k]
        if prev[_STATUS] != "ok" or call[_STATUS] != "ok" or prev[_START] != call[_START]:
            continue
        if prev[_CTX] is None or prev[_CARRY] is None or call[_CTX] is None:
            continue
        delta = call[_CTX] - prev[_CTX] - prev[_CARRY]
        if delta < -max(DROP_TOKENS, prev[_CTX] / 100):
            out.append(k)
    return out


def placements(found: Sequence[Recovered], calls: Sequence[tuple[Any, ...]]) -> dict[int, datetime]:
    """For each read-back part (by row) that can be placed, the time of the first call that was sent its
    placeholder: its `pruned_at` (see the module docstring). `calls` are a whole session's call rows."""
    ends = [c[_END] for c in calls]
    # The calls with a time, and the latest time recorded up to each: the first call recorded at or
    # after a time is found by bisection (the first whose running latest reaches it).
    timed = [k for k, c in enumerate(calls) if c[_TS] is not None]
    latest: list[datetime] = []
    for k in timed:
        ts = calls[k][_TS]
        latest.append(ts if not latest or ts > latest[-1] else latest[-1])

    def viable(k: int, seq: int, first: int) -> bool:
        call = calls[k]
        return k > first and call[_START] <= seq < call[_END] and call[_TS] is not None

    firsts: dict[int, int] = {}  # row -> the first call sent the part
    placed: dict[int, int] = {}
    for item in found:
        first = bisect.bisect_right(ends, item.seq)
        if first >= len(calls) or calls[first][_START] > item.seq:
            continue  # no recorded call was sent it
        firsts[item.row] = first
        if item.written is not None:
            at = bisect.bisect_left(latest, item.written)
            if at < len(timed) and viable(timed[at], item.seq, first):
                placed[item.row] = timed[at]
    drops = _drops(calls)
    order = [item for item in found if item.row in firsts]
    for position, item in enumerate(order):
        if item.row in placed:
            continue
        # batches mask in conversation order: no earlier than an output before, no later than one after
        low = max((placed[o.row] for o in order[:position] if o.row in placed), default=0)
        high = min((placed[o.row] for o in order[position + 1 :] if o.row in placed), default=len(calls))
        window = [k for k in drops if low <= k <= high and viable(k, item.seq, firsts[item.row])]
        if len(window) == 1:
            placed[item.row] = window[0]
    return {row: calls[k][_TS] for row, k in placed.items()}
