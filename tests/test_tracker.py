"""The context accountant of the runtime (`calib.runtime.Tracker`): one total, a breakdown that adds
up to it, the reasoning policies, the rules' thresholds and the checks against reported usage."""

from __future__ import annotations

import random
from typing import Any

import pytest

import calib.runtime as runtime
from calib.analysis.rules import RULES as REPLAY_RULES
from calib.analysis.windows import Window
from calib.core.usage import carried_tokens, context_tokens


def _config() -> dict[str, Any]:
    """chars4, every ratio 1 and 4 tokens a message at the model; a pooled static overhead of 1,000 and
    2,000 for codex's prompts."""
    params = {
        "ratios": {"model": 1.0, "tool": 1.0, "user": 1.0},
        "message_overhead": 4.0,
        "static_overhead": 1000.0,
        "static_overhead_by_tool": {"codex": 2000.0},
    }
    return {
        "schema_version": 1,
        "base": "chars4",
        "kind_groups": {"tool_result": "tool", "user_text": "user", "assistant_text": "model"},
        "ratio_groups": ["model", "tool", "user"],
        "default_group": "user",
        "default": {"ratios": {"model": 1.0, "tool": 1.0, "user": 1.0}, "message_overhead": 0.0},
        "providers": {"openai": {"params": params, "models": {}}},
    }


CAL = runtime.Calibration(_config())


def _tracker(**options: Any) -> runtime.Tracker:
    options.setdefault("window", 100_000)
    return CAL.tracker("openai", "gpt-5", **options)


def _adds_up(view: dict[str, Any]) -> None:
    parts = view["breakdown"]
    values = [parts[k] for k in ("system", "tools", "messages", "reasoning")]
    assert sum(values) == view["total"]
    assert min(values) >= 0


def test_before_any_report_the_total_is_the_fitted_static_overhead_plus_the_parts() -> None:
    tracker = _tracker(tool="codex")
    assert tracker.append([("user_text", "x" * 400)]) == 104  # 100 tokens + a message
    view = tracker.usage()
    assert view["total"] == 2000 + 104
    assert view["basis"] == "estimated"
    assert view["breakdown"] == {
        "system": 2000,
        "tools": 0,
        "messages": 104,
        "reasoning": 0,
        "clamped": False,
        "fitted": ["system", "tools"],
    }
    assert view["free"] == 100_000 - 2104 - 20_000
    assert view["percent"] == 2104 * 100 / 100_000
    assert view["last_check"] is None
    # the agent's own texts replace the fitted value
    tracker.set_static(system="s" * 800, tools="t" * 4000)
    view = tracker.usage()
    assert view["breakdown"]["system"] == 204 and view["breakdown"]["tools"] == 1004
    assert view["breakdown"]["fitted"] == []
    assert view["total"] == 204 + 1004 + 104


def test_after_a_report_only_what_was_added_since_is_estimated() -> None:
    tracker = _tracker()
    tracker.append(["x" * 40])
    check = tracker.observe({"prompt_tokens": 5000, "completion_tokens": 300})
    assert check == {
        "estimated": 1014,
        "actual": 5000,
        "error": 1014 - 5000,
        "error_pct": (1014 - 5000) * 100 / 5000,
    }
    assert tracker.usage()["total"] == 5300  # the prompt and the output that re-enters it
    tracker.append([("tool_result", "y" * 800)], messages=1)  # 200 + 4
    tracker.remove([("tool_result", "z" * 400)], placeholders=["[pruned]"], tokens=10)  # -100 + 2 - 10
    view = tracker.usage()
    assert view["since_report"] == 204 - 100 + 2 - 10
    assert view["total"] == 5300 + 96
    assert view["basis"] == "reported"
    _adds_up(view)
    check = tracker.observe({"prompt_tokens": 5400, "completion_tokens": 0})
    assert check["estimated"] == 5396 and check["error"] == -4
    assert tracker.usage()["last_check"] == check


def test_a_compaction_makes_the_count_an_estimate_until_the_next_report() -> None:
    tracker = _tracker(reasoning="include")
    tracker.observe(
        {
            "prompt_tokens": 50_000,
            "completion_tokens": 900,
            "completion_tokens_details": {"reasoning_tokens": 400},
        }
    )
    assert tracker.usage()["breakdown"]["reasoning"] == 400
    tracker.compacted([("summary", "s" * 4000)])
    tracker.append(["next question"])
    view = tracker.usage()
    assert view["basis"] == "estimated"
    assert view["total"] == 1000 + 1004 + runtime.chars4("next question") + 4
    assert view["breakdown"]["reasoning"] == 0
    tracker.observe({"prompt_tokens": 2100, "completion_tokens": 10})
    assert tracker.usage()["basis"] == "reported"


@pytest.mark.parametrize(
    ("policy", "totals"),
    [
        # prompts 10,000 / 10,600 / 11,200 with 100 of visible output and 500 of reasoning each call;
        # each prompt holds the reasoning the policy kept, the next one what it keeps after the call
        ("include", [10_000 + 100 + 500, 10_600 + 100 + 500, 11_200 + 100 + 500]),
        ("strip-all-but-last", [10_000 + 100 + 500, 10_600 - 500 + 100 + 500, 11_200 - 500 + 100 + 500]),
        ("strip-all", [10_000 + 100, 10_600 + 100, 11_200 + 100]),
    ],
)
def test_reasoning_is_counted_by_the_agents_policy(policy: str, totals: list[int]) -> None:
    tracker = _tracker(reasoning=policy)
    usage = {"promptTokenCount": 10_000, "candidatesTokenCount": 100, "thoughtsTokenCount": 500}
    seen = []
    for prompt in (10_000, 10_600, 11_200):
        tracker.observe({**usage, "promptTokenCount": prompt})
        view = tracker.usage()
        _adds_up(view)
        seen.append(view["total"])
    assert seen == totals


def test_compaction_is_decided_on_the_same_total_the_display_shows() -> None:
    tracker = _tracker(window=200_000, rule="claude-code", output_reserve=32_000)
    assert tracker.usage()["threshold"] == 200_000 - 20_000 - 13_000
    tracker.observe({"input_tokens": 1, "cache_read_input_tokens": 166_000, "output_tokens": 998})
    view = tracker.usage()
    assert view["total"] == 166_999 and not view["should_compact"]
    tracker.append(["x"])  # one token and a message: 167,004
    view = tracker.usage()
    assert view["total"] >= view["threshold"] and view["should_compact"]
    # a strict rule compacts only above its limit
    dexto = _tracker(window=10_000, rule="dexto")
    dexto.observe({"input_tokens": 9000, "output_tokens": 0})
    assert dexto.usage()["threshold"] == 9000 and not dexto.usage()["should_compact"]


def test_each_preset_has_the_threshold_calib_replay_judges() -> None:
    for name, cls in REPLAY_RULES.items():
        for window in (Window(200_000, 32_000), Window(400_000, 128_000, 272_000), Window(1_000_000, 65_536)):
            tracker = CAL.tracker(
                "openai", "gpt-5", window=window.context, output_reserve=window.max_output,
                input_limit=window.input, rule=name,
            )  # fmt: skip
            assert tracker.usage()["threshold"] == cls().limit(window), (name, window)


def test_custom_rules_and_overrides() -> None:
    assert _tracker(rule={"share": 0.8}).threshold == 0.8 * (100_000 - 20_000)
    assert _tracker(rule={"reserve": 30_000, "share": 1}).threshold == 70_000
    assert _tracker(rule={"name": "gemini-cli", "threshold": 0.7}).threshold == 70_000
    assert _tracker(tool="gemini-cli").rule == "gemini-cli"
    assert _tracker(tool="opencode").rule == "opencode-2"
    assert _tracker().rule == "custom"


USAGES = [
    ("anthropic", {"input_tokens": 12, "cache_read_input_tokens": 9000, "cache_creation_input_tokens": 700, "output_tokens": 250}),
    ("openai", {"prompt_tokens": 9712, "prompt_tokens_details": {"cached_tokens": 9000}, "completion_tokens": 250, "completion_tokens_details": {"reasoning_tokens": 90}}),
    ("openai", {"input_tokens": 9712, "input_tokens_details": {"cached_tokens": 9000}, "output_tokens": 250, "output_tokens_details": {"reasoning_tokens": 90}}),
    ("gemini", {"promptTokenCount": 9712, "cachedContentTokenCount": 9000, "candidatesTokenCount": 160, "thoughtsTokenCount": 90}),
    ("ai-sdk", {"inputTokens": 9712, "cachedInputTokens": 9000, "outputTokens": 250, "reasoningTokens": 90}),
]  # fmt: skip


@pytest.mark.parametrize(("convention", "usage"), USAGES)
def test_usage_is_normalised_as_calibs_importers_normalise_it(convention: str, usage: dict[str, Any]) -> None:
    read = runtime.read_usage(usage)
    assert read["convention"] == convention
    style = read["style"]
    assert read["prompt"] == 9712 == context_tokens(style, *_raw(usage, convention)[:3])
    _, _, _, output, reasoning = _raw(usage, convention)
    assert read["output"] == carried_tokens(style, output, reasoning)
    assert read["reasoning"] == reasoning


def _raw(usage: dict[str, Any], convention: str) -> tuple[int, int, int, int, int]:
    """input, cache read, cache write, output and reasoning as the importers read each convention."""
    if convention == "anthropic":
        return (
            usage["input_tokens"],
            usage["cache_read_input_tokens"],
            usage["cache_creation_input_tokens"],
            usage["output_tokens"],
            0,
        )
    if convention == "gemini":
        return (
            usage["promptTokenCount"],
            usage["cachedContentTokenCount"],
            0,
            usage["candidatesTokenCount"],
            usage["thoughtsTokenCount"],
        )
    if convention == "ai-sdk":
        return (
            usage["inputTokens"],
            usage["cachedInputTokens"],
            0,
            usage["outputTokens"],
            usage["reasoningTokens"],
        )
    prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
    output = usage.get("completion_tokens", usage.get("output_tokens"))
    details = usage.get("completion_tokens_details") or usage.get("output_tokens_details")
    return prompt, 9000, 0, output, details["reasoning_tokens"]  # fmt: skip


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ({"output_tokens": 5}, "usage: no prompt count (expected one of input_tokens, prompt_tokens, promptTokenCount, inputTokens), got {\"output_tokens\": 5}"),
        ({"input_tokens": -3}, "usage.input_tokens: expected a whole number from 0 to 9007199254740991, got -3"),
        ({"prompt_tokens": "12"}, 'usage.prompt_tokens: expected a token count, got "12"'),
        ({"promptTokenCount": 10, "thoughtsTokenCount": True}, "usage.thoughtsTokenCount: expected a token count, got true"),
        ({"inputTokens": 1.5}, "usage.inputTokens: expected a whole number from 0 to 9007199254740991, got 1.5"),
        ({"inputTokens": None}, "usage.inputTokens: missing (the prompt count of the ai-sdk convention)"),
    ],
)  # fmt: skip
def test_bad_usage_is_one_error_naming_the_field(usage: dict[str, Any], message: str) -> None:
    tracker = _tracker()
    with pytest.raises(runtime.CalibrationError) as raised:
        tracker.observe(usage)
    assert str(raised.value) == message
    assert tracker.usage()["basis"] == "estimated"  # nothing was taken in


def test_absent_optional_counts_are_zero_and_a_convention_can_be_named() -> None:
    assert runtime.read_usage({"input_tokens": 7})["prompt"] == 7
    read = runtime.read_usage({"input_tokens": 7, "output_tokens": 3}, convention="openai")
    assert (read["style"], read["output"]) == ("openai", 3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"window": 1000, "output_reserve": 1000}, "window: 1000 is not larger than the output reserve (1000)"),
        ({"rule": "gemini"}, 'rule: unknown rule "gemini"; valid rules: gemini-cli, gemini-cli-0.16, gemini-cli-0.11, dexto, opencode, opencode-2025, opencode-2, claude-code, claude-code-early, codex, qwen-code, llxprt, cline, cline-legacy, roo-code, custom'),
        ({"rule": {"name": "codex", "share": 0.5}}, "rule.share: the codex rule has no such parameter; it has fraction, auto_compact_token_limit"),
        ({"reasoning": "strip"}, 'reasoning: unknown policy "strip"; valid policies: include, strip-all-but-last, strip-all'),
        ({"window": 0}, "window: expected a whole number from 1 to 9007199254740991, got 0"),
    ],
)  # fmt: skip
def test_bad_options_are_one_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(runtime.CalibrationError) as raised:
        _tracker(**options)
    assert str(raised.value) == message


def test_empty_parts_and_observe_before_append_are_fine() -> None:
    tracker = _tracker()
    assert tracker.append([]) == 0
    assert tracker.remove([]) == 0
    tracker.compacted([])
    tracker.observe({"input_tokens": 10, "output_tokens": 2})
    assert tracker.usage()["total"] == 12


def test_the_breakdown_adds_up_whatever_the_sequence() -> None:
    rng = random.Random(7)
    for policy in runtime.REASONING_POLICIES:
        tracker = _tracker(reasoning=policy, window=1_000_000, correction=rng.random() < 0.5)
        for step in range(400):
            action = rng.random()
            if action < 0.4:
                tracker.append([("tool_result", "x" * rng.randint(0, 9000))])
            elif action < 0.55:
                tracker.remove([("tool_result", "x" * rng.randint(0, 20_000))], ["[pruned]"])
            elif action < 0.6:
                tracker.compacted([("summary", "s" * rng.randint(0, 3000))])
            elif action < 0.65:
                tracker.set_static(system="p" * rng.randint(0, 90_000))
            else:
                tracker.observe(
                    {"promptTokenCount": rng.randint(0, 200_000), "candidatesTokenCount": rng.randint(0, 3000),
                     "thoughtsTokenCount": rng.randint(0, 5000)}
                )  # fmt: skip
            view = tracker.usage()
            _adds_up(view)
            if view["breakdown"]["clamped"]:
                assert view["breakdown"]["messages"] == 0, step


def test_the_online_correction_moves_toward_the_observed_ratio_within_bounds() -> None:
    tracker = _tracker(correction=True)
    tracker.observe({"input_tokens": 10_000, "output_tokens": 0})
    assert tracker.usage()["correction"] == 1.0
    tracker.append(["x" * 3984])  # 996 + 4: 1,000 estimated
    tracker.observe({"input_tokens": 12_000, "output_tokens": 0})  # 2,000 came: a ratio of 2
    assert tracker.usage()["correction"] == pytest.approx(1.2)
    tracker.append(["x" * 3984])
    assert tracker.usage()["total"] == 12_000 + 1200  # the estimate since, scaled
    for _ in range(40):
        tracker.observe({"input_tokens": tracker._known + 100_000, "output_tokens": 0})
        tracker.append(["x" * 3984])
    assert tracker.usage()["correction"] == runtime.CORRECTION_BOUNDS[1]
    assert _tracker().usage()["correction"] is None
