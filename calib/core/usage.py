"""Normalising provider usage into `ctx` (whole prompt) and `carry` (output re-sent next call).

The rules are those of reference/formats.md section 5. Importers call these so that each rule lives once.
Every count an importer takes from a log goes through `token_counts` first: a value that is not a
count makes the call's usage `INVALID`, whatever the agent and layout.
"""

from __future__ import annotations

from typing import Final, cast

from calib.core.records import UsageStatus, UsageStyle

# The largest token count taken as one: JavaScript's largest exact integer (most agents are JavaScript
# programs, which cannot write a larger one exactly; no provider reported anything near it). Bounding
# each count bounds every sum made of them (ctx, total, a chain's deltas) far inside 64-bit integers.
MAX_COUNT: Final = 2**53 - 1
# The status of a call whose recorded usage holds a value that is not a count (see `token_counts`).
INVALID: Final[UsageStatus] = "invalid"


def token_counts(*values: object) -> tuple[int | None, ...] | None:
    """`values` as token counts (None where not recorded), or None when any is not a count.

    A count is an integer from 0 to `MAX_COUNT`, or a float equal to one (JSON writers differ on 5 and
    5.0). A boolean, a fraction, a string, a negative or larger number, or anything else is not: the
    importer then keeps the call with its raw usage and status `INVALID`, never a target.
    """
    for value in values:
        # Nearly every count is a plain int in range, or None: those need no converting.
        if value is not None and (type(value) is not int or not 0 <= value <= MAX_COUNT):
            break
    else:
        return cast("tuple[int | None, ...]", values)
    out: list[int | None] = []
    for value in values:
        if value is None:
            out.append(None)
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
            return None
        out.append(value)
    return tuple(out)


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
