from __future__ import annotations

import json
from pathlib import Path

import pytest

from calib.analysis.windows import DEFAULT_WINDOWS, Window, WindowTable, fixed_windows, load_windows
from calib.core.errors import ConfigError


def test_window_table_lookup_and_overrides(tmp_path: Path) -> None:
    table = WindowTable()
    assert table.lookup("gemini-2.5-pro") == Window(1_048_576, 65_536)
    assert table.lookup("google/gemini-3-flash-preview") == Window(1_048_576, 65_536)
    assert table.lookup("gpt-5").max_prompt == 272_000  # type: ignore[union-attr]
    assert table.lookup("gpt-4.1-mini").context == 1_047_576  # type: ignore[union-attr]
    assert table.lookup("deepseek-chat") == Window(128_000, 8_192)
    assert table.lookup("big-pickle") is None
    assert table.lookup(None) is None
    # an int override keeps the model's output limit; a pattern override covers unknown models
    over = table.overridden({"gpt-5": 100_000, "*": {"context": 50_000, "max_output": 1_000}})
    assert over.lookup("gpt-5") == Window(100_000, 100_000)
    assert over.lookup("big-pickle") == Window(50_000, 1_000)
    assert over.lookup(None) == Window(50_000, 1_000)
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"big-pickle": {"context": 200_000, "max_output": 32_000}}))
    loaded = load_windows(path)
    assert loaded.lookup("big-pickle") == Window(200_000, 32_000)
    assert loaded.lookup("claude-sonnet-4-5") == Window(200_000, 64_000)
    assert load_windows({"toy": 1000}).lookup("toy") == Window(1000, 0)
    # a what-if window keeps the model's shape: output limit and input cap in proportion
    what_if = fixed_windows(150_000)
    assert what_if.lookup("gemini-2.5-pro") == Window(150_000, 9_375)
    assert what_if.lookup("gpt-5") == Window(150_000, 48_000, input=102_000)
    assert what_if.lookup("big-pickle") == Window(150_000, 0)
    assert fixed_windows(10_000, max_output=2_000).lookup("gpt-5") == Window(10_000, 2_000)
    assert [p for p, _ in DEFAULT_WINDOWS] == [p for p, _ in WindowTable()]


def test_window_file_errors_say_where(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"toy": {"context": "lots"}}))
    with pytest.raises(ConfigError) as err:
        load_windows(bad)
    assert str(bad) in str(err.value) and "toy" in str(err.value)
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  nope")
    with pytest.raises(ConfigError) as err:
        load_windows(broken)
    assert f"{broken}:2" in str(err.value)
    with pytest.raises(ConfigError):
        load_windows(tmp_path / "absent.json")
    with pytest.raises(ConfigError):
        load_windows({"toy": {"context": -5}})
