"""One assistant record's `usageMetadata` read as a call's usage (rules in the package docstring)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calib.core.records import UsageStatus, UsageStyle
from calib.core.usage import INVALID, carried_tokens, context_tokens, is_missing, token_counts

# The fields of Gemini's `GenerateContentResponseUsageMetadata` Qwen Code writes, in `Call` order.
FIELDS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
    "totalTokenCount",
)


@dataclass(slots=True)
class CallUsage:
    """A call's counts as recorded, how they read, and the normalised `ctx` / `carry`."""

    status: UsageStatus
    style: UsageStyle
    input: int | None = None
    output: int | None = None
    reasoning: int | None = None
    cache_read: int | None = None
    tool_prompt: int | None = None
    total: int | None = None
    ctx: int | None = None
    carry: int | None = None
    raw: dict[str, Any] | None = None


def split_by_seventy(prompt: int, output: int, total: int) -> bool:
    """True when (prompt, output) is the 70/30 split the OpenAI-compatible converter makes up from a
    total alone: prompt = Math.round(total * 0.7), output = total - prompt.

    The product is taken in floating point as JavaScript takes it (45 * 0.7 is 31.499999999999996, so
    45 splits 31 + 14, not 32 + 13)."""
    return total > 0 and prompt == math.floor(total * 0.7 + 0.5) and output == total - prompt


def call_usage(metadata: Any) -> CallUsage:
    """The usage of one assistant record from its `usageMetadata` (None or absent: no usage)."""
    if not isinstance(metadata, dict):
        return CallUsage("missing", "gemini", raw=None if metadata is None else {"usageMetadata": metadata})
    raw = dict(metadata)
    counts = token_counts(*(metadata.get(f) for f in FIELDS))
    if counts is None:
        return CallUsage(INVALID, "gemini", raw=raw)
    prompt, output, thoughts, cached, tool_prompt, total = counts
    usage = CallUsage("ok", "gemini", prompt, output, thoughts, cached, tool_prompt, total, raw=raw)
    if is_missing(prompt, output, total):
        usage.status = "missing"
        return usage
    # Through the OpenAI-compatible converter the total is prompt + completion, and the completion
    # holds the reasoning; Gemini's own total adds the thoughts to candidates that exclude them.
    if thoughts and prompt is not None and output is not None and total == prompt + output:
        usage.style = "openai"
    if (
        prompt is not None
        and output is not None
        and total is not None
        and split_by_seventy(prompt, output, total)
    ):
        usage.status = "suspect"  # made up from a total: no call's real prompt
        return usage
    if prompt is None:
        usage.status = "missing"
        return usage
    usage.ctx = context_tokens(usage.style, prompt)
    usage.carry = carried_tokens(usage.style, output, thoughts)
    return usage
