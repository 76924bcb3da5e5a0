"""Ids shaped like each agent's: OpenCode's time-ordered `ses_`/`msg_`, provider tool-call ids, UUIDs elsewhere."""

from __future__ import annotations

import random
import uuid
from datetime import datetime

from calib.synth._common import epoch_ms
from calib.synth.content import hexid

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _b62(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_BASE62) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class Ids:
    """Ids shaped like each agent's (OpenCode's time-ordered `ses_`/`msg_`, UUIDs elsewhere)."""

    def __init__(self, tool: str, provider: str, rng: random.Random) -> None:
        self.tool = tool
        self.provider = provider
        self.rng = rng
        self.counter = 0

    def session(self, at: datetime) -> str:
        """The id of a session started at `at`."""
        if self.tool == "opencode":
            # OpenCode's descending ids: newer sessions sort first.
            head = (~(epoch_ms(at) * 0x1000)) % (1 << 48)
            return f"ses_{head:012x}{_b62(self.rng, 14)}"
        if self.tool == "cline":
            # Cline's SDK session ids: the start in epoch milliseconds and five base-36 characters.
            return f"{epoch_ms(at)}_{''.join(self.rng.choice(_BASE36) for _ in range(5))}"
        return _uuid(self.rng)

    def message(self, at: datetime) -> str:
        """The id of a message written at `at`."""
        if self.tool == "opencode":
            self.counter += 1
            head = (epoch_ms(at) * 0x1000 + self.counter) % (1 << 48)
            return f"msg_{head:012x}{_b62(self.rng, 14)}"
        if self.tool == "claude-code":
            # Anthropic message ids (Claude Code's lines carry them as `message.id`).
            return "msg_01" + _b62(self.rng, 22)
        return _uuid(self.rng)

    def tool_call(self, name: str, at: datetime, index: int) -> str:
        """The id of the `index`-th tool call of a step, named as the provider names it."""
        if self.tool == "gemini-cli":
            return f"{name}_{epoch_ms(at)}_{index}"
        if self.provider == "anthropic":
            return "toolu_01" + _b62(self.rng, 22)
        if self.provider == "deepseek":
            return f"call_{index:02d}_" + _b62(self.rng, 24)
        if self.provider == "google":
            return f"{name.split('--')[-1]}_{hexid(self.rng, 8)}"
        return "call_" + _b62(self.rng, 24)
