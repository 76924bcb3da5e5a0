from __future__ import annotations

import pytest

from calib.analysis.rules import (
    POLICIES,
    RULE_NAMES,
    ClaudeCodeEarlyRule,
    ClaudeCodeRule,
    ClineLegacyRule,
    ClineRule,
    CodexRule,
    DextoRule,
    GeminiRule,
    LlxprtRule,
    OpenCode2Rule,
    OpenCode2025Rule,
    OpenCodeRule,
    QwenCodeRule,
    RooCodeRule,
    claude_code_rule,
    cline_rule,
    get_rule,
    own_rule,
    resolve_policies,
    resolve_rules,
    rule_params,
    what_if_window,
)
from calib.analysis.windows import Window
from calib.core.errors import UsageError


def test_rule_thresholds_from_formats_md() -> None:
    claude = Window(200_000, 64_000)
    gpt5 = Window(400_000, 128_000, input=272_000)
    assert DextoRule().limit(claude) == 180_000
    assert DextoRule(max_context_tokens=100_001).limit(claude) == 90_000  # floor(90000.9)
    assert GeminiRule().limit(Window(1_048_576, 65_536)) == 524_288
    # newer OpenCode: input cap minus min(20k, max output); else context minus max output
    assert OpenCodeRule().limit(gpt5) == 252_000
    assert OpenCodeRule().limit(claude) == 136_000
    assert OpenCodeRule(reserved=5_000).limit(gpt5) == 267_000
    # 2025: context minus min(max output, 32k)
    assert OpenCode2025Rule().limit(claude) == 168_000
    assert OpenCode2025Rule().limit(Window(128_000, 8_192)) == 119_808
    # OpenCode 2: min(input cap - 20k, context - max(min(max output, 32k), 20k))
    assert OpenCode2Rule().limit(gpt5) == 252_000
    assert OpenCode2Rule().limit(claude) == 168_000
    assert OpenCode2Rule().limit(Window(1_000_000, 8_192)) == 980_000
    # Claude Code: window - min(max output, 20k) - 13k (167k on 200k models; 155k up to 2.1.20)
    assert ClaudeCodeRule().limit(claude) == 167_000
    assert ClaudeCodeEarlyRule().limit(claude) == 155_000
    assert ClaudeCodeRule().limit(Window(200_000, 8_192)) == 178_808
    # Codex: 90% of the 272k prompt cap (244,800), or a configured limit
    assert CodexRule().limit(gpt5) == 244_800
    assert CodexRule(auto_compact_token_limit=200_000).limit(gpt5) == 200_000
    assert CodexRule().limit(Window(128_000, 16_000)) == 115_200
    with pytest.raises(UsageError, match="valid rules"):
        get_rule("cursor")


def test_rules_by_name_and_as_given() -> None:
    assert [r.name for r in resolve_rules(None)] == list(RULE_NAMES)
    custom = DextoRule(threshold=0.8)
    assert resolve_rules(["gemini-cli", custom]) == [GeminiRule(), custom]
    with pytest.raises(UsageError, match="given twice"):
        resolve_rules(["dexto", DextoRule()])
    with pytest.raises(UsageError, match="no rule"):
        resolve_rules([])
    assert rule_params(OpenCodeRule(reserved=5_000)) == {
        "name": "opencode",
        "buffer": 20_000,
        "reserved": 5_000,
    }


def test_policies_are_checked_and_aliases_resolved() -> None:
    assert resolve_policies(None) == list(POLICIES)
    assert resolve_policies(["strip-none", "include", "raw"]) == ["include", "raw"]
    with pytest.raises(UsageError, match="valid policies"):
        resolve_policies(["strip-some"])
    with pytest.raises(UsageError, match="no policy"):
        resolve_policies([])


def test_the_newer_agents_rules_from_their_sources() -> None:
    claude = Window(200_000, 64_000)
    qwen3 = Window(262_144, 65_536)
    # Qwen Code: min(0.85 window, window - 20k - 13k); the share alone when that ceiling is not positive
    assert QwenCodeRule().limit(qwen3) == pytest.approx(0.85 * 262_144)
    assert QwenCodeRule().limit(Window(128_000, 8_192)) == 95_000
    assert QwenCodeRule().limit(Window(32_768, 8_192)) == pytest.approx(0.85 * 32_768)
    # llxprt-code: 0.85 of the window less the completion budget
    assert LlxprtRule().limit(claude) == pytest.approx(0.85 * 136_000)
    # Cline 4.x: 0.9 of the input cap (at most the window), else of 0.9 of the window
    assert ClineRule().limit(Window(400_000, 128_000, input=272_000)) == pytest.approx(244_800)
    assert ClineRule().limit(claude) == pytest.approx(162_000)
    # Cline 3.x: fixed margins below 64k, 128k and 200k windows, else the larger of -40k and 80%
    assert ClineLegacyRule().limit(claude) == 160_000
    assert ClineLegacyRule().limit(Window(128_000, 8_192)) == 98_000
    assert ClineLegacyRule().limit(Window(64_000, 8_192)) == 37_000
    assert ClineLegacyRule().limit(Window(1_000_000, 32_000)) == 960_000
    assert ClineLegacyRule().limit(Window(100_000, 8_192)) == 80_000
    # Roo Code: 100% of the window, or 90% of it less the output reserve, whichever is smaller
    assert RooCodeRule().limit(claude) == 116_000
    assert RooCodeRule(percent=50).limit(claude) == 100_000
    # which compare with > and which with >=, and which estimate
    assert (RooCodeRule.strict, QwenCodeRule.strict, ClineLegacyRule.strict) == (True, False, False)
    assert QwenCodeRule.chained and LlxprtRule.chained and RooCodeRule.chained and not ClineRule.chained
    assert ClineRule.uses_estimator and not ClineLegacyRule.uses_estimator


def test_claude_code_rule_follows_the_cli_version() -> None:
    # the 25k band was seen up to 2.1.20, the 13k one from 2.1.25 on (formats.md 8.5)
    assert claude_code_rule("2.0.77") == ClaudeCodeEarlyRule()
    assert claude_code_rule("2.1.20") == ClaudeCodeEarlyRule()
    assert claude_code_rule("2.1.25") == ClaudeCodeRule()
    assert claude_code_rule("2.1.112") == ClaudeCodeRule()
    assert claude_code_rule(None) == ClaudeCodeRule()


def test_each_agent_has_its_own_rule_by_version() -> None:
    assert own_rule("opencode", "2.0.25") == OpenCode2Rule()
    assert own_rule("opencode", "1.14.30") == OpenCodeRule()
    assert own_rule("opencode") == OpenCodeRule()  # 1.x layouts record no version
    assert own_rule("claude-code", "2.1.1") == ClaudeCodeEarlyRule()
    assert own_rule("codex", "0.142.2") == CodexRule()
    assert own_rule("gemini-cli") == GeminiRule() and own_rule("dexto") == DextoRule()
    assert own_rule("qwen-code") == QwenCodeRule() and own_rule("llxprt") == LlxprtRule()
    assert own_rule("roo-code") == RooCodeRule()
    # Cline's SDK from 4.x; the legacy task folders, which record no version, the 3.x rule
    assert own_rule("cline", "4.0.2") == cline_rule("4.0.2") == ClineRule()
    assert own_rule("cline", "3.85.0") == own_rule("cline") == ClineLegacyRule()
    # the SDK's session files record no version either: their layout tells them apart
    assert own_rule("cline", None, "cline-sdk") == ClineRule()
    assert own_rule("cline", None, "cline-task") == ClineLegacyRule()
    assert own_rule("cursor") is None


def test_what_if_window_puts_the_threshold_at_the_target_keeping_the_models_shape() -> None:
    gpt5 = Window(400_000, 128_000, input=272_000)
    for rule in (DextoRule(), GeminiRule(), OpenCodeRule(), OpenCode2Rule(), ClaudeCodeRule(), CodexRule()):
        small = what_if_window(rule, gpt5, 30_000)
        # the smallest window of that shape whose threshold reaches the target
        assert rule.limit(small) >= 30_000 > rule.limit(gpt5.scaled(small.context - 1)), rule.name
        assert small == gpt5.scaled(small.context) and small.input is not None
        assert small.input / small.context == pytest.approx(0.68, abs=1e-4)
    # Codex compacts at 90% of the prompt cap: 30,000 / 0.9 / 0.68 tokens of window
    assert what_if_window(CodexRule(), gpt5, 30_000).context == 49_020
    # a target the real window does not reach leaves it as it is
    assert what_if_window(GeminiRule(), Window(20_000, 1_000), 15_000) == Window(20_000, 1_000)


def test_all_names_every_rule_and_own_is_listed_among_the_valid_names() -> None:
    assert [r.name for r in resolve_rules(["all"])] == list(RULE_NAMES)
    assert resolve_rules(["codex", "all"])[0].name == "codex"
    assert len(resolve_rules(["codex", "all"])) == len(RULE_NAMES)
    with pytest.raises(UsageError, match="own or all"):
        get_rule("cursor")
