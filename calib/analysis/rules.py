"""The agents' rules the replay judges: what each agent shows as its context, and when it compacts.

A rule is a frozen dataclass: its fields are the agent's parameters (thresholds, reserves), `limit`
gives its threshold for a model's window (`calib.analysis.windows`), and its class attributes tell the
replay (`calib.analysis.replay`) how to apply it: which last-call count it reads (`count`), whether it
compares with `>` (`strict`) or `>=`, whether its decision depends on the estimator
(`uses_estimator`), whether it adds the estimate of what came since to the latest count (`chained`),
whether its count includes the step's output (`counts_output`), and whether it has a pre-send overflow
guard (`guard`). A reasoning policy (`POLICIES`) says which reasoning and cache
tokens a count holds; `OUTCOMES` are the verdicts the replay gives each call.

The quantities in the table and the rules below (`ctx`, `content`, `vis`, `kept_P`, `U`, `est_delta`,
`est_full`, segments and resets) are defined in `calib.analysis.replay`'s docstring.

The count a rule reads off a finished call m, `L_P[m]`, under policy P:

| rule | `raw` (the agent's own formula) | `include`, `strip-all-but-last`, `strip-all` | `ui-sum` |
|---|---|---|---|
| `gemini-cli` | `ctx` (lastPromptTokenCount) | `content + kept_P(m)` | `U` |
| `dexto` | `ctx + output` (lastInput + lastOutput) | `content + vis + kept_P(m+1)` | `U` |
| `opencode` | `total`, else `ctx + output` | `content + vis + kept_P(m+1)` | `U` |
| `opencode-2025` | `ctx - cache_write + output` | `content + vis + kept_P(m+1) - cache_write` | `U` |
| `opencode-2` | `total` (`ctx + output + reasoning`) | `content + vis + kept_P(m+1)` | `U` |
| `claude-code`, `claude-code-early`, `codex` | `ctx + output` | `content + vis + kept_P(m+1)` | `U` |
| `qwen-code`, `roo-code`, `cline-legacy` | `ctx + output` | `content + vis + kept_P(m+1)` | `U` |
| `llxprt` | `ctx` (the last promptTokens) | `content + kept_P(m)` | `U` |
| `cline` | (none: the whole request estimated) | | |

`kept_P(m+1)` on a finished call counts its own reasoning too (`include`: all so far;
`strip-all-but-last`: `reasoning[m]`). So with 100k of content and 50k of reasoning on the last call,
`strip-all` shows 100k and `include` 150k.

What each rule displays before call k (`displayed`), and on what it decides (reference/formats.md).
"The latest call" is the latest earlier call of the session with usage, not before a *reset*: a call
whose chain break is `compaction` or `rewound` (the history was rewritten just before it, so no count
from before it applies).

- `gemini-cli` (1.6): `L_P` of the latest call (lastPromptTokenCount): 0 at the session start, and at
  a reset the pure estimate `est_full[k]` (gemini-cli re-estimates the history after `setHistory`);
  compresses when `displayed >= threshold × W.context`, `threshold = 0.5` (the default of 0.17.0 on;
  `gemini-cli-0.16`, 0.2, for 0.12.0 to 0.16; `gemini-cli-0.11`, 0.7, before: `gemini_cli_rule`; its
  logs record no version, so its sessions get the current one). Pre-send guard, when it
  does not compress: refuses the request when `guard > W.context`, where `guard = L_P + est_delta[k]`
  (the estimate of what was appended since call k-1), or `est_full[k]` where there is no latest call.
  Compression is decided on actual counts, so only the guard depends on the estimator.
- `dexto` (3.5): the pre-call estimate `L_P[m] + sum(est_delta[j], m < j <= k)` from the latest call m
  (basis `chained`; Dexto keeps its last actuals in memory and estimates everything newer), else the
  pure estimate `est_full[k]` (basis `full`; calib has no system prompt or tool schemas, so that
  undercounts by the static overhead). Compacts when
  `displayed > floor(min(W.context, max_context_tokens) × 0.9)`. Its post-call check on the last
  actual input is implied: `L[m] >= ctx[m]`.
- `opencode` (2.6, newer): `L_P` of the latest call (0 at the start and at a reset: no step has
  finished since); overflow when `displayed >= usable`, `usable = W.input - reserved` when the model
  has an input cap, else `W.context - W.max_output`; `reserved = min(20_000, W.max_output)` unless given.
- `opencode-2` (7.5): chained like `dexto`, from the latest call's `total` (the pre-turn estimate
  `L_P[m] + sum(est_delta[j], m < j <= k)`, else `est_full[k]`); compacts when `displayed >=
  min(W.input - 20_000, W.context - max(min(W.max_output, 32_000), 20_000))`.
- `claude-code` (8.5): `L_P` of the latest call, `prompt+output` (what `compact_boundary.preTokens`
  records); compacts when `displayed >= W.context - min(W.max_output, 20_000) - 13_000`
  (`claude-code-early`: a 25,000 buffer, the band of versions up to 2.1.20).
- `codex` (9.7): `L_P` of the latest call, `prompt+output` (`total_tokens`); compacts when
  `displayed >= 0.9 × W.input` (the 272k prompt cap of the GPT-5 family), else `0.9 × W.context`.
- `qwen-code` (`chatCompressionService.ts` `computeThresholds`, `tokenEstimation.ts`): chained like
  `dexto` from the latest call's prompt plus output (`estimatePromptTokens`: the last prompt and output
  counts plus an estimate of the new message); compacts when `displayed >= min(0.85 × W.context,
  W.context - 20_000 - 13_000)` (the proportional share alone when that ceiling is not positive).
- `llxprt` (`CompressionHandler.shouldCompress`): chained from the latest call's prompt count (the last
  API `promptTokens` plus the estimate of what is pending); compresses when `displayed >= 0.85 ×
  (W.context - W.max_output)` (the completion budget).
- `cline` (the Cline SDK of 4.x, `extensions/context/compaction.ts`): every request estimated whole,
  system prompt and tools included (basis `full` on every call); compacts when `displayed >= 0.9 ×
  min(W.input, W.context)`, or `0.9 × 0.9 × W.context` without an input cap.
- `cline-legacy` (Cline 3.x, `context-window-utils.ts`): the previous request's
  `tokensIn + tokensOut + cacheWrites + cacheReads`; truncates when it reaches the window less 27k,
  30k or 40k for windows of 64k, 128k and 200k, else `max(W.context - 40k, 0.8 × W.context)`.
- `roo-code` (`src/core/context-management/index.ts`): chained from the latest call's total plus the
  estimate of the new message; condenses when `displayed > min(W.context × 100% (the
  `autoCondenseContextPercent` default), 0.9 × W.context - W.max_output)`. Roo compares the share with
  `>=` and the buffer with `>`; the rule keeps `>`, the one that binds at the default 100%.
- `opencode-2025`: as `opencode` with the 2025 count (no cache writes, no separate reasoning) and
  overflow when `displayed > W.context - min(W.max_output, 32_000)`.

`basis` says where `displayed` came from: `actual` (a recorded count), `chained` (Dexto's count plus
estimates), `full` (a pure estimate) or `none` (nothing known: 0).

`own_rule(tool, version)` is the rule of the agent that wrote a session (the replay's `own`, its
default); `all` names every rule. `what_if_window(rule, window, target)` is the smallest window of a
model's shape whose threshold under a rule reaches `target` tokens: how the replay sizes a what-if window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

from calib.analysis.windows import Window
from calib.core.errors import UsageError
from calib.runtime import RULES as _PRESETS
from calib.runtime import STRICT_RULES, rule_limit

__all__ = [
    "AGENT_ESTIMATORS",
    "ALL_RULES",
    "OUTCOMES",
    "OWN_RULE",
    "POLICIES",
    "RULES",
    "RULE_NAMES",
    "ClaudeCodeEarlyRule",
    "ClaudeCodeRule",
    "ClineLegacyRule",
    "ClineRule",
    "CodexRule",
    "CountKind",
    "DextoRule",
    "Gemini011Rule",
    "Gemini016Rule",
    "GeminiRule",
    "LlxprtRule",
    "OpenCode2Rule",
    "OpenCode2025Rule",
    "OpenCodeRule",
    "QwenCodeRule",
    "RooCodeRule",
    "Rule",
    "agent_estimator",
    "claude_code_rule",
    "cline_rule",
    "gemini_cli_rule",
    "get_rule",
    "own_rule",
    "resolve_policies",
    "resolve_rules",
    "rule_params",
    "what_if_window",
]

# Which last-call count a rule reads (see the module docstring's table).
CountKind = Literal["prompt", "prompt+output", "total", "prompt-write+output"]


class _AgentRule:
    """What every rule below shares: `strict` is the runtime's (`STRICT_RULES`, by the rule's name), and
    its limit comes from the runtime's table (`calib.runtime.rule_limit`) with the rule's fields."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]  # each rule is a dataclass
    name: ClassVar[str]
    strict: ClassVar[bool]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.strict = cls.name in STRICT_RULES

    def limit(self, window: Window) -> float:
        """The count at which the agent compacts on `window`."""
        return rule_limit(self.name, asdict(self), window.context, window.max_output, window.input)


@dataclass(frozen=True, slots=True)
class DextoRule(_AgentRule):
    """Dexto's reactive overflow: pre-call estimate over `floor(min(window, max) × threshold)`."""

    threshold: float = _PRESETS["dexto"]["threshold"]
    max_context_tokens: int | None = _PRESETS["dexto"]["max_context_tokens"]

    name: ClassVar[str] = "dexto"
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = True
    chained: ClassVar[bool] = True
    counts_output: ClassVar[bool] = False
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class GeminiRule(_AgentRule):
    """gemini-cli's chat compression on the last prompt count, plus its pre-send overflow guard."""

    threshold: float = _PRESETS["gemini-cli"]["threshold"]
    overflow_guard: bool = True

    name: ClassVar[str] = "gemini-cli"
    chained: ClassVar[bool] = False
    count: ClassVar[CountKind] = "prompt"
    uses_estimator: ClassVar[bool] = True  # the guard estimates the new request
    counts_output: ClassVar[bool] = False

    @property
    def guard(self) -> bool:
        return self.overflow_guard


@dataclass(frozen=True, slots=True)
class Gemini016Rule(GeminiRule):
    """gemini-cli 0.12.0 to 0.16.x: compression at 20% of the window (the default those releases shipped)."""

    threshold: float = _PRESETS["gemini-cli-0.16"]["threshold"]

    name: ClassVar[str] = "gemini-cli-0.16"


@dataclass(frozen=True, slots=True)
class Gemini011Rule(GeminiRule):
    """gemini-cli up to 0.11.x: compression at 70% of the window."""

    threshold: float = _PRESETS["gemini-cli-0.11"]["threshold"]

    name: ClassVar[str] = "gemini-cli-0.11"


@dataclass(frozen=True, slots=True)
class OpenCodeRule(_AgentRule):
    """OpenCode's overflow check (newer `session/overflow.ts`): last step's count over the usable window."""

    buffer: int = _PRESETS["opencode"]["buffer"]  # COMPACTION_BUFFER
    reserved: int | None = _PRESETS["opencode"]["reserved"]  # config.compaction.reserved

    name: ClassVar[str] = "opencode"
    chained: ClassVar[bool] = False
    count: ClassVar[CountKind] = "total"
    uses_estimator: ClassVar[bool] = False
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class OpenCode2025Rule(_AgentRule):
    """OpenCode's 2025 overflow check: `input + cache.read + output > context - min(output limit, 32k)`."""

    output_token_max: int = _PRESETS["opencode-2025"]["output_token_max"]  # OUTPUT_TOKEN_MAX

    name: ClassVar[str] = "opencode-2025"
    chained: ClassVar[bool] = False
    count: ClassVar[CountKind] = "prompt-write+output"
    uses_estimator: ClassVar[bool] = False
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ClaudeCodeRule(_AgentRule):
    """Claude Code's auto-compact: the last call's whole count over `window - min(max output, 20k) - buffer`.

    The count is the one `compact_boundary.preTokens` records: `input + cache_creation + cache_read +
    output` of the last call (reference/formats.md 8.5). The buffer is 13k from 2.1.25 on (167k on a
    200k window); `claude-code-early` is the band seen up to 2.1.20 (about 45k below the window).
    """

    output_reserve: int = _PRESETS["claude-code"]["output_reserve"]
    buffer: int = _PRESETS["claude-code"]["buffer"]

    name: ClassVar[str] = "claude-code"
    chained: ClassVar[bool] = False
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = False
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ClaudeCodeEarlyRule(ClaudeCodeRule):
    """Claude Code up to 2.1.20: compaction about 45k below the window (155k-158k on 200k models)."""

    buffer: int = _PRESETS["claude-code-early"]["buffer"]

    name: ClassVar[str] = "claude-code-early"


@dataclass(frozen=True, slots=True)
class CodexRule(_AgentRule):
    """Codex's auto-compact: the last call's `total_tokens` (input + output) at 90% of the model's window.

    Codex's window for the GPT-5 family is the 272k prompt cap (`window.input`), so the limit is 244,800
    (reference/formats.md 9.7); `auto_compact_token_limit` in its config replaces the fraction.
    """

    fraction: float = _PRESETS["codex"]["fraction"]
    auto_compact_token_limit: int | None = _PRESETS["codex"]["auto_compact_token_limit"]

    name: ClassVar[str] = "codex"
    chained: ClassVar[bool] = False
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = False
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class OpenCode2Rule(_AgentRule):
    """OpenCode 2's pre-turn check: last actual plus the estimate of what came after, over the usable window.

    `packages/core/src/session/compaction.ts` (reference/formats.md 7.5): the estimate starts from the last
    assistant row with usage, `input + cache.read + cache.write + output + reasoning` (its `total`), adds
    the estimate of everything after it, and compacts when it reaches
    `min(limit.input - buffer, context - max(min(limit.output, 32k), buffer))`.
    """

    buffer: int = _PRESETS["opencode-2"]["buffer"]  # DEFAULT_BUFFER
    output_token_max: int = _PRESETS["opencode-2"]["output_token_max"]  # OUTPUT_TOKEN_MAX

    name: ClassVar[str] = "opencode-2"
    chained: ClassVar[bool] = True
    count: ClassVar[CountKind] = "total"
    uses_estimator: ClassVar[bool] = True
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class QwenCodeRule(_AgentRule):
    """Qwen Code's auto-compaction: last prompt and output plus the new message's estimate, over
    `min(threshold × window, window - summary_reserve - buffer)`."""

    threshold: float = _PRESETS["qwen-code"]["threshold"]  # DEFAULT_PCT
    summary_reserve: int = _PRESETS["qwen-code"]["summary_reserve"]  # SUMMARY_RESERVE
    buffer: int = _PRESETS["qwen-code"]["buffer"]  # AUTOCOMPACT_BUFFER

    name: ClassVar[str] = "qwen-code"
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = True
    chained: ClassVar[bool] = True
    counts_output: ClassVar[bool] = False
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class LlxprtRule(_AgentRule):
    """llxprt-code's compression: the last API prompt count plus the pending estimate, over
    `threshold × (window - completion budget)`."""

    threshold: float = _PRESETS["llxprt"]["threshold"]  # compressionThreshold

    name: ClassVar[str] = "llxprt"
    count: ClassVar[CountKind] = "prompt"
    uses_estimator: ClassVar[bool] = True
    chained: ClassVar[bool] = True
    counts_output: ClassVar[bool] = False
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ClineRule(_AgentRule):
    """Cline 4.x (its SDK): the whole request estimated, over `fraction` of the usable input."""

    fraction: float = _PRESETS["cline"]["fraction"]  # COMPACTION_TRIGGER_RATIO
    input_share: float = _PRESETS["cline"]["input_share"]  # CONTEXT_WINDOW_INPUT_RATIO

    name: ClassVar[str] = "cline"
    count: ClassVar[CountKind] = "prompt"  # read by nothing: the rule estimates every request whole
    uses_estimator: ClassVar[bool] = True
    chained: ClassVar[bool] = False
    counts_output: ClassVar[bool] = False
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class ClineLegacyRule(_AgentRule):
    """Cline 3.x: the previous request's whole count over the window less a fixed margin."""

    name: ClassVar[str] = "cline-legacy"
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = False
    chained: ClassVar[bool] = False
    counts_output: ClassVar[bool] = True
    guard: ClassVar[bool] = False


@dataclass(frozen=True, slots=True)
class RooCodeRule(_AgentRule):
    """Roo Code's condensing: the last request's total plus the new message's estimate, over the
    smaller of `percent` of the window and the window less a 10% buffer and the output reserve."""

    percent: float = _PRESETS["roo-code"]["percent"]  # autoCondenseContextPercent
    buffer_fraction: float = _PRESETS["roo-code"]["buffer_fraction"]  # TOKEN_BUFFER_PERCENTAGE

    name: ClassVar[str] = "roo-code"
    count: ClassVar[CountKind] = "prompt+output"
    uses_estimator: ClassVar[bool] = True
    chained: ClassVar[bool] = True
    counts_output: ClassVar[bool] = False
    guard: ClassVar[bool] = False


def _version(version: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3] if x.isdigit()) if version else ()


def gemini_cli_rule(version: str | None) -> GeminiRule:
    """The gemini-cli rule of a CLI version: its release's default threshold (0.7 up to 0.11, 0.2 from
    0.12.0 to 0.16, 0.5 from 0.17.0); the current one when the version is not known."""
    numbers = _version(version)
    if numbers and numbers < (0, 12):
        return Gemini011Rule()
    if numbers and numbers < (0, 17):
        return Gemini016Rule()
    return GeminiRule()


def claude_code_rule(version: str | None) -> ClaudeCodeRule:
    """The Claude Code rule of a CLI version: the earlier band up to 2.1.20, the later one after."""
    numbers = _version(version)
    return ClaudeCodeEarlyRule() if numbers and numbers <= (2, 1, 20) else ClaudeCodeRule()


def own_rule(tool: str | None, version: str | None = None, layout: str | None = None) -> Rule | None:
    """The rule of the agent that wrote a session, for its version and on-disk layout (None for an
    agent without one).

    OpenCode sessions of 2.x (version 2 or later) get `opencode-2`, earlier ones `opencode`; Claude Code
    sessions get the band of their version (`claude_code_rule`).
    """
    if tool == "claude-code":
        return claude_code_rule(version)
    if tool == "opencode":
        major = version.split(".")[0] if version else ""
        return OpenCode2Rule() if major.isdigit() and int(major) >= 2 else OpenCodeRule()
    if tool == "gemini-cli":
        return gemini_cli_rule(version)
    if tool == "dexto":
        return DextoRule()
    if tool == "codex":
        return CodexRule()
    if tool == "qwen-code":
        return QwenCodeRule()
    if tool == "llxprt":
        return LlxprtRule()
    if tool == "cline":
        return cline_rule(version, layout)
    if tool == "roo-code":
        return RooCodeRule()
    return None


def cline_rule(version: str | None, layout: str | None = None) -> ClineRule | ClineLegacyRule:
    """The Cline rule of a session: its SDK's for the SDK's session files (`cline-sdk`, written from
    4.x on) or a version from 4 on, else the 3.x margins (the task folders record no version)."""
    numbers = _version(version)
    sdk = layout == CLINE_SDK_LAYOUT or (bool(numbers) and numbers >= (4,))
    return ClineRule() if sdk else ClineLegacyRule()


# The layout of Cline's SDK session files (`calib.importers.cline`), replayed under the SDK's rule.
CLINE_SDK_LAYOUT = "cline-sdk"

# The estimator each agent's own display uses where it estimates (gemini-cli's CJK-aware rule; OpenCode
# and Dexto's length / 4); Claude Code and Codex show counts the provider reported, which chars4 stands for.
AGENT_ESTIMATORS: dict[str, str] = {"gemini-cli": "cjk", "opencode": "chars4", "dexto": "chars4"}
DEFAULT_AGENT_ESTIMATOR = "chars4"


def agent_estimator(tool: str | None) -> str:
    """The estimator of an agent's own `/context` display (`AGENT_ESTIMATORS`)."""
    return AGENT_ESTIMATORS.get(tool or "", DEFAULT_AGENT_ESTIMATOR)


def what_if_window(rule: Rule, window: Window, target: float) -> Window:
    """The smallest window of the shape of `window` (`Window.scaled`) whose threshold under `rule`
    reaches `target` tokens: a what-if window putting the threshold at `target` (`window` itself
    when even it does not). The rule's own constants (reserves, buffers) stay as they are."""
    if rule.limit(window) < target:
        return window
    low, high = 1, window.context  # limit(scaled(high)) >= target; every rule's limit grows with the window
    while low < high:
        mid = (low + high) // 2
        if rule.limit(window.scaled(mid)) >= target:
            high = mid
        else:
            low = mid + 1
    return window.scaled(high)


Rule = (
    DextoRule
    | GeminiRule
    | Gemini016Rule
    | Gemini011Rule
    | OpenCodeRule
    | OpenCode2025Rule
    | OpenCode2Rule
    | ClaudeCodeRule
    | CodexRule
    | QwenCodeRule
    | LlxprtRule
    | ClineRule
    | ClineLegacyRule
    | RooCodeRule
)
RULES: dict[str, type[Rule]] = {
    "dexto": DextoRule,
    "opencode": OpenCodeRule,
    "opencode-2025": OpenCode2025Rule,
    "opencode-2": OpenCode2Rule,
    "gemini-cli": GeminiRule,
    "gemini-cli-0.16": Gemini016Rule,
    "gemini-cli-0.11": Gemini011Rule,
    "claude-code": ClaudeCodeRule,
    "claude-code-early": ClaudeCodeEarlyRule,
    "codex": CodexRule,
    "qwen-code": QwenCodeRule,
    "llxprt": LlxprtRule,
    "cline": ClineRule,
    "cline-legacy": ClineLegacyRule,
    "roo-code": RooCodeRule,
}
RULE_NAMES: tuple[str, ...] = tuple(RULES)
# Names a rule request may use for "each session under the rule of the agent that wrote it" (`own_rule`)
# and for "every rule, for every session".
OWN_RULE = "own"
ALL_RULES = "all"

POLICIES: tuple[str, ...] = ("raw", "include", "strip-all-but-last", "strip-all", "ui-sum")
_POLICY_ALIASES = {"strip-none": "include"}
OUTCOMES: tuple[str, ...] = ("ok", "early", "late", "missed", "refused", "unknown", "no_window")


def get_rule(name: str) -> Rule:
    """A rule with its default parameters, by name; an unknown name lists the valid ones."""
    cls = RULES.get(name)
    if cls is None:
        raise UsageError(
            f"unknown replay rule {name!r}",
            hint=f"valid rules: {', '.join(RULE_NAMES)}, {OWN_RULE} or {ALL_RULES}",
        )
    return cls()


def resolve_rules(rules: Sequence[str | Rule] | None) -> list[Rule]:
    """The rules to replay: all of them by default, else each named or given one (at most once)."""
    if rules is None:
        return [cls() for cls in RULES.values()]
    if ALL_RULES in rules:
        given = {r.name for r in rules if not isinstance(r, str)}
        rules = [r for r in rules if r != ALL_RULES] + [
            n for n in RULE_NAMES if n not in rules and n not in given
        ]
    out: list[Rule] = [get_rule(r) if isinstance(r, str) else r for r in rules]
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        raise UsageError("a rule is given twice", hint="pass each rule once")
    if not out:
        raise UsageError("no rule to replay", hint=f"valid rules: {', '.join(RULE_NAMES)}")
    return out


def resolve_policies(policies: Sequence[str] | None) -> list[str]:
    """The reasoning policies to replay: all by default, else each one named (aliases resolved, once)."""
    if policies is None:
        return list(POLICIES)
    out = []
    for name in policies:
        name = _POLICY_ALIASES.get(name, name)
        if name not in POLICIES:
            raise UsageError(
                f"unknown reasoning policy {name!r}", hint=f"valid policies: {', '.join(POLICIES)}"
            )
        if name not in out:
            out.append(name)
    if not out:
        raise UsageError("no policy to replay", hint=f"valid policies: {', '.join(POLICIES)}")
    return out


def rule_params(rule: Rule) -> dict[str, Any]:
    """A rule's name and parameters, as JSON."""
    return {"name": rule.name, **asdict(rule)}
