"""The estimator registry: listing, availability, unknown names, and a light `import calib`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import calib
from calib.cli.app import app
from calib.core.errors import EstimatorError
from calib.estimators import list_estimators


def test_list_estimators_covers_the_builtins_and_families() -> None:
    infos = {e.name: e for e in list_estimators()}
    for name in ("chars4", "cjk", "cjk:1.3", "charclass", "tiktoken:o200k_base", "tiktoken:cl100k_base"):
        assert infos[name].available, infos[name]
        assert infos[name].reason is None
    for name in (
        "tiktoken:llama3",
        "tiktoken:qwen",
        "tiktoken:tekken",
        "hf:deepseek",
        "hf:claude-legacy",
        "hf:gemma",
    ):
        assert name in infos
        info = infos[name]
        assert info.available == (info.reason is None)
        if not info.available:
            assert "pip install" in (info.reason or "")
    assert {"cjk:", "charclass:", "hf:"} <= set(infos)
    assert infos["tiktoken:o200k_base"].family == "tiktoken"
    assert calib.list_estimators is list_estimators


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(EstimatorError) as info:
        calib.get_estimator("tiktoken:nope")
    message = str(info.value)
    assert "unknown estimator 'tiktoken:nope'" in message
    assert "chars4" in message and "tiktoken:o200k_base" in message and "hf:ARG" in message


def test_import_calib_and_listing_load_no_heavy_library() -> None:
    script = (
        "import sys, calib\n"
        "calib.list_estimators()\n"
        "calib.get_estimator('chars4').count('x')\n"
        "heavy = ['tiktoken', 'transformers', 'tokenizers', 'matplotlib', 'jinja2']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_estimators_command_json_and_table() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["estimators", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    names = [e["name"] for e in document]
    assert names[0] == "chars4" and "hf:" in names
    assert set(document[0]) == {"name", "family", "description", "available", "reason"}
    table = runner.invoke(app, ["estimators"])
    assert table.exit_code == 0
    assert "tiktoken:o200k_base" in table.stdout


def test_the_cache_version_is_known_without_loading_a_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    import calib.estimators as registry

    costly = [s.name for s in registry.specs() if s.version is not None and not s.is_family]
    usable = {e.name for e in list_estimators() if e.available}
    names = [name for name in costly if name in usable]
    assert "tiktoken:o200k_base" in names  # the spec says how, for the tokenizers calib ships with
    monkeypatch.setattr(registry, "_CACHE", {})
    versions = {name: registry.cache_version(name) for name in names}
    assert registry._CACHE == {}  # nothing was built
    # and each is the version the built estimator keys its counts by
    assert versions == {name: str(registry.get_estimator(name).version) for name in names}
    # a cheap estimator is built to learn it
    assert registry.cache_version("chars4") == "1"
    assert "chars4" in registry._CACHE


def test_only_a_calibration_is_a_grouped_estimator() -> None:
    from calib.estimators import grouped_estimator

    assert grouped_estimator("tiktoken:o200k_base") is None
    with pytest.raises(EstimatorError, match="unknown estimator"):
        grouped_estimator("no-such-estimator")


def test_estimators_loaded_for_now_leave_the_cache_and_earlier_ones_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import calib.estimators as registry

    monkeypatch.setattr(registry, "_CACHE", {})
    kept = registry.get_estimator("chars4")
    with registry.loaded_for_now():
        registry.get_estimator("cjk")
        registry.get_estimator("chars4")
        assert set(registry._CACHE) == {"chars4", "cjk"}
    assert list(registry._CACHE.items()) == [("chars4", kept)]
