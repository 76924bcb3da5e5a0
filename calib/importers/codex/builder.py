"""Laying a rollout's records out as numbered parts and one call per provider request.

- Calls: one per `event_msg` `token_count` whose `info.total_token_usage` differs from the previous
  one's (Codex re-emits unchanged events: they are dropped and counted, `reemitted_token_counts`).
  Usage is `info.last_token_usage` (when only totals were written: the difference of consecutive
  totals): `input` = input_tokens (it includes cached_input_tokens), `cache_read` =
  cached_input_tokens, `output` = output_tokens, `reasoning` = reasoning_output_tokens (part of
  output); style "openai", so ctx = input and carry = the whole output, reasoning included
  (`carried_tokens(..., reasoning_resent=True)`: Codex passes a turn's reasoning items back with every
  request of that turn). `info` is kept as recorded in `usage_raw`; the model is the latest
  `turn_context.model`; ts is the event's.
- A `token_count` with `info: null` is a call without usage (`missing`) when model output is waiting
  for its call, and is skipped otherwise (older builds write one before the first request of a turn).
- Attribution: a call's `token_count` comes after the items it produced (and, from 0.140 on, after
  the outputs of the tools it asked for too), so model-output items (`reasoning`, assistant
  `message`, tool calls) go to the next call counted; everything else is input and has no call. A
  call's `prompt_end` is the seq of its first output part: tool results written before its
  `token_count` are after that, so they are appended for the next call. Output still waiting when a
  turn ends (`turn_context`, `task_started`, `task_complete`, `turn_aborted`, `compacted`) was made
  by a request whose usage was never written: it stays in the history as input (no call).
- The system prompt (`session_meta.base_instructions.text`, older `instructions`) is part 0 (kind
  `system`).
- Reasoning is re-sent within its turn and dropped once the next user turn starts: reasoning parts are
  `resent`, and each one of a turn that another turn follows gets `pruned_at` = the time that next
  turn starts, with `pruned_text` "" (sent as nothing from then on). A turn starts at an `event_msg`
  `task_started` (written first, before the turn's `turn_context` and user message); a
  `turn_context` starts one only when it names a different `turn_id` than the turn already open, or,
  without a `turn_id` (older builds), when no `task_started` opened the turn it belongs to. A
  `turn_context` repeated inside a turn (after `compacted`) names the open turn and starts nothing.
  A user message item marks no turn start: Codex also writes them inside a turn (a message sent into
  a running turn, the `<turn_aborted>` note that closes an interrupted one).
  Measured on the real rollouts: with reasoning carried, unbroken same-turn pairs grow by the o200k
  count of what was appended (median residual 11 tokens, 90th percentile 29; 52 and 550 without),
  and a new turn's first call falls by about the previous turn's reasoning. Pairs across a user
  message sent into a running turn fit with the reasoning kept (7 of 10), so that does not drop it.
- `compacted` restarts the prompt (`prompt_start`) at a rebuilt history: the system prompt again,
  then each `replacement_history` item as input; a `compaction` item, or a user message whose text was
  not seen before in the session, is the summary (kind `summary`). Without a replacement history,
  the `message` is the summary.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from calib.core.records import Call, Part, UsageStatus
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing
from calib.importers.codex.identity import call_uid, part_uid_prefix
from calib.importers.codex.items import USAGE_FIELDS, InvalidUsage, Spec, item_specs, usage_of
from calib.importers.common import timestamp

# Events that end a turn: model output still without a call then never gets one.
_TURN_EVENTS = frozenset(("task_started", "task_complete", "turn_aborted"))
_TITLE_CHARS = 80


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def system_text(meta: dict[str, Any]) -> str:
    """The system prompt `session_meta` stores ("" when it has none)."""
    base = meta.get("base_instructions")
    if isinstance(base, dict) and isinstance(base.get("text"), str):
        return str(base["text"])
    if isinstance(base, str):
        return base
    old = meta.get("instructions")
    return old if isinstance(old, str) else ""


def short_title(text: str) -> str | None:
    """The first non-empty line of `text`, cut to a title's length."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…"
    return None


class Builder:
    """Lays the records of one rollout out as `Part` and `Call` records.

    `state` is what an earlier read ended with (`state()`): a read on from there continues its seqs.
    """

    def __init__(self, session_uid: str, meta: dict[str, Any], state: dict[str, Any] | None = None) -> None:
        s = state or {}
        self.uid = session_uid
        self.system = system_text(meta)
        provider = meta.get("model_provider")
        self.provider = provider if isinstance(provider, str) and provider else "openai"
        self.parts: list[Part] = []
        self.calls: list[Call] = []
        self.base_parts = int(s.get("seq", 0))
        self.seq = self.base_parts
        self.ncalls = int(s.get("calls", 0))
        self.prompt_start = int(s.get("prompt_start", 0))
        self.total: dict[str, int] | None = s.get("total")
        self.model: str | None = s.get("model")
        self.turn: str | None = s.get("turn")
        # The turn a `task_started` or `turn_context` opened, whether a `task_started` opened it, and
        # the seqs of its reasoning parts (dropped when the next turn starts).
        self.open_turn: str | None = s.get("open_turn")
        self.opened_by_task: bool = bool(s.get("opened_by_task", False))
        self.reasoning: list[int] = list(s.get("reasoning", []))
        self.pending: list[int] = list(s.get("pending", []))
        self.seen: set[str] = set(s.get("seen", []))
        self.tools: dict[str, str] = dict(s.get("tools", {}))
        self.title: str | None = s.get("title")
        self.title_fallback: str | None = s.get("title_fallback")
        self.last_ts: str | None = s.get("last_ts")
        self.window: int | None = s.get("window")
        self.counts: dict[str, int] = dict(s.get("counts", {}))
        self.unknown: dict[str, int] = dict(s.get("unknown", {}))
        self.compactions: list[dict[str, Any]] = list(s.get("compactions", []))
        # True when this read gave a call to output stored by an earlier read (then read whole).
        self.touched_stored = False
        self._prefix = part_uid_prefix(session_uid)
        if state is None and self.system:
            self._add("system", "system", self.system, timestamp(meta.get("timestamp")))

    def state(self) -> dict[str, Any]:
        """What a later read needs to carry on from here (JSON-ready)."""
        return {
            "seq": self.seq,
            "calls": self.ncalls,
            "prompt_start": self.prompt_start,
            "total": self.total,
            "model": self.model,
            "turn": self.turn,
            "open_turn": self.open_turn,
            "opened_by_task": self.opened_by_task,
            "reasoning": self.reasoning,
            "pending": self.pending,
            "seen": sorted(self.seen),
            "tools": self.tools,
            "title": self.title,
            "title_fallback": self.title_fallback,
            "last_ts": self.last_ts,
            "window": self.window,
            "counts": self.counts,
            "unknown": self.unknown,
            "compactions": self.compactions,
        }

    def count(self, what: str, n: int = 1) -> None:
        """Add `n` to the counter `what` (reported in the session's meta)."""
        if n:
            self.counts[what] = self.counts.get(what, 0) + n

    # -- parts ---------------------------------------------------------------------------------------

    def _add(
        self,
        role: str,
        kind: str,
        text: str,
        ts: datetime | None,
        tool_name: str | None = None,
        message_id: str | None = None,
    ) -> int:
        seq = self.seq
        self.seq = seq + 1
        self.parts.append(
            Part(
                f"{self._prefix}{seq}",
                self.uid,
                seq,
                role,
                kind,
                text,
                message_id,
                tool_name,
                None,
                ts,
                True,
                None,
                None,
            )
        )
        return seq

    def _spec(
        self, spec: Spec, ts: datetime | None, as_input: bool = False, summary_if_new: bool = False
    ) -> None:
        role, kind, text, tool_name, item_id, output = spec
        if kind == "tool_call" and item_id and tool_name:
            self.tools[item_id] = tool_name
        elif kind == "tool_result" and tool_name is None and item_id:
            tool_name = self.tools.pop(item_id, None)
        if kind == "user_text":
            key = _digest(text)
            if summary_if_new and key not in self.seen:
                kind = "summary"
            self.seen.add(key)
            if self.title_fallback is None and not text.lstrip().startswith(("<", "#")):
                self.title_fallback = short_title(text)
        seq = self._add(role, kind, text, ts, tool_name, item_id)
        if kind == "reasoning":
            self.reasoning.append(seq)
        if output and not as_input:
            self.pending.append(seq)

    def _start_turn(self, turn_id: Any, ts: datetime | None, by_task: bool) -> None:
        """A `task_started` or `turn_context` line: when it opens a new turn, the open turn's reasoning is dropped."""
        turn = turn_id if isinstance(turn_id, str) and turn_id else None
        if turn is not None:
            if turn == self.open_turn:
                return
        elif not by_task and self.opened_by_task:
            self.opened_by_task = False  # the turn_context of the turn a task_started opened
            return
        self.open_turn = turn
        self.opened_by_task = by_task
        base = self.base_parts
        for pseq in self.reasoning:
            if pseq < base:
                self.touched_stored = True
            else:
                part = self.parts[pseq - base]
                part.pruned_at = ts
                part.pruned_text = ""
        self.reasoning = []

    def _flush(self) -> None:
        """A turn ended: output still waiting for a call stays in the history as input."""
        if self.pending:
            self.count("output_items_without_usage", len(self.pending))
            self.pending = []

    # -- records -------------------------------------------------------------------------------------

    def feed(self, lineno: int, record: dict[str, Any]) -> None:
        """Lay out one record of the rollout."""
        kind = record.get("type")
        payload = record.get("payload")
        raw_ts = record.get("timestamp")
        if isinstance(raw_ts, str):
            self.last_ts = raw_ts
        if not isinstance(payload, dict):
            self.count("records_without_payload")
            return
        if kind == "response_item":
            specs = item_specs(payload)
            if specs is None:
                name = str(payload.get("type"))
                self.unknown[name] = self.unknown.get(name, 0) + 1
                return
            ts = timestamp(raw_ts)
            for spec in specs:
                self._spec(spec, ts)
        elif kind == "event_msg":
            sub = payload.get("type")
            if sub == "token_count":
                self._token_count(payload, timestamp(raw_ts))
            elif sub == "user_message":
                if self.title is None and isinstance(payload.get("message"), str):
                    self.title = short_title(payload["message"])
            elif sub in _TURN_EVENTS:
                self._flush()
                if sub == "task_started":
                    self._start_turn(payload.get("turn_id"), timestamp(raw_ts), True)
                window = payload.get("model_context_window")
                if isinstance(window, int) and not isinstance(window, bool):
                    self.window = window
        elif kind == "turn_context":
            self._flush()
            self._start_turn(payload.get("turn_id"), timestamp(raw_ts), False)
            model = payload.get("model")
            if isinstance(model, str) and model:
                self.model = model
            turn = payload.get("turn_id")
            self.turn = turn if isinstance(turn, str) else None
        elif kind == "compacted":
            self._compacted(lineno, payload, raw_ts)
        elif kind == "session_meta":
            self.count("session_meta_lines")
        else:
            name = str(kind)
            self.unknown[name] = self.unknown.get(name, 0) + 1

    def _compacted(self, lineno: int, payload: dict[str, Any], raw_ts: Any) -> None:
        self._flush()
        ts = timestamp(raw_ts)
        history = payload.get("replacement_history")
        self.prompt_start = self.seq
        if self.system:
            self._add("system", "system", self.system, ts)
        items = 0
        if isinstance(history, list):
            for item in history:
                specs = item_specs(item) if isinstance(item, dict) else None
                if specs is None:
                    name = str(item.get("type")) if isinstance(item, dict) else type(item).__name__
                    self.unknown[name] = self.unknown.get(name, 0) + 1
                    continue
                items += 1
                for spec in specs:
                    self._spec(spec, ts, as_input=True, summary_if_new=True)
        else:
            message = payload.get("message")
            if isinstance(message, str) and message:
                self._add("user", "summary", message, ts)
                items = 1
        self.compactions.append(
            {"line": lineno, "ts": raw_ts if isinstance(raw_ts, str) else None, "replacement_items": items}
        )

    def _token_count(self, payload: dict[str, Any], ts: datetime | None) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            if self.pending:
                self.count("calls_without_usage")
                self._call(ts, None, None)
            else:
                self.count("token_counts_without_info")
            return
        window = info.get("model_context_window")
        if isinstance(window, int) and not isinstance(window, bool):
            self.window = window
        try:
            total = usage_of(info.get("total_token_usage"))
            last = usage_of(info.get("last_token_usage"))
        except InvalidUsage:
            self._invalid(ts, info)
            return
        if total is not None:
            if total == self.total:
                self.count("reemitted_token_counts")
                return
            if last is None:
                before = self.total or {}
                last = {k: total[k] - before.get(k, 0) for k in USAGE_FIELDS}
                if min(last.values()) < 0:  # the running totals went back: no count of this call
                    self.total = total
                    self._invalid(ts, info)
                    return
            self.total = total
        if last is None:
            self.count("token_counts_without_usage")
            if self.pending:
                self._call(ts, info, None)
            return
        self._call(ts, info, last)

    def _invalid(self, ts: datetime | None, info: dict[str, Any]) -> None:
        """A token_count whose usage holds a value that is not a count: the call of any pending output."""
        self.count("token_counts_with_invalid_usage")
        if self.pending:  # else a re-emitted count: its call was made already
            self._call(ts, info, None, invalid=True)

    def _call(
        self,
        ts: datetime | None,
        info: dict[str, Any] | None,
        last: dict[str, int] | None,
        *,
        invalid: bool = False,
    ) -> None:
        seq = self.ncalls
        self.ncalls = seq + 1
        uid = call_uid(self.uid, seq)
        prompt_end = self.pending[0] if self.pending else self.seq
        base = self.base_parts
        for pseq in self.pending:
            if pseq < base:
                self.touched_stored = True
            else:
                self.parts[pseq - base].call_uid = uid
        self.pending = []
        status: UsageStatus = INVALID if invalid else "missing"
        prompt = cached = output = reasoning = total = ctx = carry = None
        if last is not None:
            prompt = last["input_tokens"]
            cached = last["cached_input_tokens"]
            output = last["output_tokens"]
            reasoning = last["reasoning_output_tokens"]
            total = last["total_tokens"]
            if not is_missing(prompt, output):
                status = "ok"
                ctx = context_tokens("openai", prompt, cached)
                carry = carried_tokens("openai", output, reasoning, reasoning_resent=True)
        self.calls.append(
            Call(
                uid,
                self.uid,
                seq,
                self.prompt_start,
                prompt_end,
                status,
                "openai",
                self.turn,
                ts,
                self.provider,
                self.model,
                prompt,
                output,
                reasoning,
                cached,
                None,
                None,
                total,
                info,
                ctx,
                carry,
                None,
                None,
            )
        )
