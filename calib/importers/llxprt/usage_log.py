"""llxprt-code's token-usage log: the agent's own estimate beside the provider's count, per billed attempt.

`<project temp>/token-usage/<sessionId>.jsonl` (0.11 nightlies; not in v0.10.0; `docs/token-usage-log.md`,
`packages/agents/src/core/tokenUsageRecords.ts`). Each line is one record:

- `record_type` is `turn`, `compression`, `provider_switch`, `model_switch` (`session_resume` and
  `context_truncation` are defined, not written); `schema_version` is 1. A record with neither field
  was written before versioning and is a version-0 `turn`. A later version is one `InputError`.
- A `turn` is one billed attempt (retries get their own, `attempt_index`, `attempt_outcome` of
  `success`/`error`/`aborted`/`abandoned`): `estimated_tokens` (by `estimator`), `actual_prompt_tokens`
  (the provider's prompt, cache included), `cached_tokens` (cache reads), and, only when the provider
  reported them (absent is not 0), `output_tokens`, `reasoning_tokens`, `cache_read_tokens`,
  `cache_write_tokens`, `total_tokens`. Join keys `prompt_id` and `turn_id` (never `user_turn`/`step`,
  which name the turn the request was built from), `session_id`, `subagent_name`.

Read on its own, each turn with a provider count (`actual_prompt_tokens` > 0) is an `AgentEstimate`
(like Dexto's log lines); read beside a recording, `turns` indexes them for the join.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from calib.core.errors import InputError, InputWarning
from calib.core.records import AgentEstimate
from calib.core.tally import WarningTally
from calib.core.usage import token_counts
from calib.importers.common import damaged_line, timestamp, unfinished_line
from calib.importers.llxprt.identity import NAME, session_uid
from calib.importers.logfile import is_blank, iter_lines, out_of_memory, read_log_bytes, tail_warnings

SCHEMA_VERSIONS = (0, 1)
READ_MEMORY_FACTOR = 3.0
_REST = "the other records were imported"
_NEWER_HINT = "it was written by a newer llxprt-code; upgrade calib, or leave this file out"


@dataclass(slots=True)
class TurnRecord:
    """One `turn` record and the line it is on."""

    line: int
    fields: dict[str, Any]

    @property
    def succeeded(self) -> bool:
        """True unless the attempt is recorded as failed (no outcome: written before attempts were)."""
        return self.fields.get("attempt_outcome") in (None, "success")


def _version(record: dict[str, Any]) -> object:
    if "schema_version" not in record and "record_type" not in record:
        return 0
    return record.get("schema_version")


def read_records(path: Path) -> tuple[list[TurnRecord], list[InputWarning]]:
    """The `turn` records of a token-usage log, and a warning for each line left out of it."""
    source = read_log_bytes(path, READ_MEMORY_FACTOR)
    data = source.data.removeprefix(b"\xef\xbb\xbf")
    warnings = WarningTally(str(path))
    turns: list[TurnRecord] = []
    last = data.count(b"\n") + 1
    for lineno, raw in enumerate(iter_lines(data), 1):
        if is_blank(raw):
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if out_of_memory(exc):
                raise MemoryError(f"line {lineno} is too large to read") from exc
            if lineno == last:
                warnings.append(unfinished_line(path, lineno, NAME))
            else:
                warnings.append(damaged_line(path, lineno, f"not valid JSON ({exc.msg})", _REST))
            continue
        if not isinstance(record, dict):
            warnings.append(damaged_line(path, lineno, "not a JSON object", _REST))
            continue
        version = _version(record)
        if isinstance(version, int) and not isinstance(version, bool) and version not in SCHEMA_VERSIONS:
            raise InputError(
                f"token-usage log schema_version {version} is unknown (calib reads 0 and 1)",
                path=str(path),
                line=lineno,
                hint=_NEWER_HINT,
            )
        kind = record.get("record_type", "turn")
        if not isinstance(version, int) or not isinstance(kind, str):
            warnings.append(damaged_line(path, lineno, "a record without a valid schema_version", _REST))
            continue
        if kind == "turn":
            turns.append(TurnRecord(lineno, record))
    return turns, [*warnings, *tail_warnings(path, source, NAME)]


_NOT_COUNTS = "a turn whose estimate or provider count is not a token count"


def parse_usage_log(path: Path) -> Iterator[AgentEstimate | InputWarning]:
    """Every estimate-versus-actual pair of a token-usage log (attempts the provider counted)."""
    turns, warnings = read_records(path)
    file_session = path.stem
    left_out = WarningTally(str(path))
    for turn in turns:
        fields = turn.fields
        pair = token_counts(fields.get("estimated_tokens"), fields.get("actual_prompt_tokens"))
        estimated, actual = pair if pair is not None else (None, None)
        if estimated is None:
            left_out.append(damaged_line(path, turn.line, _NOT_COUNTS, _REST))
            continue
        if not actual:  # no provider count for this attempt (it failed before usage arrived)
            continue
        session_id = fields.get("session_id")
        sid = session_id if isinstance(session_id, str) and session_id else file_session
        agent = fields.get("subagent_name")
        yield AgentEstimate(
            session_uid=session_uid(sid),
            source_path=str(path),
            line=turn.line,
            estimated=estimated,
            actual=actual,
            ts=timestamp(fields.get("ts")),
            agent=agent if isinstance(agent, str) and agent else None,
        )
    yield from warnings
    yield from left_out


def beside(recording: Path, session_id: str) -> Path | None:
    """The token-usage log of the session a recording in `<temp>/chats/` holds, when there is one."""
    if recording.parent.name != "chats" or not session_id or "/" in session_id or "\\" in session_id:
        return None
    candidate = recording.parent.parent / "token-usage" / f"{session_id}.jsonl"
    return candidate if candidate.is_file() else None


def read_beside(path: Path) -> list[TurnRecord] | None:
    """The turn records of the log at `path` for a join, or None when it cannot be read as one."""
    try:
        turns, _ = read_records(path)  # its own warnings are given when the log itself is ingested
    except (OSError, InputError, MemoryError):
        return None
    return turns
