"""Normalising provider usage into `ctx` (whole prompt) and `carry` (output re-sent next call).

The rules are those of reference/formats.md section 5. Importers call these so that each rule lives once.
"""

from __future__ import annotations

from calib.core.records import UsageStyle


def context_tokens(
    style: UsageStyle, input: int | None, cache_read: int | None = None, cache_write: int | None = None
) -> int | None:
    """The whole prompt the provider processed, cached and uncached together.

    Anthropic-style usage (what OpenCode and Dexto store for every provider) counts cache reads and
    writes apart from `input`; Gemini- and OpenAI-style prompt counts already include cached tokens.
    """
    if input is None:
        return None
    if style == "anthropic":
        return input + (cache_read or 0) + (cache_write or 0)
    return input


def carried_tokens(
    style: UsageStyle, output: int | None, reasoning: int | None = None, *, reasoning_resent: bool = False
) -> int | None:
    """Output tokens of a call that re-enter the next prompt.

    Gemini: `output` already excludes thoughts, which are not re-sent. OpenAI-style: completion tokens
    include reasoning, which is re-sent only where the agent passes the reasoning items back (Codex
    does within a turn: `reasoning_resent`). Anthropic-style as stored by OpenCode: `output`, plus
    `reasoning` when it is reported apart and re-sent (same model on the next call).
    """
    if output is None:
        return None
    if style == "openai":
        return output if reasoning_resent else max(0, output - (reasoning or 0))
    if style == "anthropic" and reasoning_resent:
        return output + (reasoning or 0)
    return output


def is_missing(*values: int | None) -> bool:
    """True when usage is absent or all zero (agents write zeros when a stream lost its usage)."""
    return all(not v for v in values)
