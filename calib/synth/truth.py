"""Usage from the truth rule and the truth document: every call's expected ctx, carry and delta.

The definitions are stated in `calib.synth.generate`'s docstring and, for `truth.json`, in `DEFINITIONS`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from calib.estimators import get_estimator
from calib.synth._common import iso_ms
from calib.synth.agents import Events
from calib.synth.history import flatten
from calib.synth.model import SynthSession, Usage
from calib.synth.rules import Rule, rule_for, scaled

TRUTH_FORMAT = "calib-synth-truth"
TRUTH_VERSION = 1


class _Counter:
    """tokens(text) under a rule, counting each distinct text once with the base estimator."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.estimator = get_estimator(rule.base)
        self.cache: dict[str, int] = {}

    def prime(self, texts: Sequence[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if todo:
            for text, n in zip(todo, self.estimator.count_many(todo), strict=True):
                self.cache[text] = n

    def base(self, text: str) -> int:
        if text not in self.cache:
            self.prime([text])
        return self.cache[text]

    def tokens(self, text: str) -> int:
        return scaled(self.rule.ratio_milli, self.base(text))


def _cache_split(provider: str, rng: random.Random, ctx: int, prefix: int) -> tuple[int, int]:
    """(cache_read, cache_write) of a prompt whose first `prefix` tokens an earlier call left in cache."""
    prefix = max(0, min(prefix, ctx))
    if provider == "anthropic":
        # Explicit cache breakpoints: the old prompt is read, the new tail written, a few tokens uncached.
        uncached = min(ctx, rng.randint(1, 12))
        read = min(prefix, ctx - uncached) if rng.random() < 0.93 else 0
        return read, ctx - read - uncached
    if provider == "openai":
        hit = prefix >= 1024 and rng.random() < 0.85
        return ((prefix // 128) * 128 if hit else 0), 0
    if provider == "deepseek":
        return ((prefix // 64) * 64 if rng.random() < 0.9 else 0), 0
    # Gemini implicit caching: most of a long shared prefix, some of the time.
    hit = prefix >= 2048 and rng.random() < 0.7
    return (max(0, prefix - rng.randint(0, 400)) if hit else 0), 0


def usage_and_truth(session: SynthSession, events: Events, rng: random.Random, missing: set[str]) -> None:
    """Compute every step's usage from its rendered prompt and record the per-call truth."""
    truth = session.truth
    rule = rule_for(session.provider, session.model)
    policy = str(truth["reasoning"])
    static = int(truth["static_overhead"])
    parts, calls = flatten(session, events, policy)
    counter = _Counter(rule)
    counter.prime([p.text for p in parts] + [p.pruned_text for p in parts if p.pruned_text])
    overhead = rule.per_message_overhead
    factor = rng.randint(2, 5)
    records: list[dict[str, Any]] = []
    prev_ctx = 0
    prev_ts: datetime | None = None
    prev_start = 0
    for call in calls:
        step = call.step
        at = step.ts
        prompt = parts[call.prompt_start : call.prompt_end]
        body = sum(counter.tokens(p.sent(at)) for p in prompt if p.resent)
        messages = sum(1 for p in prompt if p.call is None)
        ctx = static + body + overhead * messages
        produced = [p for p in parts if p.call == call.index]
        output = sum(counter.tokens(p.text) for p in produced if p.kind in ("assistant_text", "tool_call"))
        reasoning_text = sum(counter.tokens(p.text) for p in produced if p.kind == "reasoning")
        reasoning = reasoning_text if policy == "resent" else reasoning_text * factor
        carry = sum(counter.tokens(p.text) for p in produced if p.resent)
        # Why the delta chain breaks before this call (None: delta obeys the rule exactly).
        brk: str | None = None
        if call.index == 0:
            brk = "first"
        elif call.prompt_start != prev_start:
            brk = "compaction"
        elif prev_ts is not None and any(
            p.pruned_at is not None and prev_ts < p.pruned_at <= at for p in parts[: call.prompt_end]
        ):
            brk = "prune"
        if call.index == 0:
            prefix = static if rng.random() < 0.5 else 0
        elif brk in ("compaction", "prune"):
            prefix = static  # the system prompt and tools are still a cached prefix
        else:
            prefix = prev_ctx
        cache_read, cache_write = _cache_split(session.provider, rng, ctx, prefix)
        reported = step.id not in missing
        step.usage = (
            Usage(ctx=ctx, output=output, reasoning=reasoning, cache_read=cache_read, cache_write=cache_write)
            if reported
            else None
        )
        appended = (
            [p for p in parts[calls[call.index - 1].prompt_end : call.prompt_end] if p.call is None]
            if call.index
            else []
        )
        appended_tokens = sum(counter.tokens(p.sent(at)) for p in appended)
        record: dict[str, Any] = {
            "call": call.index,
            "step_id": step.id,
            "ts": iso_ms(at),
            "reported": reported,
            "ctx": ctx,
            "input": ctx - cache_read - cache_write,
            "cache_read": cache_read,
            "cache_write": cache_write,
            "output": output,
            "reasoning": reasoning,
            "carry": carry,
            "prompt_parts": len(prompt),
            "prompt_messages": messages,
            "appended_messages": len(appended),
            "appended_tokens": appended_tokens,
            "break": brk,
            "delta": None,
        }
        if call.index:
            last = records[-1]
            if last["reported"] and reported:
                record["delta"] = ctx - last["ctx"] - last["carry"]
            elif brk is None:
                brk = record["break"] = "missing_usage"
        records.append(record)
        prev_ctx, prev_ts, prev_start = ctx, at, call.prompt_start
    truth["calls"] = records


def truth_document(sessions: list[SynthSession], *, tool: str, layout: str, seed: int) -> dict[str, Any]:
    """The `truth.json` document: the definitions, the rules used and every call's expected values."""
    by_model: dict[str, int] = {}
    for s in sessions:
        key = f"{s.provider}/{s.model}"
        by_model[key] = by_model.get(key, 0) + len(s.steps())
    rules = {
        f"{s.provider}/{s.model}": {
            "base": s.truth["base"],
            "ratio": s.truth["ratio"],
            "per_message_overhead": s.truth["per_message_overhead"],
        }
        for s in sessions
    }
    return {
        "format": TRUTH_FORMAT,
        "version": TRUTH_VERSION,
        "synthetic": True,
        "tool": tool,
        "layout": layout,
        "seed": seed,
        "sessions": len(sessions),
        "calls": sum(by_model.values()),
        "calls_by_model": by_model,
        "rules": rules,
        "definitions": DEFINITIONS,
        "session_truth": [
            {
                "id": s.id,
                "title": s.title,
                "provider": s.provider,
                "model": s.model,
                "started_at": iso_ms(s.started_at),
                **{k: v for k, v in s.truth.items() if k != "calls"},
                "calls": s.truth["calls"],
            }
            for s in sessions
        ],
    }


DEFINITIONS = {
    "tokens": "tokens(text) = (round(ratio*1000) * base(text) + 500) // 1000, base = the named calib estimator",
    "message": (
        "a part with call_uid NULL (user_text, tool_result, summary, agent framing such as OpenCode's "
        "compaction prompt); model-output parts (reasoning, assistant_text, tool_call) are not messages"
    ),
    "ctx": (
        "static_overhead + sum tokens(text as sent at the call) over sent parts with prompt_start <= seq < "
        "prompt_end + per_message_overhead * messages among them"
    ),
    "carry": "sum of tokens over the call's re-sent output parts (the agent's carry rule gives it from usage)",
    "delta": (
        "ctx[k] - ctx[k-1] - carry[k-1]; when break is null it equals appended_tokens + "
        "per_message_overhead * appended_messages, over parts prompt_end[k-1] <= seq < prompt_end[k] with "
        "call_uid NULL"
    ),
    "break": "first | compaction | prune | missing_usage | null",
}
