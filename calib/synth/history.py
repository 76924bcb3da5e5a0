"""The flattened history: the parts and calls an importer stores for a session, in prompt order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from calib.synth.agents import Events
from calib.synth.model import Step, SynthSession


@dataclass(slots=True)
class FlatPart:
    """One part as the store holds it: kind, text, the call that produced it (None: an input message)."""

    kind: str
    text: str
    call: int | None = None
    resent: bool = True
    pruned_at: datetime | None = None
    pruned_text: str | None = None
    tool_name: str | None = None

    def sent(self, at: datetime) -> str:
        """The text the agent sent at time `at` (a pruned output's placeholder once pruned)."""
        if self.pruned_at is not None and self.pruned_text is not None and self.pruned_at <= at:
            return self.pruned_text
        return self.text


@dataclass(slots=True)
class FlatCall:
    """One call: its step and the `[prompt_start, prompt_end)` range of parts it was sent."""

    index: int
    step: Step
    prompt_start: int
    prompt_end: int


def flatten(session: SynthSession, events: Events, policy: str) -> tuple[list[FlatPart], list[FlatCall]]:
    """The parts and calls an importer stores for `session` (membership and order of each prompt).

    A pruned tool output's placeholder is the layout's (`events.placeholder`), or its own where the
    session's truth lists one for it (`tool_output_masking`: gemini-cli's masked outputs point at
    their own files).
    """
    own = {m["call_id"]: m["placeholder"] for m in session.truth.get("tool_output_masking") or ()}
    parts: list[FlatPart] = []
    calls: list[FlatCall] = []
    start = 0
    if events.system_prompt and session.system:
        parts.append(FlatPart("system", session.system))
    for ti, turn in enumerate(session.turns):
        # where the agent drops this turn's reasoning: when the next turn starts (None: never)
        dropped_at = (
            session.turns[ti + 1].ts if events.reasoning_per_turn and ti + 1 < len(session.turns) else None
        )
        for index, step in enumerate(turn.steps):
            if index == 0:
                if step.compacted:
                    if events.copies_user:
                        # Dexto: the user message came first, the summary keeps it (a copy follows).
                        parts.append(FlatPart("user_text", turn.user_text))
                    start = len(parts)
                    if events.system_prompt and session.system:
                        parts.append(FlatPart("system", session.system))
                    if events.compaction_prompt:
                        parts.append(FlatPart("user_text", events.compaction_prompt))
                    parts.append(FlatPart("summary", step.summary))
                parts.append(FlatPart("user_text", turn.user_text))
            elif step.compacted:
                raise ValueError("the generator compacts only at the first step of a turn")
            k = len(calls)
            calls.append(FlatCall(k, step, start, len(parts)))
            if step.reasoning:
                parts.append(
                    FlatPart(
                        "reasoning",
                        step.reasoning,
                        k,
                        resent=policy == "resent",
                        pruned_at=dropped_at,
                        pruned_text="" if dropped_at is not None else None,
                    )
                )
            if step.text:
                parts.append(FlatPart("assistant_text", step.text, k))
            for tool in step.tools:
                parts.append(FlatPart("tool_call", tool.args_json, k, tool_name=tool.name))
            for tool in step.tools:
                placeholder = own.get(tool.call_id, events.placeholder) if tool.pruned else None
                parts.append(
                    FlatPart(
                        "tool_result",
                        tool.output,
                        None,
                        pruned_at=tool.pruned_at if placeholder else None,
                        pruned_text=placeholder,
                        tool_name=tool.name,
                    )
                )
    return parts, calls
