from __future__ import annotations

import copy
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from calib.calibration.export import export_config
from calib.calibration.fit import Calibrator, fit
from calib.core.config import dumps, load_config, normalise_model, schema, validate_config
from calib.core.errors import ConfigError
from calib.core.records import Call, ParsedSession, Part, Session
from calib.runtime import RUNTIME_BASES, Calibration, CalibrationError
from calib.store.store import Store

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
]


def _store(path: Path) -> Store:
    """Two providers, three models; usage = 1.2 x chars4 of each input part + 3 per part."""
    rng = random.Random(11)
    store = Store(path)
    sessions = []
    for s, (provider, model) in enumerate(
        [
            ("google", "gemini-2.5-pro"),
            ("google", "models/gemini-2.5-flash"),
            ("anthropic", "claude-sonnet-4-20250514"),
        ]
        * 6
    ):
        uid = f"t:{s}"
        parts, calls = [], []
        ctx = 4000.0
        for k in range(6):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 200)))
            parts.append(
                Part(f"{uid}:u{k}", uid, len(parts), "tool", "tool_result" if k else "user_text", text)
            )
            ctx += 1.2 * ((len(text) + 2) // 4) + 3
            calls.append(
                Call(f"{uid}:c{k}", uid, k, 0, len(parts), "ok", "openai", provider=provider, model=model,
                     ts=datetime(2026, 1, 1) + timedelta(minutes=s * 10 + k), ctx=round(ctx), carry=5)
            )  # fmt: skip
            parts.append(
                Part(
                    f"{uid}:a{k}",
                    uid,
                    len(parts),
                    "assistant",
                    "assistant_text",
                    "ok " * 7,
                    call_uid=f"{uid}:c{k}",
                )
            )
            ctx += 5
        sessions.append(ParsedSession(Session(uid, "test", uid, "/x", "test"), calls, parts))
    store.write(sessions)
    return store


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Calibrator]:
    with _store(tmp_path_factory.mktemp("cfg") / "c.duckdb") as store:
        return {base: fit(store, base, holdout_fraction=0) for base in ("chars4", "charclass")}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("gemini-2.5-pro", "gemini-2.5-pro"),
        ("models/gemini-2.5-pro", "gemini-2.5-pro"),
        ("google/gemini-2.5-pro", "gemini-2.5-pro"),
        ("openrouter/anthropic/claude-sonnet-4", "claude-sonnet-4"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
        ("claude-sonnet-4@20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("  Gemini-2.5-Pro ", "gemini-2.5-pro"),
        ("gemini-2.5-flash-preview-04-17", "gemini-2.5-flash-preview-04-17"),
        ("o3", "o3"),
        (None, ""),
    ],
)
def test_model_names_are_normalised(raw: str | None, expected: str) -> None:
    assert normalise_model(raw) == expected


def test_export_is_canonical_and_valid(fitted: dict[str, Calibrator], tmp_path: Path) -> None:
    for base, calibrator in fitted.items():
        first, second = tmp_path / f"{base}1.json", tmp_path / f"{base}2.json"
        doc = export_config(calibrator, first)
        export_config(calibrator, second)
        assert first.read_bytes() == second.read_bytes()
        text = first.read_text(encoding="utf-8")
        assert text == dumps(json.loads(text))  # sorted keys, fixed layout
        assert "created_at" not in doc
        jsonschema.validate(doc, schema())
        assert load_config(first) == doc
        # one base for every provider: a tokenizer as the only base is a version 1 config
        assert doc["schema_version"] == (2 if base in RUNTIME_BASES else 1) and doc["base"] == base
        _all_floats_rounded(doc)
        # model names are stored normalised, under their provider
        assert set(doc["providers"]) == {"anthropic", "google"}
        assert set(doc["providers"]["google"]["models"]) == {"gemini-2.5-pro", "gemini-2.5-flash"}
        assert set(doc["providers"]["anthropic"]["models"]) == {"claude-sonnet-4"}
        tool = doc["providers"]["google"]["models"]["gemini-2.5-pro"]["ratios"]["tool"]
        if base == "chars4":
            assert tool == pytest.approx(1.2, rel=0.01)
    stamped = export_config(fitted["chars4"], created_at=datetime(2026, 5, 1, 12, 0))
    assert stamped["created_at"] == "2026-05-01T12:00:00"
    jsonschema.validate(stamped, schema())


def _all_floats_rounded(value: Any) -> None:
    if isinstance(value, float):
        assert value == float(f"{value:.6g}")
    elif isinstance(value, dict):
        for v in value.values():
            _all_floats_rounded(v)
    elif isinstance(value, list):
        for v in value:
            _all_floats_rounded(v)


def test_lookup_falls_back_model_provider_default(fitted: dict[str, Calibrator]) -> None:
    doc = fitted["chars4"].to_config()
    cal = Calibration(doc, base_counter=len)
    assert cal.params("google", "gemini-2.5-pro").level == "google/gemini-2.5-pro"
    assert cal.params("Google", "models/gemini-2.5-pro").level == "google/gemini-2.5-pro"
    assert cal.params("google", "gemini-9-ultra").level == "google"
    assert cal.params("mistral", "mistral-large").level == "default"
    # a provider name the config does not know still finds a known model
    assert cal.params("vertex", "claude-sonnet-4@20250514").level == "anthropic/claude-sonnet-4"
    assert cal.params(None, None).level == "default"


_BREAKS = [
    (lambda d: d["default"]["ratios"].__setitem__("tool", "1.2"), "default.ratios.tool"),
    (lambda d: d["default"].pop("message_overhead"), "message_overhead"),
    (lambda d: d.__setitem__("schema_version", 4), "schema_version"),
    (lambda d: d["default"]["ratios"].__setitem__("user", -1), "default.ratios.user"),
    (lambda d: d["providers"]["google"]["models"]["gemini-2.5-pro"].pop("class_weights"), "class_weights"),
    (lambda d: d["providers"]["google"]["params"]["class_weights"].pop("cjk"), "cjk"),
    (lambda d: d.__setitem__("classes", [*d["classes"], "emoji"]), "classes"),
    (lambda d: d["kind_groups"].__setitem__("tool_result", "tools"), "kind_groups"),
    (lambda d: d["default"].__setitem__("static_overhead_by_tool", 4000), "default.static_overhead_by_tool"),
    (
        lambda d: d["providers"]["google"]["params"].__setitem__("static_overhead_by_tool", {"codex": "4k"}),
        "providers.google.params.static_overhead_by_tool.codex",
    ),
]


@pytest.mark.parametrize(("breaker", "where"), _BREAKS)
def test_hand_broken_configs_are_rejected_clearly(
    fitted: dict[str, Calibrator], tmp_path: Path, breaker: Any, where: str
) -> None:
    doc = copy.deepcopy(fitted["charclass"].to_config())
    breaker(doc)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert where.split(".")[-1] in message
    with pytest.raises(ConfigError):
        validate_config(doc)


def test_static_overhead_by_tool_is_checked_by_schema_and_runtime(fitted: dict[str, Calibrator]) -> None:
    doc = copy.deepcopy(fitted["chars4"].to_config())
    doc["default"]["static_overhead_by_tool"] = {"gemini-cli": 4100.5, "opencode": -3, "dexto": 0}
    validate_config(doc)
    jsonschema.validate(doc, schema())
    for bad, message in [
        ([1, 2], "static_overhead_by_tool"),
        ({"codex": None}, "static_overhead_by_tool"),
        ({"codex": "many"}, "static_overhead_by_tool"),
    ]:
        doc["default"]["static_overhead_by_tool"] = bad
        with pytest.raises(ConfigError, match=message):
            validate_config(doc)
    # the runtime's own rules name the field too (jsonschema is optional in calib, absent in agents)
    doc["default"]["static_overhead_by_tool"] = {"codex": float("inf")}
    with pytest.raises(CalibrationError, match=r"default\.static_overhead_by_tool\.codex: expected a number"):
        Calibration(doc, base_counter=len)


def test_export_writes_static_overhead_by_tool(fitted: dict[str, Calibrator], tmp_path: Path) -> None:
    calibrator = copy.deepcopy(fitted["chars4"])
    calibrator.global_.static_overhead = 4000.0
    calibrator.global_.static_by_tool = {"opencode": 1234.56789, "gemini-cli": 5000, "codex": -7.25}
    calibrator.providers_["google"].static_overhead = 4500.0
    calibrator.providers_["google"].static_by_tool = {}
    model = calibrator.models_[("google", "gemini-2.5-pro")]
    model.static_overhead = 4800.0
    model.static_by_tool = {"gemini-cli": 5200.0}
    path = tmp_path / "calibration.json"
    doc = export_config(calibrator, path)
    by_tool = doc["default"]["static_overhead_by_tool"]
    assert by_tool == {"codex": -7.25, "gemini-cli": 5000, "opencode": 1234.57}  # rounded like any figure
    assert list(by_tool) == ["codex", "gemini-cli", "opencode"]
    assert "static_overhead_by_tool" not in doc["providers"]["google"]["params"]  # empty: not written
    google = doc["providers"]["google"]["models"]["gemini-2.5-pro"]
    assert google["static_overhead_by_tool"] == {"gemini-cli": 5200.0}
    text = path.read_text(encoding="utf-8")
    assert text == dumps(json.loads(text))
    assert text.index('"codex"') < text.index('"gemini-cli"') < text.index('"opencode"')
    validate_config(doc)
    jsonschema.validate(doc, schema())
    assert load_config(path) == doc
    cal = Calibration(load_config(path), base_counter=len)
    assert cal.static_overhead(None, None, "opencode") == 1234.57
    assert cal.static_overhead(None, None, "codex") == -7.25
    assert cal.static_overhead(None, None, "claude-code") == 4000.0
    assert cal.static_overhead("google", "gemini-2.5-pro", "gemini-cli") == 5200.0
    assert cal.static_overhead("google", "gemini-2.5-pro", "opencode") == 4800.0
    assert cal.static_overhead("google", "gemini-9", "gemini-cli") == 4500.0
    assert cal.estimate_context([], "google", "models/gemini-2.5-pro", tool="gemini-cli") == 5200
    assert cal.estimate_context([], tool="opencode") == 1235


def test_unreadable_configs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1,\n "base": ', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not valid JSON.*bad\.json:2\)"):
        load_config(bad)
