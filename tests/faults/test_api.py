"""The Python API: `~` in paths, errors that cannot be missed, and the runtime's group lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from faults.kit import counts, session_files, tree_hashes

import calib
from calib import runtime
from calib.analysis.replay import run_replay
from calib.analysis.report import run_report
from calib.core.errors import InputError, StoreError
from calib.scoring.score import score_store


def test_ingest_sessions_expands_the_home_folder(
    sessions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(sessions.parent))
    result = calib.ingest_sessions([f"~/{sessions.name}"], db="~/calib.duckdb")
    assert result.ok and result.sessions == 4
    assert counts(sessions.parent / "calib.duckdb")["sessions"] == 4


def test_ingest_errors_show_in_the_repr_and_can_raise(sessions: Path, tmp_path: Path) -> None:
    bad = session_files(sessions)[0]
    bad.write_text("{broken\n")
    source = tree_hashes(sessions)
    db = tmp_path / "calib.duckdb"
    result = calib.ingest_sessions([sessions], db=db)
    assert not result.ok and result.sessions == 3
    assert "errors: this line is not valid JSON" in repr(result) and str(bad) in repr(result)
    with pytest.raises(InputError) as raised:
        result.raise_for_errors()
    assert raised.value.path == str(bad) and raised.value.line == 1
    with pytest.raises(InputError):
        calib.ingest_sessions([sessions], db=tmp_path / "other.duckdb", raise_on_error=True)
    assert counts(tmp_path / "other.duckdb")["sessions"] == 3  # the others were stored first
    assert tree_hashes(sessions) == source


def _config(tmp_path: Path) -> Path:
    doc = {
        "schema_version": 1,
        "base": "chars4",
        "kind_groups": {"tool_result": "tool", "user_text": "user"},
        "ratio_groups": ["tool", "user"],
        "default_group": "user",
        "default": {"ratios": {"tool": 1.0, "user": 1.0}, "message_overhead": 0},
        "providers": {
            "google": {
                "params": {"ratios": {"tool": 2.0, "user": 2.0}, "message_overhead": 0},
                "models": {"gemini-2.5-pro": {"ratios": {"tool": 3.0, "user": 3.0}, "message_overhead": 0}},
            }
        },
    }
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(doc))
    return path


def test_runtime_says_which_group_answered_and_strict_mode_raises(tmp_path: Path) -> None:
    path = _config(tmp_path)
    cal = runtime.load(str(path))
    assert cal.params("google", "gemini-2.5-pro").level == "google/gemini-2.5-pro"
    assert cal.params("google", "gemini-9").level == "google"
    assert cal.params("nosuch").level == "default"
    assert cal.count("x" * 40, provider="nosuch") == 10  # the documented fallback: the default
    strict = runtime.load(str(path), strict=True)
    assert strict.count("x" * 40, provider="google", model="gemini-2.5-pro") == 30
    with pytest.raises(runtime.UnknownGroupError) as raised:
        strict.count("x" * 40, provider="nosuch")
    assert str(raised.value) == (
        "the calibration has no parameters of provider 'nosuch' (it would fall back to the default "
        "level); it has: google, google/gemini-2.5-pro"
    )
    with pytest.raises(runtime.UnknownGroupError):
        cal.params("google", "gemini-9", strict=True)


@pytest.mark.parametrize("call", ["score", "replay", "report"])
def test_reading_functions_never_create_a_store(call: str, tmp_path: Path) -> None:
    missing = tmp_path / "nested" / "typo.duckdb"
    runs = {
        "score": lambda: score_store(missing, ["chars4"]),
        "replay": lambda: run_replay(missing, ["chars4"]),
        "report": lambda: run_report(missing, out=tmp_path / "report"),
    }
    with pytest.raises(StoreError, match="no calib store at"):
        runs[call]()
    assert not missing.exists() and not missing.parent.exists()
