"""The truth rules: how each provider (and model) counts tokens, as a base estimator times a ratio."""

from __future__ import annotations

from dataclasses import dataclass


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
    # Qwen's tokenizer is an optional extra (`tiktoken:qwen`), so o200k stands in.
    "qwen": Rule("tiktoken:o200k_base", 1.02, 5),
}
MODEL_RULES: dict[str, Rule] = {
    "gemini-3-flash-preview": Rule("tiktoken:o200k_base", 1.04, 4),
    # Opus 4.7's new tokenizer: about 1.35x the tokens of 4.6 on the same text (published figure).
    "claude-opus-4-7": Rule("tiktoken:cl100k_base", 1.5, 6),
}


def rule_for(provider: str, model: str) -> Rule:
    """The truth rule the generator uses for a provider and model."""
    return MODEL_RULES.get(model) or RULES[provider]


def scaled(ratio_milli: int, base: int) -> int:
    """round_half_up(ratio * base) in integers: the per-part token count of the truth rule."""
    return (ratio_milli * base + 500) // 1000
