"""The agent-neutral synthetic session: what the generator makes and each agent's writer lays out on disk.

A session is a list of turns. A turn is a user message followed by one or more model steps; each step
is one LLM call with its usage, producing reasoning, text and tool calls, whose results come back
before the next step. Compaction and pruning events are attached to the step they precede.

Part texts are exactly what the importers store for them (the round-trip contract):
- `tool_call` text is the compact JSON of the arguments (`calib.importers.common.compact_json`),
  so writers recover the arguments with `json.loads`;
- `tool_result` text is the tool's output string as the agent records it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(slots=True)
class ToolUse:
    """One tool call of a step and its result."""

    call_id: str
    name: str
    args_json: str  # compact JSON of the arguments: the `tool_call` part text
    output: str  # the `tool_result` part text
    is_error: bool = False
    pruned: bool = False  # the agent later replaced the output by its placeholder, from `pruned_at` on
    pruned_at: datetime | None = None


@dataclass(slots=True)
class Usage:
    """Provider-reported usage of one call, in normalised terms; writers map it to each agent's fields."""

    ctx: int  # whole prompt, cached and uncached
    output: int  # visible output tokens (excluding reasoning)
    reasoning: int = 0
    cache_read: int = 0  # subset of ctx served from cache
    cache_write: int = 0  # subset of ctx written to cache

    @property
    def uncached(self) -> int:
        return self.ctx - self.cache_read - self.cache_write


@dataclass(slots=True)
class Step:
    """One LLM call: what it produced and what the provider reported."""

    id: str
    ts: datetime
    usage: Usage | None  # None: the agent recorded no usage for this call
    reasoning: str = ""
    text: str = ""
    tools: list[ToolUse] = field(default_factory=list)
    error: str | None = None
    # Events that happened just before this call (they break the delta chain):
    compacted: bool = False  # history was summarised; `summary` is the text the model now sees
    summary: str = ""


@dataclass(slots=True)
class Turn:
    """A user message and the model steps that answer it."""

    id: str
    ts: datetime
    user_text: str
    steps: list[Step] = field(default_factory=list)


@dataclass(slots=True)
class SynthSession:
    """One generated session for one agent, provider and model, with the truth it was built from."""

    tool: str  # gemini-cli | opencode | dexto
    id: str
    title: str
    project_dir: str
    started_at: datetime
    provider: str
    model: str
    turns: list[Turn] = field(default_factory=list)
    # The system prompt, where the agent stores one (`Events.system_prompt`); empty elsewhere.
    system: str = ""
    # The rule that made the usage: base tokenizer, ratio, per-message overhead, static overhead.
    truth: dict[str, Any] = field(default_factory=dict)

    def steps(self) -> list[Step]:
        """Every step (call) of the session in order."""
        return [step for turn in self.turns for step in turn.steps]
