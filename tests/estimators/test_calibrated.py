from __future__ import annotations

from typing import Any

from calib.calibration.export import GroupFit, _params
from calib.core.config import canonical
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.estimators.calibrated import CalibratedEstimator, GroupCalibration


def _config() -> dict[str, Any]:
    def params(static: float | None, by_tool: dict[str, float]) -> dict[str, Any]:
        level = GroupFit(dict.fromkeys(RATIO_KEYS, 1.0), 2.0, calls=3, static_overhead=static)
        level.static_by_tool = by_tool
        return _params(level, None)

    doc = {
        "schema_version": 1,
        "base": "chars4",
        "kind_groups": dict(KIND_GROUPS),
        "ratio_groups": list(RATIO_KEYS),
        "default_group": DEFAULT_KIND_GROUP,
        "default": params(None, {}),
        "providers": {
            "google": {
                "params": params(4500.0, {"opencode": 4100.0}),
                "models": {"gemini-2.5-pro": params(4800.0, {"gemini-cli": 5200.0, "codex": -10.5})},
            },
            "openai": {"params": params(None, {"codex": 3900.0}), "models": {}},
        },
    }
    result: dict[str, Any] = canonical(doc)
    return result


def test_for_group_carries_the_static_overhead_by_tool() -> None:
    estimator = CalibratedEstimator.from_config(_config())
    model = estimator.for_group("google", "models/gemini-2.5-pro")
    assert model.level == "google/gemini-2.5-pro"
    assert model.static_by_tool == {"codex": -10.5, "gemini-cli": 5200.0}
    assert model.static_for("gemini-cli") == 5200.0
    assert model.static_for("codex") == -10.5
    assert model.static_for("opencode") == 4800.0  # the provider's per-tool value is not inherited
    assert model.static_for(None) == 4800.0
    provider = estimator.for_group("google", "gemini-9")
    assert (provider.static_for("opencode"), provider.static_for("dexto")) == (4100.0, 4500.0)
    openai = estimator.for_group("openai", "gpt-5")
    assert openai.static_for("codex") == 3900.0
    assert openai.static_for("claude-code") is None  # no pooled value either
    default = estimator.for_group(None, None)
    assert default.static_by_tool == {}
    assert default.static_for("gemini-cli") is None
    # the runtime agrees, with 0 for "none"
    assert estimator.calibration.static_overhead("google", "gemini-2.5-pro", "codex") == -10.5
    assert estimator.calibration.static_overhead("openai", "gpt-5", "claude-code") == 0.0


def test_group_calibration_without_per_tool_values() -> None:
    group = GroupCalibration("default", {"model": 1.0}, 3.0, {"chars4": 1.0}, 250.0)
    assert group.static_by_tool == {}
    assert group.static_for("opencode") == 250.0


def test_a_preferred_base_this_calib_does_not_know_falls_back() -> None:
    # a config from a calib with more estimators: its providers count with the config's own base
    doc = _v2_config("no-such-estimator:v9")
    estimator = CalibratedEstimator.from_config(doc)
    assert "no-such-estimator:v9" in estimator.unavailable
    assert estimator.for_group("google", None).base == "chars4"
    assert estimator.sources == ["chars4"]
    known = CalibratedEstimator.from_config(_v2_config("tiktoken:o200k_base"))
    assert known.for_group("google", None).base == "tiktoken:o200k_base"
    assert known.sources == ["chars4", "tiktoken:o200k_base"]


def _v2_config(preferred: str) -> dict[str, Any]:
    params = {"ratios": {"model": 1.0, "tool": 1.0, "user": 1.0}, "message_overhead": 3.0}
    return {
        "schema_version": 2,
        "base": "chars4",
        "kind_groups": {"tool_result": "tool", "user_text": "user", "assistant_text": "model"},
        "ratio_groups": ["model", "tool", "user"],
        "default_group": "user",
        "default": params,
        "providers": {
            "google": {"params": params, "models": {}, "preferred": {"base": preferred, "params": params}}
        },
    }
