"""calib/runtime.py, the file agents embed, given a config that is wrong in any way: a `CalibrationError`
naming the field, never OverflowError, RecursionError, UnicodeDecodeError or ValueError; and on a
config it accepted no estimate can overflow. (The TypeScript runtime is held to the same messages
through the conformance vectors: tests/test_runtime_conformance.py and tests/node.)"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from faults.kit import error_line, run_calib, tree_hashes

from calib import runtime
from calib.synth.runtime_vectors import configs

BOUND = "1e+100"


@pytest.fixture
def good() -> dict[str, Any]:
    """A valid charclass config with a default, providers and models."""
    return copy.deepcopy(configs()["charclass"])


def _text_with(doc: dict[str, Any], literal: str) -> str:
    """The config's JSON text with the number 7777.5 written as `literal` (a number JSON allows)."""
    text = json.dumps(doc, indent=2)
    assert text.count("7777.5") == 1
    return text.replace("7777.5", literal)


def _expect_refused(path: Path, text: str, message: str) -> None:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(runtime.CalibrationError) as from_file:
        runtime.load(str(path))
    assert str(from_file.value) == f"{path}: invalid calibration config: {message}"
    for given in (text, text.encode("utf-8")):
        with pytest.raises(runtime.CalibrationError) as from_text:
            runtime.loads(given)
        assert str(from_text.value) == f"invalid calibration config: {message}"


@pytest.mark.parametrize(
    ("place", "literal", "message"),
    [
        (
            lambda d: d["default"]["ratios"],
            "1e308",
            f"default.ratios.tool: expected a number <= {BOUND}, got 1e+308",
        ),
        (
            lambda d: d["providers"]["openai"]["models"]["gpt-5"]["ratios"],
            "2e100",
            f"providers.openai.models.gpt-5.ratios.tool: expected a number <= {BOUND}, got 2e+100",
        ),
        (
            lambda d: d["providers"]["google"]["params"]["class_weights"],
            "1e200",
            f"providers.google.params.class_weights.tool: expected a number <= {BOUND}, got 1e+200",
        ),
        (
            lambda d: d["default"]["static_overhead_by_tool"],
            "-1e300",
            f"default.static_overhead_by_tool.tool: expected a number >= -{BOUND}, got -1e+300",
        ),
        # a number too large for a double reads as infinity, in Python as in JavaScript
        (
            lambda d: d["default"]["ratios"],
            "1e309",
            f"default.ratios.tool: expected a number <= {BOUND}, got Infinity",
        ),
        (
            lambda d: d["default"]["ratios"],
            "1" + "0" * 400,
            f"default.ratios.tool: expected a number <= {BOUND}, got Infinity",
        ),
        (
            lambda d: d["default"]["ratios"],
            "-" + "9" * 5000,
            "default.ratios.tool: expected a number >= 0, got -Infinity",
        ),
        (
            lambda d: d["default"]["ratios"],
            "1" + "0" * 101,
            f"default.ratios.tool: expected a number <= {BOUND}, got 1e+101",
        ),
    ],
    ids=[
        "ratio-1e308",
        "model-ratio",
        "class-weight",
        "static-by-tool",
        "1e309",
        "int-400",
        "int-5000",
        "int-1e101",
    ],
)
def test_numbers_an_estimate_would_overflow_on_are_refused_naming_the_field(
    good: dict[str, Any],
    tmp_path: Path,
    place: Callable[[dict[str, Any]], dict[str, Any]],
    literal: str,
    message: str,
) -> None:
    place(good)["tool"] = 7777.5
    _expect_refused(tmp_path / "calibration.json", _text_with(good, literal), message)


@pytest.mark.parametrize(
    ("field", "literal", "message"),
    [
        (
            "message_overhead",
            "-1.5e100",
            f"default.message_overhead: expected a number >= -{BOUND}, got -1.5e+100",
        ),
        ("static_overhead", "1e101", f"default.static_overhead: expected a number <= {BOUND}, got 1e+101"),
    ],
)
def test_overheads_are_bounded_both_ways(
    good: dict[str, Any], tmp_path: Path, field: str, literal: str, message: str
) -> None:
    good["default"][field] = 7777.5
    _expect_refused(tmp_path / "calibration.json", _text_with(good, literal), message)


def test_bytes_that_are_not_utf8(good: dict[str, Any], tmp_path: Path) -> None:
    data = b'{"note": "caf\xe9", ' + json.dumps(good).encode("utf-8")[1:]  # Latin-1, not UTF-8
    offset = data.index(b"\xe9")
    path = tmp_path / "calibration.json"
    path.write_bytes(data)
    with pytest.raises(runtime.CalibrationError) as from_file:
        runtime.load(str(path))
    assert (
        str(from_file.value) == f"{path}: the calibration config is not UTF-8 text (at byte offset {offset})"
    )
    with pytest.raises(runtime.CalibrationError) as from_bytes:
        runtime.loads(data)
    assert str(from_bytes.value) == f"the calibration config is not UTF-8 text (at byte offset {offset})"


NESTED = "JSON nested deeper than 64 levels (a calibration config nests 7)"


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_json_nested_too_deep_is_refused_with_its_line(
    good: dict[str, Any], tmp_path: Path, depth: int
) -> None:
    path = tmp_path / "calibration.json"
    whole = "[" * depth + "]" * depth
    path.write_text(whole, encoding="utf-8")
    with pytest.raises(runtime.CalibrationError) as caught:
        runtime.load(str(path))
    assert str(caught.value) == f"{path}:1: {NESTED}"
    # deep inside an otherwise good config (in `fit`, which the runtime ignores), on its own line
    good["fit"] = 7777.5
    text = _text_with(good, "\n" + "[" * (depth - 1) + "]" * (depth - 1))
    line = text[: text.index("[[")].count("\n") + 1
    with pytest.raises(runtime.CalibrationError) as inside:
        runtime.loads(text)
    assert str(inside.value) == f"line {line}: {NESTED}"


def test_nesting_up_to_the_limit_and_brackets_inside_strings_are_fine(good: dict[str, Any]) -> None:
    good["fit"] = 7777.5
    deepest = _text_with(good, "[" * 63 + "]" * 63)  # 63 lists inside the top object: 64 levels
    assert runtime.loads(deepest).count("abcd") == runtime.Calibration(configs()["charclass"]).count("abcd")
    good["fit"] = {"note": 'quoted \\" [[[{{{' * 100, "other": "[" * 1000}
    assert runtime.loads(json.dumps(good)).params("google").level == "google"


def _deep_list(depth: int) -> Any:
    value: Any = 1.0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (_deep_list(10_000), "[[[...]]]"),
        ({"a": {"b": {"c": 1}}, "d": [1, [2, [3]]]}, '{"a": {"b": {...}}, "d": [1, [...]]}'),
        ("x" * 1_000_000, '"' + "x" * 56 + "..."),
        ("\U0001f600" * 30, '"' + "\\ud83d\\ude00" * 4 + "\\ud83d\\u..."),
        (list(range(10**5)), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16..."),
        ({1, 2}, "set"),
    ],
    ids=["deep-list", "nested-object", "long-text", "astral-text", "long-list", "set"],
)
def test_a_value_of_any_type_or_size_where_a_number_belongs(
    good: dict[str, Any], value: Any, shown: str
) -> None:
    good["default"]["ratios"]["tool"] = value
    with pytest.raises(runtime.CalibrationError) as caught:
        runtime.validate(good)
    assert str(caught.value) == f"default.ratios.tool: expected a number, got {shown}"


def test_python_numbers_out_of_a_doubles_range(good: dict[str, Any]) -> None:
    good["default"]["ratios"]["tool"] = 10**5000
    with pytest.raises(runtime.CalibrationError) as huge:
        runtime.validate(good)
    assert str(huge.value) == f"default.ratios.tool: expected a number <= {BOUND}, got Infinity"
    good["default"]["ratios"]["tool"] = 1.0
    good["default"]["message_overhead"] = math.nan
    with pytest.raises(runtime.CalibrationError) as nan:
        runtime.Calibration(good)
    assert str(nan.value) == "default.message_overhead: expected a number, got NaN"


def test_every_ratio_is_checked_also_of_a_group_not_listed(good: dict[str, Any]) -> None:
    good["providers"]["zeta"]["params"]["ratios"]["legacy"] = "1.2"
    with pytest.raises(runtime.CalibrationError) as caught:
        runtime.Calibration(good)
    assert str(caught.value) == 'providers.zeta.params.ratios.legacy: expected a number, got "1.2"'


def _at_bounds(good: dict[str, Any], sign: float) -> dict[str, Any]:
    """Every ratio and class weight at the bound, every overhead at +-bound."""
    doc = copy.deepcopy(good)
    levels = [doc["default"]]
    for entry in doc["providers"].values():
        levels += [entry["params"], *entry.get("models", {}).values()]
    for params in levels:
        params["ratios"] = dict.fromkeys(params["ratios"], 1e100)
        params["class_weights"] = dict.fromkeys(params["class_weights"], 1e100)
        params["message_overhead"] = sign * 1e100
        params["static_overhead"] = sign * 1e100
        params["static_overhead_by_tool"] = {"gemini-cli": sign * 1e100}
    return doc


MAX_COUNT = 2**53 - 1
# The largest counts a counter passed in may return: base counts, and code points of each class.
LARGEST_BASE = MAX_COUNT
LARGEST_CLASSES = (MAX_COUNT, 0, 0, 0, 0, MAX_COUNT)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_no_estimate_on_an_accepted_config_overflows(good: dict[str, Any], sign: float) -> None:
    doc = _at_bounds(good, sign)
    runtime.validate(doc)
    chars = runtime.Calibration({**doc, "base": "chars4"}, base_counter=lambda text: LARGEST_BASE)
    classes = runtime.Calibration(doc, class_counter=lambda text: LARGEST_CLASSES)
    parts = [("tool_result", "a"), ("user_text", "b"), "c"]
    for cal in (chars, classes):
        for provider in ("google", "nobody"):
            results = [
                cal.count("x", provider, "gemini-2.5-pro", "tool_result"),
                cal.count_parts(parts, provider, messages=MAX_COUNT),
                cal.estimate_context(parts, provider, messages=MAX_COUNT, tool="gemini-cli"),
                cal.predict_context(MAX_COUNT, MAX_COUNT, parts, provider, messages=MAX_COUNT),
                cal.predict_context(
                    MAX_COUNT,
                    -MAX_COUNT,
                    parts,
                    provider,
                    removed=parts,
                    placeholders=["p"],
                    removed_tokens=-MAX_COUNT,
                ),
            ]
            assert all(type(r) is int and r >= 0 for r in results), results
    assert classes.count("x", "google", kind="tool_result") == math.floor(1e100 * (2e100 * MAX_COUNT) + 0.5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda cal: cal.count_parts(["a"], messages=10**400),
            "messages: expected a number from -{m} to {m}, got Infinity",
        ),
        (
            lambda cal: cal.count_parts(["a"], messages=2**53),
            "messages: expected a number from -{m} to {m}, got 9007199254740992",
        ),
        (
            lambda cal: cal.predict_context(math.inf, 0, ["a"]),
            "last_ctx: expected a number from -{m} to {m}, got Infinity",
        ),
        (
            lambda cal: cal.predict_context(0, math.nan, ["a"]),
            "last_carry: expected a number from -{m} to {m}, got NaN",
        ),
        (
            lambda cal: cal.predict_context(0, 0, ["a"], removed_tokens=1e300),
            "removed_tokens: expected a number from -{m} to {m}, got 1e+300",
        ),
        (
            lambda cal: cal.estimate_context(["a"], messages="3"),
            'messages: expected a number from -{m} to {m}, got "3"',
        ),
    ],
    ids=[
        "messages-int",
        "messages-2**53",
        "last-ctx-inf",
        "last-carry-nan",
        "removed-1e300",
        "messages-text",
    ],
)
def test_arguments_beyond_a_count_are_refused(good: dict[str, Any], call: Any, message: str) -> None:
    cal = runtime.Calibration(good)
    with pytest.raises(runtime.CalibrationError) as caught:
        call(cal)
    assert str(caught.value) == message.format(m=MAX_COUNT)


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (math.inf, "Infinity"),
        (math.nan, "NaN"),
        (10**400, "Infinity"),
        (1e300, "1e+300"),
        ("3", '"3"'),
        (None, "null"),
    ],
    ids=["inf", "nan", "int-400", "1e300", "text", "none"],
)
def test_a_counter_passed_in_is_held_to_the_bounds_of_a_count(
    good: dict[str, Any], count: Any, shown: str
) -> None:
    expected = f"returned {shown}; expected a number from -{MAX_COUNT} to {MAX_COUNT}"
    words = runtime.Calibration({**good, "base": "words"}, base_counter=lambda text: count)
    weighted = runtime.Calibration(good, class_counter=lambda text: (1, 0, count, 0, 0, 0))
    calls: list[Callable[[runtime.Calibration], int]] = [
        lambda cal: cal.count("a", "google"),
        lambda cal: cal.count_parts(["a", "b"], "google"),
        lambda cal: cal.predict_context(10, 0, [], "google", removed=["a"]),
        lambda cal: cal.estimate_context(["a"], "google"),
    ]
    for cal, name in ((words, "the counter of 'words'"), (weighted, "class_counter")):
        for call in calls:
            with pytest.raises(runtime.CalibrationError) as caught:
                call(cal)
            assert str(caught.value) == f"{name} {expected}"
    # at the bound itself every estimate is a finite integer
    largest = runtime.Calibration(
        {**_at_bounds(good, 1.0), "base": "words"}, base_counter=lambda text: MAX_COUNT
    )
    assert all(type(call(largest)) is int for call in calls)


def test_calib_refuses_such_a_config_before_the_gate_could_pass(
    good: dict[str, Any], store_copy: Path, tmp_path: Path
) -> None:
    base = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", tmp_path / "base")
    assert base.returncode == 0, base.stderr
    huge = tmp_path / "huge.json"
    for params in [good["default"], *(entry["params"] for entry in good["providers"].values())]:
        params["ratios"] = dict.fromkeys(params["ratios"], 1e308)
    huge.write_text(json.dumps(good), encoding="utf-8")
    source = tree_hashes(tmp_path / "base")
    result = run_calib(
        "report",
        "--db",
        store_copy,
        "-e",
        "chars4",
        "--config",
        huge,
        "--no-figures",
        "--out",
        tmp_path / "now",
        "--baseline",
        tmp_path / "base" / "summary.json",
        "--max-regression",
        "5",
    )
    assert result.returncode == 1, result.stdout
    assert error_line(result) == (
        f"Error: invalid calibration config at default.ratios.model: 1e+308 is greater than the maximum of "
        f"1e+100 ({huge}); re-export it with `calib fit`"
    )
    assert "gate PASS" not in result.stdout
    assert not (tmp_path / "now").exists()
    assert tree_hashes(tmp_path / "base") == source
