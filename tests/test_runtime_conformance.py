"""calib/runtime.py against the conformance vectors the TypeScript runtime is held to (tests/node).

The vectors are written by `calib.synth.runtime_vectors` from runtime.py itself, so the file must be
fresh (else the TypeScript side is checked against yesterday's Python), and its base counts are
checked here against calib's own estimators, an implementation runtime.py does not share; its usages
against calib's own normalisation of usage (`calib.core.usage`), which the importers apply. The
counters the file names (`counters`: the tokenizers of the preferred bases) are implemented here
again, apart from the generator's, and passed in by name as each load says (`loads`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import calib.runtime as runtime
from calib.core.usage import carried_tokens, context_tokens, token_counts
from calib.estimators import get_estimator
from calib.estimators.charclass import class_counts
from calib.synth import runtime_vectors

VECTORS = Path(__file__).parent / "conformance" / "runtime_vectors.json"


@pytest.fixture(scope="module")
def vectors() -> dict[str, Any]:
    return json.loads(VECTORS.read_text(encoding="ascii"))


@pytest.fixture(scope="module")
def texts(vectors: dict[str, Any]) -> dict[str, str]:
    return {name: runtime_vectors.expand(spec) for name, spec in vectors["texts"].items()}


def _utf8_bytes(text: str) -> int:
    """UTF-8 bytes by code point (a lone surrogate takes 3, as its encoding with surrogatepass)."""
    return sum(1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4 for c in map(ord, text))


# The counters of the file's `counters`, by definition.
COUNTERS: dict[str, Callable[[str], int]] = {"utf8_bytes": _utf8_bytes, "code_points": len}


@pytest.fixture(scope="module")
def cals(vectors: dict[str, Any]) -> dict[str, runtime.Calibration]:
    """Every load of the file: its config, with the counters it names passed in by name."""
    out = {}
    for name, spec in vectors["loads"].items():
        counters = {base: COUNTERS[vectors["counters"][base]] for base in spec["counters"]}
        out[name] = runtime.Calibration(vectors["configs"][spec["config"]], counters=counters)
    return out


def test_the_committed_vectors_are_what_the_generator_writes_today() -> None:
    fresh = runtime_vectors.dumps(runtime_vectors.build())
    assert VECTORS.read_text(encoding="ascii") == fresh, (
        "tests/conformance/runtime_vectors.json is stale: run `make vectors` and commit it"
    )


def test_the_vectors_cover_every_class_of_text(texts: dict[str, str]) -> None:
    counts = [runtime.class_counts(t) for t in texts.values()]
    for index, name in enumerate(runtime.CHAR_CLASSES):
        assert sum(c[index] for c in counts) > 100, name
    assert "" in texts.values()
    assert any(len(t.encode("utf-16-le", "surrogatepass")) // 2 > 100_000 for t in texts.values())
    assert any(ord(c) > 0xFFFF for t in texts.values() for c in t)  # astral characters
    lone = [t for t in texts.values() if any(0xD800 <= ord(c) <= 0xDFFF for c in t)]
    assert len(lone) >= 10
    # no high surrogate followed by a low one: one code point in UTF-16, two in a Python str
    for text in lone:
        for a, b in itertools.pairwise(text):
            assert not ("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff"), text


def test_base_counts_equal_calibs_estimators(vectors: dict[str, Any], texts: dict[str, str]) -> None:
    names = [v["text"] for v in vectors["bases"]]
    batch = [texts[n] for n in names]
    assert [v["chars4"] for v in vectors["bases"]] == get_estimator("chars4").count_many(batch)
    assert [v["cjk"] for v in vectors["bases"]] == get_estimator("cjk").count_many(batch)
    frame = class_counts(batch)
    assert [v["class_counts"] for v in vectors["bases"]] == [list(row) for row in frame.rows()]


def test_runtime_py_gives_every_integer(
    vectors: dict[str, Any], texts: dict[str, str], cals: dict[str, runtime.Calibration]
) -> None:
    def parts(items: list[dict[str, Any]]) -> list[runtime.Part]:
        return [runtime_vectors.as_part(p, texts.__getitem__) for p in items]

    for v in vectors["bases"]:
        text = texts[v["text"]]
        assert (runtime.chars4(text), runtime.cjk(text)) == (v["chars4"], v["cjk"])
        assert list(runtime.class_counts(text)) == v["class_counts"]
    for v in vectors["names"]:
        assert runtime.normalise_provider(v["provider"]) == v["provider_key"]
        assert runtime.normalise_model(v["model"]) == v["model_key"]
    for v in vectors["lookups"]:
        cal = cals[v["config"]]
        params = cal.params(v["provider"], v["model"])
        assert (params.level, params.base) == (v["level"], v["base"]), v
        if v["strict_error"] is None:
            cal.params(v["provider"], v["model"], strict=True)
        else:
            with pytest.raises(runtime.UnknownGroupError) as strict:
                cal.params(v["provider"], v["model"], strict=True)
            assert str(strict.value) == v["strict_error"]
    for v in vectors["missing_counters"]:
        assert cals[v["config"]].missing_counters() == v["expect"], v
    for v in vectors["counts"]:
        got = cals[v["config"]].count(texts[v["text"]], v["provider"], v["model"], v["kind"])
        assert got == v["expect"], v
    for v in vectors["parts"]:
        got = cals[v["config"]].count_parts(parts(v["parts"]), v["provider"], v["model"], v["messages"])
        assert got == v["expect"], v
    for v in vectors["predictions"]:
        got = cals[v["config"]].predict_context(
            v["last_ctx"],
            v["last_carry"],
            parts(v["new_parts"]),
            v["provider"],
            v["model"],
            v["messages"],
            removed=parts(v["removed"]),
            placeholders=parts(v["placeholders"]),
            removed_tokens=v["removed_tokens"],
        )
        assert got == v["expect"], v
    for v in vectors["estimates"]:
        got = cals[v["config"]].estimate_context(
            parts(v["parts"]), v["provider"], v["model"], v["messages"], v["tool"]
        )
        assert got == v["expect"], v
    for v in vectors["errors"]:
        with pytest.raises(runtime.CalibrationError) as caught:
            runtime.validate(v["config"])
        assert str(caught.value) == v["message"], v["case"]
    for v in vectors["documents"]:
        if v["message"] is None:
            runtime.loads(v["text"])
            continue
        with pytest.raises(runtime.CalibrationError) as refused:
            runtime.loads(v["text"])
        assert str(refused.value) == v["message"], v["case"]


def test_the_vectors_reach_every_level_and_both_signs_of_change(vectors: dict[str, Any]) -> None:
    levels = {v["level"] for v in vectors["lookups"]}
    assert "default" in levels
    assert any("/" in level for level in levels)
    assert any(level != "default" and "/" not in level for level in levels)
    assert any(v["strict_error"] for v in vectors["lookups"])
    assert any(v["strict_error"] is None for v in vectors["lookups"])
    # a prediction whose removals outweigh the new parts, and one clamped at zero
    assert any(v["expect"] < v["last_ctx"] + v["last_carry"] for v in vectors["predictions"])
    assert any(v["expect"] == 0 for v in vectors["predictions"])


def test_the_vectors_cover_both_schema_versions_and_preferred_bases(
    vectors: dict[str, Any], texts: dict[str, str]
) -> None:
    assert vectors["schema_version"] == runtime.SCHEMA_VERSION
    assert vectors["schema_versions"] == list(runtime.SCHEMA_VERSIONS)
    configs = vectors["configs"]
    assert {doc["schema_version"] for doc in configs.values()} == set(runtime.SCHEMA_VERSIONS)
    # every load is used; each config loads alone but the one whose own base is a tokenizer
    loads = vectors["loads"]
    used = {
        v["config"] for section in ("counts", "parts", "predictions", "estimates") for v in vectors[section]
    }
    assert used == set(loads)
    alone = {spec["config"] for spec in loads.values() if not spec["counters"]}
    assert set(configs) - alone == {n for n, d in configs.items() if d["base"] not in runtime.RUNTIME_BASES}
    # a counter passed in answers, a built-in preferred base answers with or without counters, and
    # without a counter the config's own base does; the same lookup differs with and without counters
    answered = {(v["config"], v["base"]) for v in vectors["lookups"]}
    bases = {base for _, base in answered}
    assert {"hf:vectors", "hf:points", "chars4", "cjk", "charclass"} <= bases
    assert ("v2_charclass", "chars4") in answered and ("v2_chars4", "cjk") in answered
    assert not any(base.startswith("hf:") for config, base in answered if not loads[config]["counters"])
    by_input = {}
    for v in vectors["lookups"]:
        by_input.setdefault((loads[v["config"]]["config"], v["provider"], v["model"]), set()).add(v["base"])
    assert any(len(seen) > 1 for seen in by_input.values())
    # the preferred base's model level, its provider level under a model level of the own base, and
    # an unknown provider reaching a model of a provider that prefers a base
    preferred = [v for v in vectors["lookups"] if v["base"].startswith("hf:")]
    assert any("/" in v["level"] for v in preferred) and any("/" not in v["level"] for v in preferred)
    assert any(v["provider"] == "nobody" for v in preferred)
    # version 3: a model's own base answers where it counts, even when its provider's does not, and
    # where it does not the model's tokenizer-free parameters answer, even when its provider's counts
    level = {(v["config"], v["provider"], v["model"]): (v["level"], v["base"]) for v in vectors["lookups"]}
    opus, haiku = ("anthropic", "claude-opus-4-20250514"), ("anthropic", "claude-3-haiku")
    assert level[("v3_charclass+hf:points", *opus)] == ("anthropic/claude-opus-4-20250514", "hf:points")
    assert level[("v3_charclass+hf:points", *haiku)] == ("anthropic", "charclass")
    assert level[("v3_charclass+hf:vectors", *opus)] == ("anthropic/claude-opus-4-20250514", "charclass")
    assert level[("v3_charclass+hf:vectors", *haiku)] == ("anthropic", "hf:vectors")
    assert level[("v3_charclass+counters", *opus)] == ("anthropic/claude-opus-4-20250514", "hf:points")
    assert level[("v2_charclass+counters", *opus)] == ("anthropic", "hf:vectors")
    # missing counters: none, one, both
    assert {len(v["expect"]) for v in vectors["missing_counters"]} == {0, 1, 2}
    # the counters really differ from the built-in bases on the texts
    for name in vectors["counters"]:
        count = COUNTERS[vectors["counters"][name]]
        assert any(count(t) != runtime.chars4(t) for t in texts.values()), name
    # refused: v2's own base a tokenizer, preferred blocks of every kind, a preferred block in version 1
    messages = " ".join(v["message"] for v in vectors["errors"])
    for fragment in (
        "reads versions 1 to 3",
        "a model's own base needs schema version 3",
        "own base needs no tokenizer",
        "a preferred base needs schema version 2",
        "cannot be a preferred base here",
        ".preferred.base: expected the base estimator's name",
        ".preferred.params",
        ".preferred.models.",
    ):
        assert fragment in messages, fragment
    # a version written 2.0 (a float in Python, 2 in JavaScript) is shown alike
    versions = [v["config"].get("schema_version") for v in vectors["errors"] if isinstance(v["config"], dict)]
    assert any(isinstance(x, float) and x == 2 for x in versions)
    assert any(v["message"] is None and '"schema_version": 2.0' in v["text"] for v in vectors["documents"])


def test_the_vectors_reach_the_bounds(vectors: dict[str, Any]) -> None:
    # every parameter at the bound, and the largest counts passed in: estimates far beyond 2**53, finite
    at_bounds = {name for name in vectors["configs"] if name.endswith("_at_bounds")}
    assert len(at_bounds) == len(runtime.RUNTIME_BASES)
    for section in ("counts", "parts", "predictions", "estimates"):
        assert any(v["config"] in at_bounds and v["expect"] > 1e200 for v in vectors[section]), section
    assert any(v.get("messages") == runtime.MAX_COUNT for v in vectors["parts"])
    # refused beyond the bounds, with messages that name the field and show the value cut short
    messages = [v["message"] for v in vectors["errors"]]
    assert any(m.endswith("expected a number <= 1e+100, got 1e+308") for m in messages)
    assert any(m.endswith("expected a number >= -1e+100, got -1e+300") for m in messages)
    assert any(m.endswith("...") and len(m.split("got ", 1)[1]) == 60 for m in messages)
    documents = vectors["documents"]
    assert any(v["message"] is None for v in documents)
    assert sum("JSON nested deeper than 64 levels" in (v["message"] or "") for v in documents) >= 3
    assert any((v["message"] or "").endswith("got Infinity") for v in documents)


# -- the context accountant ---------------------------------------------------------------------------


def test_runtime_py_holds_the_tables_and_gives_every_limit_and_usage(vectors: dict[str, Any]) -> None:
    assert vectors["tracker_tables"] == runtime_vectors.tracker_tables()
    for v in vectors["rule_limits"]:
        got = runtime.rule_limit(v["rule"], v["params"], v["context"], v["max_output"], v["input_limit"])
        assert got == v["expect"], v
    for v in vectors["usages"]:
        if v["error"] is None:
            assert runtime.read_usage(v["usage"], v["convention"]) == v["expect"], v
            continue
        with pytest.raises(runtime.CalibrationError) as refused:
            runtime.read_usage(v["usage"], v["convention"])
        assert str(refused.value) == v["error"], v


def test_runtime_py_replays_every_tracker_step_by_step(
    vectors: dict[str, Any], texts: dict[str, str], cals: dict[str, runtime.Calibration]
) -> None:
    for v in vectors["trackers"]:
        if v["error"] is not None:
            with pytest.raises(runtime.CalibrationError) as refused:
                runtime_vectors.make_tracker(cals[v["config"]], v["options"])
            assert str(refused.value) == v["error"], v["case"]
            assert v["steps"] == []
            continue
        tracker = runtime_vectors.make_tracker(cals[v["config"]], v["options"])
        for i, step in enumerate(v["steps"]):
            where = f"{v['case']}, step {i} ({step['do']})"
            try:
                returns, error = runtime_vectors.run_step(tracker, step, texts.__getitem__), None
            except runtime.CalibrationError as exc:
                returns, error = None, str(exc)
            assert (returns, error) == (step["returns"], step["error"]), where
            assert tracker.usage() == step["after"], where


def test_the_tracker_vectors_cover_the_accountant(vectors: dict[str, Any]) -> None:
    trackers = vectors["trackers"]
    live = [v for v in trackers if v["error"] is None]
    steps = [step for v in live for step in v["steps"]]
    assert len(steps) >= 250
    views = [step["after"] for step in steps]
    # every preset and policy, the correction on and off, a prompt cap, custom rules of each shape
    assert {view["rule"] for view in views} == set(runtime.RULES)
    assert {view["reasoning"] for view in views} == set(runtime.REASONING_POLICIES)
    assert {view["correction"] is None for view in views} == {True, False}
    assert any(v["options"].get("input_limit") for v in live)
    rules = [v["options"].get("rule") for v in live]
    custom = [r for r in rules if isinstance(r, dict) and r.get("name", "custom") == "custom"]
    assert {frozenset(r) - {"name"} for r in custom} >= {
        frozenset({"share"}),
        frozenset({"reserve"}),
        frozenset({"share", "reserve"}),
    }
    assert any(isinstance(r, dict) and r.get("name") not in (None, "custom") for r in rules)
    # the weight moved, and reached its bound
    weights = {view["correction"] for view in views} - {None}
    assert len(weights) > 10 and max(weights) == runtime.CORRECTION_BOUNDS[1]
    # static overheads: fitted (by the tool), both texts, one text
    assert any(view["breakdown"]["fitted"] and view["breakdown"]["system"] for view in views)
    statics = [step for step in steps if step["do"] == "set_static" and step["error"] is None]
    assert {tuple(k for k in ("system", "tools") if k in step) for step in statics} >= {
        ("system", "tools"),
        ("system",),
        ("tools",),
    }
    # removals with placeholders and exact tokens, compactions with and without a summary
    removals = [step for step in steps if step["do"] == "remove" and step["error"] is None]
    assert any(step.get("placeholders") for step in removals) and any(step.get("tokens") for step in removals)
    compactions = [step for step in steps if step["do"] == "compacted"]
    assert any(step.get("parts") for step in compactions) and any(
        not step.get("parts") for step in compactions
    )
    # a report before anything was appended; each convention told by its keys, and named
    assert any(v["steps"][1]["do"] == "observe" for v in live if len(v["steps"]) > 1)
    observed = [step for step in steps if step["do"] == "observe" and step["error"] is None]
    told = {runtime.usage_convention(step["usage"]) for step in observed if step.get("convention") is None}
    assert told == set(runtime.USAGE_CONVENTIONS)
    assert {step["convention"] for step in observed if step.get("convention")} == set(
        runtime.USAGE_CONVENTIONS
    )
    assert any(
        "cache_read_input_tokens" in s["usage"] and "cache_creation_input_tokens" in s["usage"]
        for s in observed
    )
    for details in (
        "prompt_tokens_details",
        "completion_tokens_details",
        "input_tokens_details",
        "output_tokens_details",
    ):
        assert any(details in step["usage"] for step in observed), details
    assert any(step["returns"]["error_pct"] is None for step in observed)  # a prompt of 0
    # clamped breakdowns, both sides of every threshold, a strict rule at its limit
    assert any(view["breakdown"]["clamped"] for view in views)
    assert any(view["breakdown"]["clamped"] and view["breakdown"]["reasoning"] for view in views)
    assert {view["should_compact"] for view in views} == {True, False}
    at_limit = [view for view in views if view["total"] == view["threshold"]]
    assert {view["should_compact"] for view in at_limit if view["rule"] in runtime.STRICT_RULES} == {False}
    assert {view["should_compact"] for view in at_limit if view["rule"] not in runtime.STRICT_RULES} == {True}
    assert any(view["free"] < 0 for view in views) and any(view["total"] == 0 for view in views)
    # refused: options, usages and arguments, each with its message
    refused = " ".join(v["error"] for v in trackers if v["error"] is not None)
    for fragment in (
        "window:",
        "output_reserve:",
        "input_limit:",
        "rule:",
        "rule.name:",
        "rule.share:",
        "reasoning:",
    ):
        assert fragment in refused, fragment
    errors = " ".join(step["error"] for step in steps if step["error"] is not None)
    for fragment in (
        "no prompt count",
        "got -3",
        'got "12"',
        "got true",
        "got 1.5",
        "missing",
        "convention:",
        "messages:",
        "tokens:",
        "system:",
        "tools:",
    ):
        assert fragment in errors, fragment
    # no result is -0.0, which JavaScript's deepStrictEqual tells from 0
    assert not any(_negative_zero([step["after"], step["returns"]]) for step in steps)


def _negative_zero(value: Any) -> bool:
    if isinstance(value, float):
        return value == 0 and math.copysign(1.0, value) < 0
    if isinstance(value, dict):
        return any(_negative_zero(v) for v in value.values())
    if isinstance(value, list):
        return any(_negative_zero(v) for v in value)
    return False


# What calib's importers read of each convention's usage: input (the prompt, or its uncached part), cache
# read, cache write, output and reasoning, by the providers' own field names (dotted: nested).
_IMPORTER_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "anthropic": (("input_tokens",), ("cache_read_input_tokens",), ("cache_creation_input_tokens",), ("output_tokens",), ()),
    "openai": (
        ("prompt_tokens", "input_tokens"),
        ("prompt_tokens_details.cached_tokens", "input_tokens_details.cached_tokens"),
        (),
        ("completion_tokens", "output_tokens"),
        ("completion_tokens_details.reasoning_tokens", "output_tokens_details.reasoning_tokens"),
    ),
    "gemini": (("promptTokenCount",), ("cachedContentTokenCount",), (), ("candidatesTokenCount",), ("thoughtsTokenCount",)),
    "ai-sdk": (("inputTokens",), ("cachedInputTokens",), (), ("outputTokens",), ("reasoningTokens",)),
}  # fmt: skip
_STYLES = {"anthropic": "anthropic", "openai": "openai", "gemini": "gemini", "ai-sdk": "openai"}


def _importer_field(usage: dict[str, Any], paths: tuple[str, ...]) -> Any:
    for path in paths:
        value: Any = usage
        for key in path.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def test_usage_conventions_normalise_as_calibs_importers_do(vectors: dict[str, Any]) -> None:
    samples = [v for v in vectors["usages"] if v["error"] is None]
    assert {v["expect"]["convention"] for v in samples} == set(runtime.USAGE_CONVENTIONS)
    for v in samples:
        read = runtime.read_usage(v["usage"], v["convention"])
        convention = read["convention"]
        style = read["style"]
        assert style == _STYLES[convention] == runtime.USAGE_CONVENTIONS[convention]["style"]
        raw = [_importer_field(v["usage"], paths) for paths in _IMPORTER_FIELDS[convention]]
        counts = token_counts(*raw)  # what an importer takes as counts (5.0 is 5)
        assert counts is not None, v
        inp, cache_read, cache_write, output, reasoning = counts
        assert read["prompt"] == context_tokens(style, inp, cache_read, cache_write), v
        # the visible output re-enters the next prompt; reasoning is not re-sent
        carried = carried_tokens(style, output, reasoning)
        assert read["output"] == (0 if carried is None else carried), v
        assert (read["reasoning"], read["cache_read"], read["cache_write"]) == (
            reasoning or 0,
            cache_read or 0,
            cache_write or 0,
        ), v
