"""The synthetic-session generator: realistic coding sessions whose usage follows a known rule.

Each session is one agent (`gemini-cli`, `opencode`, `dexto`), one provider and one model. Its texts come
from `calib.synth.content`; its usage is computed from those texts with a real tokenizer, so every number
a writer puts on disk is known exactly and recorded as the session's `truth`.

The truth rule of a session: a base estimator `base` (a `calib.get_estimator` name), a `ratio`, a
`per_message_overhead` and a `static_overhead` (system prompt + tool schemas, which no agent stores).

Definitions (the scoring and fitting code count the same things from the store):

- tokens(text) = (ratio_milli * base(text) + 500) // 1000, with ratio_milli = round(ratio * 1000): the
  ratio applied per part and rounded half up, in integers so every implementation agrees.
- A *message* is one part the agent sends as input rather than one the model produced: a part whose
  `call_uid` is NULL (`user_text`, `tool_result`, `summary`, and the framing parts an agent adds such as
  OpenCode's compaction prompt). Each message in a prompt costs `per_message_overhead` tokens of framing.
  Model-output parts (`reasoning`, `assistant_text`, `tool_call`, which carry `call_uid`) cost no framing:
  their tokens re-enter the next prompt through `carry`. The count depends only on `call_uid`, never on
  `message_id` or `role`, which differ between agents and layouts (a Dexto tool result is its own
  message, an OpenCode one sits inside the assistant message, gemini-cli groups them in one turn).
- ctx[k] = static_overhead + sum of tokens(text as sent at call k) over the parts of its prompt
  (`prompt_start <= seq < prompt_end`) that are sent (`resent`), + per_message_overhead * (messages in
  the prompt). A pruned tool output counts as its placeholder from `pruned_at` on; a compaction restarts
  the prompt at the summary (plus the framing the agent adds).
- output = sum of tokens over the call's `assistant_text` and `tool_call` parts; reasoning is tokens of its
  reasoning text when the agent re-sends it (OpenCode), else a multiple of it (thoughts are longer than the
  summaries agents keep). carry[k] = tokens of the call's re-sent output parts, which is what each agent's
  rule in `calib.core.usage` gives from the usage the writer records.
- Hence for an unbroken pair: delta[k] = ctx[k] - ctx[k-1] - carry[k-1]
  = sum of tokens(part) + per_message_overhead * count, over the parts with
  `prompt_end[k-1] <= seq < prompt_end[k]` and `call_uid IS NULL`.

Everything is drawn from `random.Random` seeded per session from (seed, tool, index): no global state, the
same output on every run and machine; timestamps count from a fixed epoch, in whole milliseconds (naive UTC).

This module draws each session and is the entry the rest of calib imports; the parts live beside it:
`agents` (models, layouts and the history events each layout records), `rules` (how each provider counts),
`plan` (the requests and the tool steps answering them), `ids` (ids shaped like each agent's), `history`
(the flattened parts and calls an importer stores) and `truth` (usage and the truth document).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from calib.core.errors import UsageError
from calib.importers.common import compact_json
from calib.synth import content as C
from calib.synth.agents import (
    DEFAULT_LAYOUT,
    LAYOUT_EVENTS,
    MODELS,
    STATIC_BASE,
    TOOLS,
    Events,
    check_tool,
    reasoning_policy,
    resolve_layout,
)
from calib.synth.content.environment import roo_environment
from calib.synth.content.system import system_prompt
from calib.synth.history import FlatCall, FlatPart, flatten
from calib.synth.ids import Ids
from calib.synth.model import Step, SynthSession, ToolUse, Turn
from calib.synth.plan import SessionPlanner
from calib.synth.rules import MODEL_RULES, RULES, Rule, rule_for, scaled
from calib.synth.truth import DEFINITIONS, TRUTH_FORMAT, TRUTH_VERSION, truth_document, usage_and_truth

# Re-exported so this module stays the one entry the rest of calib imports.
__all__ = [
    "DEFAULT_LAYOUT",
    "DEFINITIONS",
    "EPOCH",
    "LAYOUT_EVENTS",
    "MODELS",
    "MODEL_RULES",
    "RULES",
    "STATIC_BASE",
    "TOOLS",
    "TRUTH_FORMAT",
    "TRUTH_VERSION",
    "Events",
    "FlatCall",
    "FlatPart",
    "Rule",
    "build_session",
    "check_tool",
    "flatten",
    "generate",
    "reasoning_policy",
    "resolve_layout",
    "rule_for",
    "scaled",
    "truth_document",
]

EPOCH = datetime(2026, 3, 2, 9, 0, 0)


def _after(ts: datetime, lo: float, hi: float, rng: random.Random) -> datetime:
    """A time `lo`..`hi` seconds after `ts`, in whole milliseconds."""
    return ts + timedelta(milliseconds=rng.randint(int(lo * 1000), int(hi * 1000)))


def _title(prompt: str) -> str:
    first = re.split(r"[.?!](?:\s|$)|[。？！]", prompt.strip().splitlines()[0])[0].replace("`", "").strip()
    return first if len(first) <= 72 else first[:69].rstrip() + "..."


def _pick_model(rng: random.Random, tool: str, providers: Sequence[str] | None) -> tuple[str, str]:
    choices = [m for m in MODELS[tool] if providers is None or m[0] in providers]
    if not choices:
        valid = ", ".join(sorted({m[0] for m in MODELS[tool]}))
        raise UsageError(
            f"no {tool} model for providers {list(providers or [])}", hint=f"use some of: {valid}"
        )
    provider, model, _ = rng.choices(choices, weights=[w for _, _, w in choices])[0]
    return provider, model


def build_session(
    tool: str, index: int, *, seed: int, layout: str, providers: Sequence[str] | None = None
) -> SynthSession:
    """Session number `index` of a run: the same for a given (seed, tool, layout events, index)."""
    events = LAYOUT_EVENTS[tool][layout]
    # Three streams: content, events, usage. Content does not depend on the layout, so one seed gives the
    # same conversation in every layout of a tool; only the events a layout can record differ.
    rng = random.Random(f"calib-synth:{seed}:{tool}:{index}")
    erng = random.Random(f"calib-synth:{seed}:{tool}:{index}:events")
    urng = random.Random(f"calib-synth:{seed}:{tool}:{index}:usage")
    provider, model = _pick_model(rng, tool, providers)
    rule = rule_for(provider, model)
    policy = reasoning_policy(tool, provider, model)
    lang = rng.choices(("en", "zh", "ja", "mixed"), weights=(66, 12, 9, 13))[0]
    b = SessionPlanner(tool, rng, provider, model, lang)
    ids = Ids(tool, provider, rng)
    start = (
        EPOCH
        + timedelta(days=index // 3, hours=(index % 3) * 6)
        + timedelta(milliseconds=rng.randint(0, 4 * 3600 * 1000))
    )
    n_turns = rng.choices((1, 2, 3, 4, 5, 6), weights=(1, 3, 4, 4, 3, 2))[0]
    compact_turn = erng.randint(2, n_turns - 1) if n_turns >= 3 and erng.random() < 0.4 else None
    prune_turn = erng.randint(3, n_turns - 1) if n_turns >= 4 and erng.random() < 0.6 else None
    compact_turn = compact_turn if events.compaction else None
    prune_turn = prune_turn if events.prune else None
    static = scaled(rule.ratio_milli, STATIC_BASE[tool]) + rng.randint(-120, 240)
    session = SynthSession(
        tool=tool,
        id=ids.session(start),
        title="",
        project_dir=b.project.root,
        started_at=start,
        provider=provider,
        model=model,
        truth={
            "base": rule.base,
            "ratio": rule.ratio,
            "per_message_overhead": rule.per_message_overhead,
            "static_overhead": static,
            "reasoning": policy,
            "pruned_placeholder": events.placeholder,
            "compaction_prompt": events.compaction_prompt,
            "language": lang,
            "language_of_project": b.project.language,
        },
    )
    if events.system_prompt:
        # Its own stream, so that the other draws of the session do not move.
        session.system = system_prompt(random.Random(f"calib-synth:{seed}:{tool}:{index}:system"), b.project)
    missing: set[str] = set()
    clock = start
    goal = ""
    turn_tools: list[list[ToolUse]] = []
    for ti in range(n_turns):
        prompt, plans = b.first_turn() if ti == 0 else b.followup_turn()
        if ti == 0:
            goal = prompt
            session.title = _title(prompt)
        if tool == "roo-code":
            prompt = roo_environment(prompt, model, b.project)
        turn = Turn(id=ids.message(clock), ts=clock, user_text=prompt)
        at = _after(clock, 0.6, 2.5, rng)
        tools_here: list[ToolUse] = []
        for si, plan in enumerate(plans):
            step = Step(id=ids.message(at), ts=at, usage=None)
            if si == 0 and compact_turn == ti:
                step.compacted = True
                step.summary = C.summary_text(tool, erng, b.project, goal, b.changed)
            if policy != "none" and rng.random() < 0.75:
                style = "thought" if provider == "google" else "prose"
                action = "answer" if plan.final else plan.action
                step.reasoning = C.reasoning_text(rng, style, b.words, action)
            if plan.final:
                step.text = plan.text
            elif rng.random() < 0.45:
                step.text = C.remark(rng, lang, plan.action, b.words)
            for i, run in enumerate(plan.runs):
                use = ToolUse(
                    call_id=ids.tool_call(run.name, at, i),
                    name=run.name,
                    args_json=compact_json(run.args),
                    output=run.output,
                    is_error=run.is_error,
                )
                step.tools.append(use)
                tools_here.append(use)
            if erng.random() < 0.015:
                missing.add(step.id)
            turn.steps.append(step)
            done = _after(at, 1.5, 18.0, rng)
            at = _after(done, 0.05, 6.0, rng) if step.tools else done
        turns_done = at
        turn_tools.append(tools_here)
        session.turns.append(turn)
        if prune_turn is not None and ti + 1 == prune_turn:
            # The agent prunes after a turn ends: older outputs (not the last two turns) become placeholders.
            pruned_at = _after(turns_done, 0.2, 1.0, erng)
            lo = compact_turn if compact_turn is not None and compact_turn <= prune_turn else 0
            for tools in turn_tools[lo : max(lo, prune_turn - 2)]:
                for use in tools:
                    if not use.is_error and len(use.output) > 200:
                        use.pruned = True
                        use.pruned_at = pruned_at
        clock = _after(turns_done, 15.0, 12 * 60.0, rng)
    usage_and_truth(session, events, urng, missing)
    return session


def generate(
    tool: str,
    *,
    sessions: int,
    seed: int,
    layout: str | None = None,
    providers: Sequence[str] | None = None,
) -> list[SynthSession]:
    """Realistic synthetic sessions of `tool` with usage from the truth rule; deterministic for a seed.

    `layout` decides which history events can occur (only those the layout can record on disk);
    `providers` restricts the providers drawn from.
    """
    layout = resolve_layout(tool, layout)
    if sessions < 1:
        raise UsageError(f"--sessions must be at least 1, not {sessions}")
    return [build_session(tool, i, seed=seed, layout=layout, providers=providers) for i in range(sessions)]
