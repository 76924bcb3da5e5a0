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
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from calib.core.errors import UsageError
from calib.importers.common import PRUNED_TEXT, compact_json
from calib.synth import content as C
from calib.synth._common import epoch_ms, iso_ms
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

EPOCH = datetime(2026, 3, 2, 9, 0, 0)
TOOLS = ("gemini-cli", "opencode", "dexto")
TRUTH_FORMAT = "calib-synth-truth"
TRUTH_VERSION = 1

# (provider, model, weight) per agent; gemini-cli talks to Google only.
MODELS: dict[str, tuple[tuple[str, str, int], ...]] = {
    "gemini-cli": (
        ("google", "gemini-2.5-pro", 4),
        ("google", "gemini-2.5-flash", 3),
        ("google", "gemini-3-flash-preview", 2),
    ),
    "opencode": (
        ("anthropic", "claude-sonnet-4-5", 4),
        ("openai", "gpt-5", 2),
        ("openai", "gpt-4.1", 1),
        ("google", "gemini-2.5-pro", 2),
        ("deepseek", "deepseek-chat", 1),
    ),
    "dexto": (
        ("anthropic", "claude-sonnet-4-5", 3),
        ("openai", "gpt-5", 2),
        ("openai", "gpt-4.1", 2),
        ("google", "gemini-2.5-pro", 2),
        ("deepseek", "deepseek-chat", 1),
    ),
}


@dataclass(frozen=True, slots=True)
class Rule:
    """How a provider counts: `ratio` times the base estimator, plus framing per input message."""

    base: str
    ratio: float
    per_message_overhead: int

    @property
    def ratio_milli(self) -> int:
        return round(self.ratio * 1000)


# Base estimators come from tiktoken alone (a core dependency), so the sample regenerates anywhere.
# o200k_base is OpenAI's own encoding (ratio 1); Claude and Gemini have no offline tokenizer, so a
# base times a ratio stands in; DeepSeek's own tokenizer is an optional extra, so cl100k stands in.
RULES: dict[str, Rule] = {
    "openai": Rule("tiktoken:o200k_base", 1.0, 4),
    "anthropic": Rule("tiktoken:cl100k_base", 1.12, 6),
    "google": Rule("tiktoken:o200k_base", 1.07, 3),
    "deepseek": Rule("tiktoken:cl100k_base", 1.03, 5),
}
MODEL_RULES: dict[str, Rule] = {
    "gemini-3-flash-preview": Rule("tiktoken:o200k_base", 1.04, 4),
}
# System prompt + tool schemas of each agent, in base tokens (scaled by the ratio, plus per-session jitter
# for the environment block: date, working directory, git state).
STATIC_BASE = {"gemini-cli": 9300, "opencode": 11200, "dexto": 4600}


def rule_for(provider: str, model: str) -> Rule:
    """The truth rule the generator uses for a provider and model."""
    return MODEL_RULES.get(model) or RULES[provider]


def reasoning_policy(tool: str, provider: str, model: str) -> str:
    """What happens to reasoning: `dropped` (never re-sent), `resent` (in the next prompt) or `none`.

    gemini-cli keeps thought summaries it never sends back; OpenCode re-sends reasoning parts while the
    model stays the same; Dexto keeps reasoning only where the usage leaves it apart from the output
    (Google), since elsewhere its `outputTokens` fold in reasoning the next prompt does not hold.
    """
    if tool == "gemini-cli":
        return "dropped"
    if tool == "opencode":
        return "none" if model in ("gpt-4.1", "deepseek-chat") else "resent"
    return "dropped" if provider == "google" else "none"


@dataclass(frozen=True, slots=True)
class Events:
    """Which history events a layout can represent on disk (and so the generator may produce)."""

    compaction: bool
    prune: bool
    compaction_prompt: str | None = None  # framing message the agent sends before the summary
    placeholder: str | None = None  # what a pruned tool output is sent as
    copies_user: bool = False  # Dexto re-lays the kept user message after the summary


_OPENCODE_COMPACTION_PROMPT = "What did we do so far?"

LAYOUT_EVENTS: dict[str, dict[str, Events]] = {
    "gemini-cli": {
        # The legacy JSON record keeps the full transcript through a compression: nothing to see.
        "gemini-json-string": Events(False, False),
        "gemini-json-parts": Events(False, False),
        # gemini-cli records masking without a time, so pruning is never generated for it.
        "gemini-jsonl": Events(True, False),
    },
    "opencode": {
        "opencode-db": Events(True, True, _OPENCODE_COMPACTION_PROMPT, PRUNED_TEXT),
        "opencode-json-tree": Events(True, True, _OPENCODE_COMPACTION_PROMPT, PRUNED_TEXT),
        # MessageV1 had no pruning and no compaction message (the summary stands alone).
        "opencode-project-tree": Events(True, False),
        "opencode-export": Events(True, True, _OPENCODE_COMPACTION_PROMPT, PRUNED_TEXT),
    },
    "dexto": {
        "dexto-db": Events(True, True, None, PRUNED_TEXT, copies_user=True),
        "dexto-db-legacy": Events(True, True, None, PRUNED_TEXT, copies_user=True),
        "dexto-log": Events(True, True, None, PRUNED_TEXT, copies_user=True),
    },
}
DEFAULT_LAYOUT = {"gemini-cli": "gemini-jsonl", "opencode": "opencode-db", "dexto": "dexto-db"}


def check_tool(tool: str) -> None:
    """Raise a usage error naming the valid agents when `tool` is not one."""
    if tool not in TOOLS:
        raise UsageError(f"unknown tool {tool!r}", hint=f"use one of: {', '.join(TOOLS)}")


def resolve_layout(tool: str, layout: str | None) -> str:
    """The layout to generate for (the agent's default when None); unknown names list the valid ones."""
    check_tool(tool)
    if layout is None:
        return DEFAULT_LAYOUT[tool]
    if layout not in LAYOUT_EVENTS[tool]:
        valid = ", ".join(LAYOUT_EVENTS[tool])
        raise UsageError(f"unknown {tool} layout {layout!r}", hint=f"use one of: {valid}")
    return layout


# -- ids and clock ------------------------------------------------------------------------------------

_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _b62(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_BASE62) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class _Ids:
    """Ids shaped like each agent's (OpenCode's time-ordered `ses_`/`msg_`, UUIDs elsewhere)."""

    def __init__(self, tool: str, provider: str, rng: random.Random) -> None:
        self.tool = tool
        self.provider = provider
        self.rng = rng
        self.counter = 0

    def session(self, at: datetime) -> str:
        if self.tool == "opencode":
            # OpenCode's descending ids: newer sessions sort first.
            head = (~(epoch_ms(at) * 0x1000)) % (1 << 48)
            return f"ses_{head:012x}{_b62(self.rng, 14)}"
        return _uuid(self.rng)

    def message(self, at: datetime) -> str:
        if self.tool == "opencode":
            self.counter += 1
            head = (epoch_ms(at) * 0x1000 + self.counter) % (1 << 48)
            return f"msg_{head:012x}{_b62(self.rng, 14)}"
        return _uuid(self.rng)

    def tool_call(self, name: str, at: datetime, index: int) -> str:
        if self.tool == "gemini-cli":
            return f"{name}_{epoch_ms(at)}_{index}"
        if self.provider == "anthropic":
            return "toolu_01" + _b62(self.rng, 22)
        if self.provider == "deepseek":
            return f"call_{index:02d}_" + _b62(self.rng, 24)
        if self.provider == "google":
            return f"{name.split('--')[-1]}_{C.hexid(self.rng, 8)}"
        return "call_" + _b62(self.rng, 24)


def _after(ts: datetime, lo: float, hi: float, rng: random.Random) -> datetime:
    """A time `lo`..`hi` seconds after `ts`, in whole milliseconds."""
    return ts + timedelta(milliseconds=rng.randint(int(lo * 1000), int(hi * 1000)))


# -- session content ----------------------------------------------------------------------------------


@dataclass
class _StepPlan:
    runs: list[C.ToolRun] = field(default_factory=list)
    action: str = "shell"  # what the calls do, for the remark the model makes before them
    text: str = ""
    final: bool = False


def _title(prompt: str) -> str:
    first = re.split(r"[.?!](?:\s|$)|[。？！]", prompt.strip().splitlines()[0])[0].replace("`", "").strip()
    return first if len(first) <= 72 else first[:69].rstrip() + "..."


class _Session:
    """Builds one session's turns from the content module, tracking the project state it changes."""

    def __init__(self, tool: str, rng: random.Random, provider: str, model: str, lang: str) -> None:
        self.tool = tool
        self.rng = rng
        self.provider = provider
        self.model = model
        self.lang = lang
        self.project = C.make_project(rng)
        self.kit = C.Toolkit(tool, rng, self.project)
        self.words = dict(self.project.words)
        self.words["file"] = C.main_file(self.project)
        self.changed: list[str] = []
        self.asked: set[str] = set()

    def _change(self, rel: str) -> None:
        if rel not in self.changed:
            self.changed.append(rel)

    def _tests(self, plans: list[_StepPlan], *, failing: bool = False) -> str:
        cmd, out = C.test_run(self.rng, self.project, failing=failing)
        run = self.kit.shell(cmd, out, exit_code=1 if failing else 0, description="Run the test suite")
        plans.append(_StepPlan([run], "test"))
        return f"`{cmd}` passes." if not failing else f"`{cmd}` fails."

    def first_turn(self) -> tuple[str, list[_StepPlan]]:
        """The opening request and the steps that answer it."""
        rng, kit, p = self.rng, self.kit, self.project
        kind = rng.choices(C.TASK_KINDS, weights=C.TASK_WEIGHTS)[0]
        prompt = C.task_prompt(rng, self.lang, kind, self.words)
        main, test = C.main_file(p), C.test_file(p)
        plans: list[_StepPlan] = []
        if kind == "explain":  # look around, then answer
            plans.append(_StepPlan([kit.listing("")], "explore"))
            plans.append(_StepPlan([kit.read(main), kit.read("README.md")], "read"))
            if rng.random() < 0.5:
                cfg = next((x for x in p.layout if x.endswith((".yaml", ".toml", ".json"))), main)
                plans.append(_StepPlan([kit.read(cfg)], "read"))
            plans.append(_StepPlan(text=C.explain_answer(rng, self.lang, p), final=True))
            return prompt, plans
        if self.tool == "opencode" and rng.random() < 0.45:
            items = ["Reproduce the problem", "Find the root cause", "Fix it", "Run the tests"]
            plans.append(_StepPlan([kit.todo(items)], "plan"))
        if kind == "ci":
            self._tests(plans, failing=True)
        explore = (
            [kit.grep(self.words["num"] if kind != "retry" else self.words["verb"])]
            if rng.random() < 0.6
            else []
        )
        if not explore or rng.random() < 0.4:
            if rng.random() < 0.25:  # some models list with the shell rather than the listing tool
                listing = kit.shell("ls -la", C.ls_output(rng, p), description="List the project root")
                explore.insert(0, listing)
            else:
                explore.insert(0, kit.listing(""))
        plans.append(_StepPlan(explore, "explore"))
        if rng.random() < 0.15:
            plans.append(_StepPlan([kit.read(main.replace(".", "_old.", 1), missing=True)], "read"))
        reads = [kit.read(main)]
        if rng.random() < 0.5:
            reads.append(kit.read(test))
        plans.append(_StepPlan(reads, "read"))
        if rng.random() < 0.15:
            plans.append(_StepPlan([kit.api_call()], "shell"))
        if kind != "ci" and rng.random() < 0.6:
            self._tests(plans, failing=True)
        run, _diff = kit.edit(main)
        self._change(main)
        plans.append(_StepPlan([run], "edit"))
        if kind in ("feature", "review") and rng.random() < 0.5:
            run, _diff = kit.edit(main)
            plans.append(_StepPlan([run], "edit"))
        tests = "Not run yet; say if you want me to run the suite."
        if rng.random() < 0.85:
            tests = self._tests(plans)
        plans.append(
            _StepPlan(text=C.final_answer(rng, self.lang, kind, self.words, self.changed, tests), final=True)
        )
        return prompt, plans

    def followup_turn(self) -> tuple[str, list[_StepPlan]]:
        """A follow-up request and the steps that answer it."""
        rng, kit, p = self.rng, self.kit, self.project
        # A user rarely asks for the same follow-up twice: draw among the kinds not asked yet.
        fresh = [
            (k, w)
            for k, w in zip(C.FOLLOWUP_KINDS, C.FOLLOWUP_WEIGHTS, strict=True)
            if k not in self.asked and (k != "migration" or any(x.endswith(".sql") for x in p.layout))
        ] or [("answer", 1)]
        kind = rng.choices([k for k, _ in fresh], weights=[w for _, w in fresh])[0]
        self.asked.add(kind)
        prompt = C.followup_prompt(rng, self.lang, kind, self.words)
        plans: list[_StepPlan] = []
        tests = ""
        if kind == "test":
            rel = C.test_file(p)
            body = C.file_text(rng, p, rel) + C.fill(
                "\n\ndef test_empty_input_gives_empty_totals():\n    assert totals_by_@group@([]) == {}\n",
                self.words,
            )
            plans.append(_StepPlan([kit.write(rel, body)], "write"))
            self._change(rel)
            tests = self._tests(plans)
        elif kind == "lint":
            cmd, out = C.lint_output(rng, p)
            plans.append(_StepPlan([kit.shell(cmd, out, exit_code=1, description="Run the linter")], "shell"))
            run, _ = kit.edit(C.main_file(p))
            self._change(C.main_file(p))
            plans.append(_StepPlan([run], "edit"))
            plans.append(
                _StepPlan([kit.shell(cmd, "All checks passed!\n", description="Run the linter")], "shell")
            )
            tests = f"`{cmd}` is clean now."
        elif kind == "git":
            diff = ""
            for rel in self.changed[:2]:
                edit = C.pick_edit(rng, C.file_text(rng, p, rel))
                if edit:
                    diff += C.unified_diff(rel, edit[0], edit[1], edit[2])
            s_cmd, s_out = C.git_output(rng, p, "status")
            d_cmd, d_out = C.git_output(rng, p, "diff", diff)
            plans.append(_StepPlan([kit.shell(s_cmd, s_out), kit.shell(d_cmd, d_out)], "shell"))
            if rng.random() < 0.4:
                l_cmd, l_out = C.git_output(rng, p, "log")
                plans.append(_StepPlan([kit.shell(l_cmd, l_out)], "shell"))
        elif kind == "readme":
            plans.append(_StepPlan([kit.read("README.md")], "read"))
            run, _ = kit.edit("README.md")
            self._change("README.md")
            plans.append(_StepPlan([run], "edit"))
        elif kind == "api":
            plans.append(_StepPlan([kit.api_call()], "shell"))
            fixture = next((x for x in p.layout if "fixtures" in x), None)
            if fixture and rng.random() < 0.6:
                plans.append(_StepPlan([kit.read(fixture)], "read"))
        elif kind == "migration":
            sql = next(x for x in p.layout if x.endswith(".sql"))
            plans.append(_StepPlan([kit.read(sql)], "read"))
            new = sql.replace("0001_create", "0002_index")
            body = C.fill(
                "-- speeds up the per-@group@ totals\n"
                "CREATE INDEX IF NOT EXISTS @ents@_@group@_status_idx ON @ents@ (@group@, status);\n",
                self.words,
            )
            plans.append(_StepPlan([kit.write(new, body)], "write"))
            self._change(new)
        if kind == "answer":
            text = C.explain_answer(rng, self.lang, p)
        else:
            text = C.followup_answer(rng, self.lang, kind, self.words, self.changed, tests)
        plans.append(_StepPlan(text=text, final=True))
        return prompt, plans


# -- the flattened history (what the importers store) ---------------------------------------------------


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
    """The parts and calls an importer stores for `session` (membership and order of each prompt)."""
    parts: list[FlatPart] = []
    calls: list[FlatCall] = []
    start = 0
    for turn in session.turns:
        for index, step in enumerate(turn.steps):
            if index == 0:
                if step.compacted:
                    if events.copies_user:
                        # Dexto: the user message came first, the summary keeps it (a copy follows).
                        parts.append(FlatPart("user_text", turn.user_text))
                    start = len(parts)
                    if events.compaction_prompt:
                        parts.append(FlatPart("user_text", events.compaction_prompt))
                    parts.append(FlatPart("summary", step.summary))
                parts.append(FlatPart("user_text", turn.user_text))
            elif step.compacted:
                raise ValueError("the generator compacts only at the first step of a turn")
            k = len(calls)
            calls.append(FlatCall(k, step, start, len(parts)))
            if step.reasoning:
                parts.append(FlatPart("reasoning", step.reasoning, k, resent=policy == "resent"))
            if step.text:
                parts.append(FlatPart("assistant_text", step.text, k))
            for tool in step.tools:
                parts.append(FlatPart("tool_call", tool.args_json, k, tool_name=tool.name))
            for tool in step.tools:
                placeholder = events.placeholder if tool.pruned else None
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


# -- usage ----------------------------------------------------------------------------------------------


class _Counter:
    """tokens(text) under a rule, counting each distinct text once with the base estimator."""

    def __init__(self, rule: Rule) -> None:
        from calib.estimators import get_estimator

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


def scaled(ratio_milli: int, base: int) -> int:
    """round_half_up(ratio * base) in integers: the per-part token count of the truth rule."""
    return (ratio_milli * base + 500) // 1000


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


def _usage_and_truth(session: SynthSession, events: Events, rng: random.Random, missing: set[str]) -> None:
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


# -- sessions ---------------------------------------------------------------------------------------------


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
    b = _Session(tool, rng, provider, model, lang)
    ids = _Ids(tool, provider, rng)
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
    missing: set[str] = set()
    clock = start
    goal = ""
    turn_tools: list[list[ToolUse]] = []
    for ti in range(n_turns):
        prompt, plans = b.first_turn() if ti == 0 else b.followup_turn()
        if ti == 0:
            goal = prompt
            session.title = _title(prompt)
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
    _usage_and_truth(session, events, urng, missing)
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
