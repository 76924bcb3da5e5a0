from __future__ import annotations

import ast
import json
import random
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import calib.runtime as runtime
from calib.core.config import validate_config
from calib.estimators import get_estimator
from calib.estimators.calibrated import CalibratedEstimator
from calib.estimators.charclass import class_counts

RUNTIME = Path(runtime.__file__)
ALPHABET = (
    [chr(i) for i in range(0, 0x250)]
    + list("中文日本語한국어かなカナ「」。、ー")
    + ["😀", "👍🏽", "🇫🇷", "𝔘", "\U0010ffff", "\ud800", "\udbff", "\udc00", "\udfff"]
    + ["\u3000", "\u2fff", "\ud7ff", "\ue000", "\uff01", "é", "ß", "→", "\u00a0", "\u200b"]
)


def _strings(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out = ["", " ", "a", "abc", "abcd", "\n\t", "中", "😀", "\ud800", "x" * 100_001, "中" * 100_001]
    for _ in range(n):
        out.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 60))))
    return out


def test_runtime_heuristics_equal_calibs_estimators() -> None:
    texts = _strings(4000)
    assert [runtime.chars4(t) for t in texts] == get_estimator("chars4").count_many(texts)
    assert [runtime.cjk(t) for t in texts] == get_estimator("cjk").count_many(texts)
    frame = class_counts(texts)
    assert list(frame.columns) == list(runtime.CHAR_CLASSES)
    assert [runtime.class_counts(t) for t in texts] == [tuple(r) for r in frame.iter_rows()]


def test_runtime_imports_only_the_standard_library() -> None:
    tree = ast.parse(RUNTIME.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    imported.discard("__future__")
    assert imported - set(sys.stdlib_module_names) == {"tiktoken"}  # imported only for a tiktoken base


def _config(base: str = "charclass") -> dict[str, Any]:
    def params(scale: float, overhead: float) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ratios": {"model": 1.0, "tool": 1.1 * scale, "user": 0.95 * scale},
            "message_overhead": overhead,
            "static_overhead": 5000.0 * scale,
            "calls": 10,
        }
        if base == "charclass":
            weights = [0.23, 0.91, 0.14, 0.38, 0.73, 0.67]
            out["class_weights"] = {c: w * scale for c, w in zip(runtime.CHAR_CLASSES, weights, strict=True)}
        return out

    doc: dict[str, Any] = {
        "schema_version": 1,
        "base": base,
        "kind_groups": {"tool_result": "tool", "user_text": "user", "assistant_text": "model"},
        "ratio_groups": ["model", "tool", "user"],
        "default_group": "user",
        "default": params(1.0, 3.0),
        "providers": {
            "google": {"params": params(1.05, 4.0), "models": {"gemini-2.5-pro": params(1.2, 5.5)}},
            "openai": {"params": params(0.9, 2.5), "models": {}},
        },
    }
    if base == "charclass":
        doc["classes"] = list(runtime.CHAR_CLASSES)
    validate_config(doc)
    return doc


def _cases(seed: int = 1) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    kinds = ["tool_result", "user_text", "assistant_text", "file", None]
    groups = [
        ("google", "gemini-2.5-pro"),
        ("google", "models/gemini-2.5-pro"),
        ("google", "other"),
        ("openai", "x"),
        (None, None),
    ]
    cases = []
    for _ in range(300):
        provider, model = rng.choice(groups)
        parts = [[rng.choice(kinds), t] for t in _strings(rng.randint(0, 5), seed=rng.randint(0, 10**6))[11:]]
        cases.append({"provider": provider, "model": model, "parts": parts})
    return cases


_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import runtime
cal = runtime.load(sys.argv[2])
cases = json.load(open(sys.argv[3], encoding="utf-8"))
out = [cal.count_parts([tuple(p) for p in c["parts"]], c["provider"], c["model"]) for c in cases]
out.append(cal.count("hello world", "google", "gemini-2.5-pro", kind="tool_result"))
print(json.dumps({"counts": out, "site": "site" in sys.modules}))
"""


@pytest.mark.parametrize("base", ["charclass", "chars4", "cjk"])
def test_runtime_alone_under_bare_python_matches_calibrated(tmp_path: Path, base: str) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(RUNTIME, folder / "runtime.py")
    config = folder / "calibration.json"
    config.write_text(json.dumps(_config(base)), encoding="utf-8")
    cases = tmp_path / "cases.json"
    # surrogates cannot go through JSON as UTF-8 text; json escapes them and reads them back
    cases.write_text(json.dumps(_cases()), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _SCRIPT, str(folder), str(config), str(cases)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["site"] is False
    estimator = CalibratedEstimator.from_path(config)
    expected = [
        estimator.count_parts([tuple(p) for p in c["parts"]], c["provider"], c["model"]) for c in _cases()
    ]
    expected.append(
        estimator.calibration.count("hello world", "google", "gemini-2.5-pro", kind="tool_result")
    )
    assert result["counts"] == expected
    assert len(set(expected)) > 50  # the cases really differ


def test_counts_follow_the_config() -> None:
    cal = runtime.Calibration(_config("chars4"))
    text = "x" * 400  # 100 chars4 tokens
    assert cal.count(text, "google", "gemini-2.5-pro", kind="tool_result") == 132  # 1.1 * 1.2 * 100
    assert cal.count(text, "google", "gemini-2.5-pro") == 114  # default group: user
    assert cal.count(text, "openai", "gpt-5", kind="tool_result") == 99
    parts = [("tool_result", text), ("user_text", text)]
    assert cal.count_parts(parts, "google", "gemini-2.5-pro") == 132 + 114 + 11
    assert cal.count_parts(parts, "google", "gemini-2.5-pro", messages=1) == 132 + 114 + 6  # 5.5 rounds up
    assert cal.predict_context(20_000, 300, parts, "google", "gemini-2.5-pro") == 20_300 + 257
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro") == 6000 + 257
    assert cal.count_parts([{"kind": "tool_result", "text": text}], "google", "gemini-2.5-pro") == 132 + 6


def _config_by_tool() -> dict[str, Any]:
    """The chars4 config with per-agent static overheads on gemini-2.5-pro, and no default static."""
    doc = _config("chars4")
    doc["providers"]["google"]["models"]["gemini-2.5-pro"]["static_overhead_by_tool"] = {
        "gemini-cli": 7000.4,
        "opencode": -12.5,
        "codex": 3,
    }
    del doc["default"]["static_overhead"]
    validate_config(doc)  # the JSON Schema and the runtime's rules accept it (negative and int values too)
    runtime.validate(doc)
    return doc


def test_static_overhead_falls_back_tool_then_pooled_then_zero() -> None:
    cal = runtime.Calibration(_config_by_tool())
    params = cal.params("google", "gemini-2.5-pro")
    assert params.static_overhead_by_tool == {"gemini-cli": 7000.4, "opencode": -12.5, "codex": 3.0}
    assert params.static_for("gemini-cli") == 7000.4
    assert params.static_for("claude-code") == 6000.0  # no value of its own: the pooled one
    assert params.static_for(None) == 6000.0
    assert cal.static_overhead("google", "gemini-2.5-pro", tool="codex") == 3.0
    assert cal.static_overhead("google", "models/gemini-2.5-pro", "opencode") == -12.5
    assert cal.static_overhead("google", "gemini-2.5-pro") == 6000.0
    # a level without per-tool values answers its pooled value for every tool
    assert cal.static_overhead("google", "gemini-9", tool="gemini-cli") == 5250.0
    assert cal.params("openai", "x").static_overhead_by_tool == {}
    # the default level has neither: 0
    assert cal.static_overhead("mistral", "large", tool="gemini-cli") == 0.0
    assert cal.params().static_for(None) == 0.0


def test_estimate_context_uses_the_tools_static_overhead() -> None:
    cal = runtime.Calibration(_config_by_tool())
    text = "x" * 400  # 100 chars4 tokens
    parts = [("tool_result", text), ("user_text", text)]  # 132 + 114 + 2 x 5.5 = 257 at gemini-2.5-pro
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro") == 6000 + 257
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro", tool="gemini-cli") == 7000 + 257
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro", tool="claude-code") == 6000 + 257
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro", 1, "codex") == 3 + 132 + 114 + 6
    assert cal.estimate_context(parts, "google", "gemini-2.5-pro", tool="opencode") == 0 + 257  # never < 0
    assert cal.estimate_context(parts, "openai", "gpt-5", tool="gemini-cli") == 4500 + 99 + 86 + 5
    assert cal.estimate_context(parts, tool="gemini-cli") == 0 + 110 + 95 + 6


def test_predict_context_subtracts_what_left_the_context() -> None:
    cal = runtime.Calibration(_config("chars4"))
    text = "x" * 400  # 100 chars4 tokens
    new = [("tool_result", text), ("user_text", text)]  # 132 + 114 + 2 x 5.5 = 257 at gemini-2.5-pro
    g = ("google", "gemini-2.5-pro")
    # an 800-character tool output (200 x 1.32 = 264) pruned to "[pruned]" (2 x 1.32 = 2.64):
    # 257 - 264 + 2.64 = -4.36 rounds to -4, and 150 reported reasoning tokens dropped
    removed = [("tool_result", "y" * 800)]
    placeholders = [("tool_result", "[pruned]")]
    assert cal.predict_context(20_000, 300, new, *g, removed=removed) == 20_300 - 7
    assert cal.predict_context(20_000, 300, new, *g, removed=removed, placeholders=placeholders) == 20_296
    assert (
        cal.predict_context(
            20_000, 300, new, *g, removed=removed, placeholders=placeholders, removed_tokens=150
        )
        == 20_146
    )
    # a bare placeholder text counts in the default group (user, 1.14): 257 - 264 + 2.28 = -4.72
    assert cal.predict_context(20_000, 300, new, *g, removed=removed, placeholders=["[pruned]"]) == 20_295
    # mappings work as parts, generators as sequences
    assert (
        cal.predict_context(
            20_000, 300, iter(new), *g, removed=({"kind": "tool_result", "text": "y" * 800} for _ in range(1))
        )
        == 20_293
    )
    # only reported tokens removed
    assert cal.predict_context(20_000, 300, new, *g, removed_tokens=1000) == 20_300 + 257 - 1000
    # the change rounds half up even when negative: one message (5.5) - 10 model tokens = -4.5 -> -4
    assert cal.predict_context(1000, 0, [], *g, 1, removed=[("assistant_text", "x" * 40)]) == 996
    # removals from the default level: 1.1 x 100 = 110 tool tokens; the result never goes below 0
    assert cal.predict_context(500, 0, [], removed=[("tool_result", text)]) == 390
    assert cal.predict_context(10, 0, [], removed=[("tool_result", text)], removed_tokens=50) == 0


@pytest.mark.parametrize("base", ["charclass", "chars4"])
def test_predict_context_without_removals_is_unchanged(base: str) -> None:
    cal = runtime.Calibration(_config(base))
    for case in _cases(seed=3)[:100]:
        parts = [tuple(p) for p in case["parts"]]
        group = (case["provider"], case["model"])
        expected = 7000 + 120 + cal.count_parts(parts, *group)
        assert cal.predict_context(7000, 120, parts, *group) == expected
        assert cal.predict_context(7000, 120, parts, *group, removed=[], placeholders=[]) == expected
        assert cal.predict_context(7000, 120, parts, *group, removed_tokens=0) == expected
        assert cal.predict_context(7000, 120, parts, *group, 2) == 7120 + cal.count_parts(parts, *group, 2)


def test_charclass_counts_weigh_classes() -> None:
    cal = runtime.Calibration(_config("charclass"))
    # 3 letters, 1 whitespace, 2 digits, 1 CJK at the default level: ratio 0.95 (user)
    expected = 0.95 * (3 * 0.23 + 0.14 + 2 * 0.91 + 0.73)
    assert cal.count("abc 12中") == round(expected)
    assert cal.base_tokens("abc 12中") == pytest.approx(3 * 0.23 + 0.14 + 2 * 0.91 + 0.73)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["providers"]["google"]["params"]["ratios"].__setitem__("tool", "fast"),
            "providers.google.params.ratios.tool",
        ),
        (lambda d: d.pop("default"), "default: expected an object"),
        (lambda d: d.__setitem__("schema_version", 7), "schema_version"),
        (lambda d: d["default"]["class_weights"].pop("digits"), "missing the weight of 'digits'"),
        (lambda d: d.__setitem__("classes", ["letters", "runes"]), "unknown class"),
        (lambda d: d.__setitem__("default_group", "misc"), "default_group"),
        (
            lambda d: d["default"].__setitem__("static_overhead_by_tool", [4000]),
            "default.static_overhead_by_tool: expected an object",
        ),
        (
            lambda d: d["providers"]["google"]["models"]["gemini-2.5-pro"].__setitem__(
                "static_overhead_by_tool", {"opencode": 100, "codex": "many"}
            ),
            "providers.google.models.gemini-2.5-pro.static_overhead_by_tool.codex: expected a number",
        ),
        (
            lambda d: d["providers"]["openai"]["params"].__setitem__(
                "static_overhead_by_tool", {"dexto": float("nan")}
            ),
            "providers.openai.params.static_overhead_by_tool.dexto: expected a number",
        ),
        (
            lambda d: d["default"].__setitem__("static_overhead_by_tool", {"claude-code": True}),
            "default.static_overhead_by_tool.claude-code: expected a number",
        ),
    ],
)
def test_runtime_rejects_a_hand_broken_config(tmp_path: Path, change: Any, message: str) -> None:
    doc = _config("charclass")
    change(doc)
    with pytest.raises(runtime.CalibrationError, match=message.replace(".", r"\.")):
        runtime.Calibration(doc)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(runtime.CalibrationError) as info:
        runtime.load(str(path))
    assert str(info.value).startswith(f"{path}: invalid calibration config: ")


def test_runtime_errors_for_files_and_bases(tmp_path: Path) -> None:
    with pytest.raises(runtime.CalibrationError, match="cannot read"):
        runtime.load(str(tmp_path / "none.json"))
    broken = tmp_path / "b.json"
    broken.write_text("{\n  nope", encoding="utf-8")
    with pytest.raises(runtime.CalibrationError, match=r"b\.json:2: not valid JSON"):
        runtime.load(str(broken))
    with pytest.raises(runtime.CalibrationError, match=r"hf:gemma.*counters="):
        runtime.Calibration(_config("hf:gemma"))
    cal = runtime.Calibration(_config("hf:gemma"), base_counter=lambda text: 2 * len(text))
    assert cal.count("abcd", "openai", "x", kind="tool_result") == round(0.9 * 1.1 * 8)


def test_tiktoken_base_without_tiktoken_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "agent"
    folder.mkdir()
    shutil.copy(RUNTIME, folder / "runtime.py")
    config = folder / "calibration.json"
    config.write_text(json.dumps(_config("tiktoken:o200k_base")), encoding="utf-8")
    script = "import sys; sys.path.insert(0, sys.argv[1]); import runtime; runtime.load(sys.argv[2])"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, str(folder), str(config)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "tiktoken package is not installed" in done.stderr
    assert "--base charclass" in done.stderr


# -- preferred bases (schema version 2) and the counters passed in -------------------------------------


def _config_v2(own: str = "chars4", preferred: str = "hf:gemma3") -> dict[str, Any]:
    """`_config(own)` at version 2, google preferring `preferred` (as a provider and for gemini-2.5-pro)."""
    doc = _config(own)
    doc["schema_version"] = 2
    doc["providers"]["google"]["preferred"] = {
        "base": preferred,
        "params": {
            "ratios": {"model": 1.0, "tool": 2.0, "user": 3.0},
            "message_overhead": 1.0,
            "static_overhead": 100.0,
        },
        "models": {
            "gemini-2.5-pro": {"ratios": {"model": 1.5, "tool": 2.5, "user": 0.5}, "message_overhead": 2.0}
        },
    }
    validate_config(doc)
    return doc


def _words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("own", ["chars4", "charclass"])
def test_a_preferred_base_counts_with_the_counter_passed_in_by_name(tmp_path: Path, own: str) -> None:
    doc = _config_v2(own)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for cal in (
        runtime.Calibration(doc, counters={"hf:gemma3": _words}),
        runtime.load(str(path), counters={"hf:gemma3": _words}),
        runtime.loads(path.read_text(encoding="utf-8"), counters={"hf:gemma3": _words}),
    ):
        assert cal.missing_counters() == []
        params = cal.params("google", "models/gemini-2.5-pro")
        assert (params.level, params.base) == ("google/gemini-2.5-pro", "hf:gemma3")
        # 2.5 (tool) x 4 words
        assert cal.count("one two three four", "google", "gemini-2.5-pro", kind="tool_result") == 10
        assert cal.base_tokens("one two three four", params) == 4.0
        # a model the preferred base has no parameters of: its provider's (user 3.0, static 100)
        params = cal.params("google", "gemini-9")
        assert (params.level, params.base) == ("google", "hf:gemma3")
        assert cal.count("one two", "google", "gemini-9") == 6
        assert cal.estimate_context([("user_text", "one two")], "google", "gemini-9") == 100 + 6 + 1
        assert (
            cal.predict_context(1000, 0, [("user_text", "a b c")], "google", "gemini-2.5-pro") == 1000 + 2 + 2
        )
        tracker = cal.tracker("google", "gemini-2.5-pro", window=100_000)
        assert tracker.append([("tool_result", "one two three four")]) == 10 + 2
        # a provider that prefers no base, and the default: the config's own base
        assert cal.params("openai", "x").base == own
        assert cal.params("nobody").base == own
    # without the counter, google's own-base parameters answer, fitted for it all the same
    alone = runtime.Calibration(doc)
    assert alone.missing_counters() == ["hf:gemma3"]
    params = alone.params("google", "gemini-2.5-pro")
    assert (params.level, params.base) == ("google/gemini-2.5-pro", own)
    assert alone.count("one two", "google", "gemini-9") != 6
    if own == "chars4":
        assert alone.count("x" * 400, "google", "gemini-2.5-pro", kind="tool_result") == 132


@pytest.mark.parametrize(("counter", "shown"), [(42, "42"), (None, "null"), ("words", '"words"')])
def test_a_counter_that_is_not_a_function_is_refused_naming_its_base(
    tmp_path: Path, counter: Any, shown: str
) -> None:
    message = f"the counter of 'hf:gemma3' is not a function: {shown}"
    with pytest.raises(runtime.CalibrationError) as caught:
        runtime.Calibration(_config_v2(), counters={"hf:gemma3": counter})
    assert str(caught.value) == message
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(_config_v2()), encoding="utf-8")
    with pytest.raises(runtime.CalibrationError) as caught:
        runtime.load(str(path), counters={"hf:gemma3": counter})
    assert str(caught.value) == f"{path}: invalid calibration config: {message}"
    if counter is not None:  # base_counter=None is no counter; any other is the own base's
        with pytest.raises(runtime.CalibrationError) as caught:
            runtime.Calibration(_config("hf:gemma"), base_counter=counter)
        assert str(caught.value) == f"the counter of 'hf:gemma' is not a function: {shown}"


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (2**53, "9007199254740992"),
        (-1e300, "-1e+300"),
        ("3", '"3"'),
        (None, "null"),
    ],
)
def test_a_counter_passed_in_by_name_is_held_to_the_bounds_of_a_count(count: Any, shown: str) -> None:
    cal = runtime.Calibration(_config_v2(), counters={"hf:gemma3": lambda text: count})
    message = (
        f"the counter of 'hf:gemma3' returned {shown}; "
        f"expected a number from -{runtime.MAX_COUNT} to {runtime.MAX_COUNT}"
    )
    calls: list[Any] = [
        lambda: cal.count("a", "google"),
        lambda: cal.count_parts(["a", "b"], "google", "gemini-2.5-pro"),
        lambda: cal.predict_context(10, 0, [], "google", removed=["a"]),
        lambda: cal.estimate_context(["a"], "google"),
        lambda: cal.tracker("google", None, window=1000).append(["a"]),
    ]
    for call in calls:
        with pytest.raises(runtime.CalibrationError) as caught:
            call()
        assert str(caught.value) == message
    # the providers that prefer no base never call it
    assert cal.count("abcd", "openai", "x") == 1


class _FakeEncoding:
    def encode_ordinary(self, text: str) -> list[str]:
        return text.split()


def _fake_tiktoken(monkeypatch: pytest.MonkeyPatch, *, loads: bool) -> list[str]:
    """A `tiktoken` module whose vocabularies load (and count words) or fail to; returns the names asked."""
    asked: list[str] = []
    fake = types.ModuleType("tiktoken")

    def get_encoding(name: str) -> _FakeEncoding:
        asked.append(name)
        if not loads:
            raise OSError("cannot download the vocabulary")
        return _FakeEncoding()

    fake.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", fake)
    return asked


def test_a_tiktoken_preferred_base_counts_with_tiktoken_when_its_vocabulary_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _fake_tiktoken(monkeypatch, loads=True)
    doc = _config_v2(preferred="tiktoken:o200k_base")
    cal = runtime.Calibration(doc)
    assert asked == []  # looked for when first needed
    params = cal.params("google", "gemini-2.5-pro")
    assert (params.level, params.base) == ("google/gemini-2.5-pro", "tiktoken:o200k_base")
    assert cal.count("one two three four", "google", "gemini-2.5-pro", kind="tool_result") == 10
    assert cal.count("one two", "google", "gemini-9") == 6
    assert cal.missing_counters() == []
    assert asked == ["o200k_base"]  # loaded once, for every lookup after
    # a counter passed in by name comes before the package
    named = runtime.Calibration(doc, counters={"tiktoken:o200k_base": lambda text: 1})
    assert named.count("one two three four", "google", "gemini-2.5-pro", kind="tool_result") == 3  # 2.5 up
    assert asked == ["o200k_base"]
    # a version 1 config whose own base is tiktoken counts with it too
    v1 = runtime.Calibration(_config("tiktoken:o200k_base"))
    assert v1.count("a b c d", "openai", "x") == 3  # 0.855 x 4 words


def test_a_tiktoken_preferred_base_that_does_not_load_falls_back_to_the_own_base(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _fake_tiktoken(monkeypatch, loads=False)
    doc = _config_v2(preferred="tiktoken:o200k_base")
    cal = runtime.Calibration(doc)
    params = cal.params("google", "gemini-2.5-pro")
    assert (params.level, params.base) == ("google/gemini-2.5-pro", "chars4")
    assert cal.count("x" * 400, "google", "gemini-2.5-pro", kind="tool_result") == 132
    assert cal.missing_counters() == ["tiktoken:o200k_base"]
    assert asked == ["o200k_base"]  # looked for once
    # the own base of a version 1 config must count: there the same failure is an error
    with pytest.raises(runtime.CalibrationError, match="tiktoken cannot load the 'o200k_base' vocabulary"):
        runtime.Calibration(_config("tiktoken:o200k_base"))
    # tiktoken not installed at all: the same fallback
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    cal = runtime.Calibration(doc)
    assert cal.missing_counters() == ["tiktoken:o200k_base"]
    assert cal.params("google", "gemini-9").base == "chars4"


def test_version_1_configs_still_load_with_a_base_counter(tmp_path: Path) -> None:
    doc = _config("hf:gemma")
    assert doc["schema_version"] == 1
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for cal in (
        runtime.Calibration(doc, base_counter=_words),
        runtime.load(str(path), base_counter=_words),
        runtime.Calibration(doc, counters={"hf:gemma": _words}),
        # base_counter is the own base's counter, before one of the same name in counters
        runtime.Calibration(doc, counters={"hf:gemma": lambda text: 10**6}, base_counter=_words),
    ):
        params = cal.params("google", "gemini-2.5-pro")
        assert (params.level, params.base) == ("google/gemini-2.5-pro", "hf:gemma")
        four_words = cal.count("one two three four", "google", "gemini-2.5-pro", kind="tool_result")
        assert four_words == 5  # 1.32 x 4
        assert cal.missing_counters() == []
    # version 1 has no preferred bases; version 2 has no tokenizer as its own base
    v1 = {**_config_v2(), "schema_version": 1}
    with pytest.raises(
        runtime.CalibrationError, match=r"providers\.google\.preferred: a preferred base needs schema"
    ):
        runtime.Calibration(v1)
    v2 = {**doc, "schema_version": 2}
    with pytest.raises(
        runtime.CalibrationError, match="base: a version 2 config's own base needs no tokenizer"
    ):
        runtime.Calibration(v2, base_counter=_words)
