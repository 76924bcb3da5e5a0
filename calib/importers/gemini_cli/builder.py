"""Laying a recording's timeline out as numbered parts and one call per recorded `gemini` message.

- One call per `gemini` message (its last version), uid `<session uid>:<message id>`. A `gemini`
  message with neither `model` nor `tokens` is a synthetic history turn gemini-cli wrote itself (a
  compression acknowledgement, the "Binary content received" note): its parts are kept, but it is not
  a call. Zero prompt tokens mean the stream lost its usage (gemini-cli writes zeros then): `missing`.
- Tool results come from `toolCalls[].result`, unless the next turn sent is a `user` message holding
  `functionResponse` parts (v0.44+ synthetic turns): then that turn is what was sent and `result` is
  not counted again.
- Checkpoints keep every call ever recorded: the timeline before `$set.messages` is laid out first,
  then the checkpoint's messages again as new parts; calls after it start their prompt there. Copies
  of messages already laid out carry no `call_uid` (their call is the first copy). A `user` message
  first seen in a checkpoint, or holding `<state_snapshot>`, is the compression summary (kind
  `summary`) and also restarts the prompt.
- Masked tool output (`<tool_output_masked>`, v0.29+) is counted (`masked`). Where gemini-cli's file of
  the full output is found under the session's project temp dir and the data tells when the
  placeholder took effect, the part holds the full output, the placeholder as `pruned_text` and that
  call's time as `pruned_at` (`recover`, rules in `masking`; counted as `recovered`); else it is stored
  as recorded and the scorer breaks the chain there.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from calib.core.errors import InputError
from calib.core.records import LaidOutSession, Session, UsageStatus
from calib.core.usage import INVALID, carried_tokens, context_tokens, token_counts
from calib.importers.common import compact_json, timestamp
from calib.importers.gemini_cli.content import (
    SNAPSHOT,
    api_part,
    as_parts,
    has_function_response,
    text_of,
    thought_text,
)
from calib.importers.gemini_cli.document import DAMAGED_HINT, SENT_TYPES, Document, Segment
from calib.importers.gemini_cli.identity import part_uid_prefix
from calib.importers.gemini_cli.masking import MASK_MARKER, placements, recoverable

_MASKED = MASK_MARKER
_TOKEN_FIELDS = ("input", "output", "cached", "thoughts", "tool", "total")


class Builder:
    """Lays the segments of one session out as calls and parts.

    Both are kept as rows of their fields (`calls`, `rows`; see `LaidOutSession`), which become
    records only when read: `session(row)` is the whole session. An appended read starts from what
    the last read stored: `base_parts` parts, `base_calls` calls and `masked` masked outputs; its
    rows continue their seqs. `recover` then reads masked tool outputs back (a whole read only).
    """

    __slots__ = (
        "_fresh",
        "_key",
        "_masked_rows",
        "_prefix",
        "base_calls",
        "base_parts",
        "calls",
        "doc",
        "last_sent",
        "masked",
        "owned",
        "path",
        "prompt_start",
        "recovered",
        "rows",
        "uid",
    )

    def __init__(
        self,
        path: Path,
        doc: Document,
        session_uid: str,
        base_parts: int = 0,
        base_calls: int = 0,
        masked: int = 0,
    ) -> None:
        self.path = path
        self.doc = doc
        self.uid = session_uid
        # each part's `Part` fields from `role` to `resent`, or to `pruned_text` once `recover` read a
        # masked output back (see `LaidOutSession`)
        self.rows: list[tuple[Any, ...]] = []
        self.calls: list[tuple[Any, ...]] = []  # each call's `Call` fields (see `LaidOutSession`)
        self.owned: set[str] = set()  # message ids already laid out (a call belongs to the first copy)
        self.masked = masked
        self.recovered = 0
        self._masked_rows: list[int] = []  # masked tool results of messages first laid out here
        self._fresh = True  # the message being laid out is laid out for the first time
        self.base_parts = base_parts
        self.base_calls = base_calls
        self.prompt_start = 0
        self.last_sent: tuple[str, dict[str, Any]] | None = None  # the last message laid out
        self._prefix = part_uid_prefix(session_uid)
        self._key = ""  # the message being laid out

    def pos(self) -> int:
        """The seq the next part takes."""
        return self.base_parts + len(self.rows)

    def session(self, row: Session) -> LaidOutSession:
        """The session laid out so far, with its row."""
        return LaidOutSession(row, self.calls, self._prefix, self.base_parts, self.rows)

    def _add(
        self,
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        tool_name: str | None = None,
        call_uid: str | None = None,
        resent: bool = True,
    ) -> None:
        if _MASKED in text:
            self.masked += 1
            if kind == "tool_result" and self._fresh:
                self._masked_rows.append(len(self.rows))
        # A row rather than a `Part`: a third of the cost, on the path every part takes.
        self.rows.append((role, kind, text, self._key, tool_name, call_uid, ts, resent))

    def _thoughts(self, thoughts: list[Any], ts: datetime | None, call_uid: str | None) -> None:
        """One `reasoning` part per thought summary, never re-sent."""
        # `_add` written out: a session has more thoughts than any other part
        append = self.rows.append
        key = self._key
        for thought in thoughts:
            text = thought_text(thought)
            if text:
                when = timestamp(thought.get("timestamp")) if isinstance(thought, dict) else None
                if _MASKED in text:
                    self.masked += 1
                append(("assistant", "reasoning", text, key, None, call_uid, when or ts, False))

    def _content(
        self,
        content: Any,
        role: str,
        text_kind: str,
        ts: datetime | None,
        call_uid: str | None = None,
        skip_function_calls: bool = False,
        tool_name: str | None = None,
    ) -> None:
        add = self._add
        for item in as_parts(content):
            if isinstance(item, str):
                entry: tuple[str, str, str | None, bool] | None = (
                    (text_kind, item, None, True) if item else None
                )
            elif isinstance(item, dict):
                entry = api_part(item, text_kind, skip_function_calls)
            else:
                entry = None
            if entry is None:
                continue
            kind, text, name, resent = entry
            if kind == "tool_result":  # the agent's input to the model (wire role user), never model output
                add("user", kind, text, ts, name or tool_name, None, True)
            else:
                add(role, kind, text, ts, name, call_uid, resent)

    def _call(self, key: str, message: dict[str, Any], prompt_start: int) -> str:
        """Add the call that message `key` records; returns its uid."""
        doc = self.doc
        version = doc.usage.get(key) or doc.latest.get(key, message)
        tokens = version.get("tokens")
        model = version.get("model")
        status: UsageStatus = "missing"
        prompt = output = cached = thoughts = tool = total = ctx = carry = None
        if tokens is not None:
            counts = token_counts(*map(tokens.get, _TOKEN_FIELDS)) if isinstance(tokens, dict) else None
            if counts is None:
                status = INVALID
                if not isinstance(tokens, dict):
                    tokens = None  # not usage at all: the log keeps it, the store has no place for it
            elif counts[0]:
                prompt, output, cached, thoughts, tool, total = counts
                status = "ok"
                ctx = context_tokens("gemini", prompt, cached)
                carry = carried_tokens("gemini", output, thoughts)
        uid = f"{self.uid}:{key}"
        # A row of every `Call` field, in order (see `LaidOutSession`).
        self.calls.append(
            (
                uid,
                self.uid,
                self.base_calls + len(self.calls),
                prompt_start,
                self.base_parts + len(self.rows),  # prompt_end: the seq its first output part takes
                status,
                "gemini",
                key,
                timestamp(version.get("timestamp")),
                "google",
                model if isinstance(model, str) else None,
                prompt,
                output,
                thoughts,
                cached,
                None,
                tool,
                total,
                tokens,
                ctx,
                carry,
                None,
                None,
                False,
            )
        )
        return uid

    def segment(
        self,
        segment: Segment,
        sent: list[tuple[str, dict[str, Any]]] | None = None,
        prompt_start: int | None = None,
    ) -> None:
        """Lay out one segment (each one after the first starts at a checkpoint and restarts the prompt).

        An appended read lays out only the new messages `sent` of the last segment, from the prompt
        start the last read ended with.
        """
        if sent is None:
            sent = [(k, m) for k, m in segment.messages.items() if m.get("type") in SENT_TYPES]
        if prompt_start is None:
            prompt_start = self.pos()
        if sent:
            self.last_sent = sent[-1]
        for index, (key, message) in enumerate(sent):
            self._key = key
            # A checkpoint's copy was sent only after the checkpoint rewrote the history: never read back.
            self._fresh = key not in self.owned and not segment.checkpoint_ids
            ts = timestamp(message.get("timestamp"))
            if message.get("type") == "gemini":
                following = sent[index + 1][1] if index + 1 < len(sent) else None
                self._gemini(key, message, ts, prompt_start, following)
                continue
            content = message.get("content")
            text_kind = "user_text"
            first_seen = key in segment.checkpoint_ids and key not in self.owned
            if first_seen or any(SNAPSHOT in text_of(p) for p in as_parts(content)):
                text_kind = "summary"
                prompt_start = self.pos()
            self.owned.add(key)
            self._content(content, "user", text_kind, ts)
        self.prompt_start = prompt_start

    def _gemini(
        self,
        key: str,
        message: dict[str, Any],
        ts: datetime | None,
        prompt_start: int,
        following: dict[str, Any] | None,
    ) -> None:
        get = message.get
        call_uid: str | None = None
        # Neither model nor tokens: a synthetic turn, not a call.
        if key not in self.owned and (get("model") is not None or get("tokens") is not None):
            call_uid = self._call(key, message, prompt_start)
        self.owned.add(key)
        thoughts = get("thoughts")
        if thoughts:
            self._thoughts(thoughts if isinstance(thoughts, list) else [thoughts], ts, call_uid)
        tool_calls = get("toolCalls")
        if tool_calls:
            if not isinstance(tool_calls, list):
                raise InputError(
                    f"message {key}: toolCalls is not a list",
                    path=str(self.path),
                    line=self.doc.lines.get(key),
                    hint=DAMAGED_HINT,
                )
            tool_calls = [tc for tc in tool_calls if isinstance(tc, dict)]
        content = get("content")
        if content:  # (empty content, as most messages with thoughts or tool calls hold, sends nothing)
            self._content(content, "assistant", "assistant_text", ts, call_uid, bool(tool_calls))
        if tool_calls:
            self._tool_calls(tool_calls, ts, call_uid, following)

    def _tool_calls(
        self,
        tool_calls: list[dict[str, Any]],
        ts: datetime | None,
        call_uid: str | None,
        following: dict[str, Any] | None,
    ) -> None:
        """A `tool_call` part per call, then their results unless the next turn sent holds them."""
        add = self._add
        whens = []
        for tc in tool_calls:
            args = tc.get("args")
            when = timestamp(tc.get("timestamp")) or ts
            whens.append(when)
            add(
                "assistant",
                "tool_call",
                compact_json(args if args is not None else {}),
                when,
                tc.get("name"),
                call_uid,
            )
        if following is not None and following.get("type") == "user" and has_function_response(following):
            return  # v0.44+: the synthetic user turn that follows is what was sent
        content = self._content
        for tc, when in zip(tool_calls, whens, strict=True):
            content(tc.get("result"), "user", "tool_result", when, None, False, tc.get("name"))

    def recover(self, temp_dir: Path) -> None:
        """Read masked tool outputs back from the files under `temp_dir` (the session's project temp
        dir) and lay each one that can be placed out as pruned (`calib.importers.gemini_cli.masking`)."""
        if not self._masked_rows or self.base_calls:  # placing needs the whole session's calls
            return
        found = recoverable(self.rows, self._masked_rows, self.base_parts, temp_dir)
        placed = placements(found, self.calls) if found else {}
        if not placed:
            return
        # every row gains `pruned_at` and `pruned_text` (the rows of a session have the same width)
        rows = [(*row, None, None) for row in self.rows]
        for item in found:
            when = placed.get(item.row)
            if when is not None:
                role, kind, masked, key, tool_name, call_uid, ts, resent = rows[item.row][:8]
                rows[item.row] = (role, kind, item.text, key, tool_name, call_uid, ts, resent, when, masked)
                self.recovered += 1
        self.rows = rows
