"""What the generator knows of each agent: its models, its layouts and the history events each can record."""

from __future__ import annotations

from dataclasses import dataclass

from calib.core.errors import UsageError
from calib.importers.common import PRUNED_TEXT

TOOLS = (
    "gemini-cli",
    "opencode",
    "dexto",
    "claude-code",
    "codex",
    "qwen-code",
    "llxprt",
    "cline",
    "roo-code",
)


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
    # Claude Code and Codex talk to their own vendor's models.
    "claude-code": (
        ("anthropic", "claude-opus-4-6", 3),
        ("anthropic", "claude-sonnet-4-6", 3),
        ("anthropic", "claude-opus-4-7", 2),
        ("anthropic", "claude-haiku-4-5-20251001", 1),
    ),
    "codex": (
        ("openai", "gpt-5.5", 3),
        ("openai", "gpt-5.4", 2),
        ("openai", "gpt-5.3-codex-spark", 1),
    ),
    # Qwen Code: Qwen's own models through Qwen OAuth (OpenAI-compatible), or another back end.
    "qwen-code": (
        ("qwen", "coder-model", 4),
        ("qwen", "qwen3-coder-plus", 2),
        ("openai", "gpt-4.1", 1),
        ("google", "gemini-2.5-pro", 1),
    ),
    # llxprt-code is multi-provider: its recording names the provider (`gemini` is Google).
    "llxprt": (
        ("anthropic", "claude-sonnet-4-5", 3),
        ("anthropic", "claude-opus-4-6", 1),
        ("openai", "gpt-5", 2),
        ("google", "gemini-2.5-pro", 2),
    ),
    # Cline and Roo Code talk to any provider; a vendor's model through its own handler.
    "cline": (
        ("anthropic", "claude-sonnet-4-5", 4),
        ("openai", "gpt-5", 2),
        ("google", "gemini-2.5-pro", 2),
        ("deepseek", "deepseek-chat", 1),
    ),
    "roo-code": (
        ("anthropic", "claude-sonnet-4-5", 4),
        ("openai", "gpt-5", 2),
        ("google", "gemini-2.5-pro", 2),
    ),
}


# System prompt + tool schemas of each agent, in base tokens (scaled by the ratio, plus per-session jitter
# for the environment block: date, working directory, git state).
# Codex stores its system prompt (a `system` part, see `Events.system_prompt`): its static overhead is
# the tool schemas alone.
# Qwen Code and llxprt-code: gemini-cli's prompt and tools, grown; Cline and Roo Code: their own.
STATIC_BASE = {
    "gemini-cli": 9300,
    "opencode": 11200,
    "dexto": 4600,
    "claude-code": 15800,
    "codex": 3900,
    "qwen-code": 10400,
    "llxprt": 10400,
    "cline": 12400,
    "roo-code": 10800,
}


def reasoning_policy(tool: str, provider: str, model: str) -> str:
    """What happens to reasoning: `dropped` (never re-sent), `resent` (in the next prompt) or `none`.

    gemini-cli keeps thought summaries it never sends back; OpenCode re-sends reasoning parts while the
    model stays the same; Dexto keeps reasoning only where the usage leaves it apart from the output
    (Google), since elsewhere its `outputTokens` fold in reasoning the next prompt does not hold.
    """
    if tool == "gemini-cli":
        return "dropped"
    if tool == "claude-code":
        # Claude's `output_tokens` include thinking, and current models keep earlier thinking in context.
        return "resent"
    if tool == "codex":
        # Codex passes its reasoning items back within a turn (`Events.reasoning_per_turn` drops them
        # when the next user turn starts); OpenAI's `output_tokens` include them.
        return "resent"
    if tool == "llxprt":
        # Thinking stays in the history and is sent back by default (`reasoning.includeInContext`);
        # Gemini's completion count leaves thoughts out, so they are stored as not re-sent.
        return "dropped" if provider == "google" else "resent"
    if tool in ("cline", "roo-code"):
        # Their logs keep no reasoning count apart from the output: no reasoning is generated.
        return "none"
    if tool == "opencode":
        return "none" if model in ("gpt-4.1", "deepseek-chat") else "resent"
    if tool == "qwen-code":
        # Qwen Code keeps thought parts in its record but does not count them back in (carry excludes them).
        return "none" if model == "gpt-4.1" else "dropped"
    return "dropped" if provider == "google" else "none"


@dataclass(frozen=True, slots=True)
class Events:
    """Which history events a layout can represent on disk (and so the generator may produce)."""

    compaction: bool
    prune: bool
    compaction_prompt: str | None = None  # framing message the agent sends before the summary
    placeholder: str | None = None  # what a pruned tool output is sent as
    copies_user: bool = False  # Dexto re-lays the kept user message after the summary
    # The agent stores its system prompt (Codex's `base_instructions`): the history starts with it as a
    # `system` part, and it is sent again first after each compaction.
    system_prompt: bool = False
    # Reasoning is re-sent within its turn only: when the next user turn starts the agent drops it
    # (Codex), which the history records as a pruning of the reasoning parts to nothing.
    reasoning_per_turn: bool = False


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
        # OpenCode 2 (`session_v2` + `session_message`): a compaction row whose summary (and `recent`
        # tail) the model sees next; pruned tool outputs carry `time.pruned`.
        "opencode2-db": Events(True, True, None, PRUNED_TEXT),
    },
    "dexto": {
        "dexto-db": Events(True, True, None, PRUNED_TEXT, copies_user=True),
        "dexto-db-legacy": Events(True, True, None, PRUNED_TEXT, copies_user=True),
        "dexto-log": Events(True, True, None, PRUNED_TEXT, copies_user=True),
    },
    # Claude Code: a compact boundary and the summary as a user message. No pruning is generated:
    # a microcompact boundary names the cleared tool ids and its time, but not what is sent instead.
    "claude-code": {"claude-code-jsonl": Events(True, False)},
    # Codex: `compacted.replacement_history` (the summary) replaces the history.
    "codex": {"codex-jsonl": Events(True, False, system_prompt=True, reasoning_per_turn=True)},
    # Qwen Code: a `chat_compression` record's `compressedHistory` replaces the history; no pruning.
    "qwen-code": {"qwen-code-jsonl": Events(True, False)},
    # llxprt-code: a `compressed` record makes the summary the whole history; no pruning is recorded.
    "llxprt": {"llxprt-chats-usage": Events(True, False), "llxprt-chats": Events(True, False)},
    # Cline's SDK stores its system prompt; its messages file keeps the whole history (a compaction is a
    # separate file calib does not read), as do the task folders: no history events are generated.
    "cline": {"cline-sdk": Events(False, False, system_prompt=True), "cline-task": Events(False, False)},
    "roo-code": {"roo-code-task": Events(False, False), "kilo-code-task": Events(False, False)},
}
DEFAULT_LAYOUT = {
    "gemini-cli": "gemini-jsonl",
    "opencode": "opencode-db",
    "dexto": "dexto-db",
    "claude-code": "claude-code-jsonl",
    "codex": "codex-jsonl",
    "qwen-code": "qwen-code-jsonl",
    "llxprt": "llxprt-chats-usage",
    "cline": "cline-sdk",
    "roo-code": "roo-code-task",
}


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
