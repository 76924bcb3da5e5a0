"""What the commands print: one JSON document with `--json`, one `Error:` line on failure, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest


def run_calib(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`calib ARGS` in a fresh interpreter, through the console script's entry point."""
    return subprocess.run(
        [sys.executable, "-m", "calib", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def _one_document(stdout: str) -> Any:
    """The JSON document `stdout` holds, asserting it holds exactly that, rendered as `emit_json` does."""
    document = json.loads(stdout)  # raises on anything before or after the one document
    assert stdout == json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return document


def test_estimators_json_is_one_document(small_store: Path) -> None:
    result = run_calib("estimators", "--json", "--db", small_store)
    assert result.returncode == 0, result.stderr
    document = _one_document(result.stdout)
    assert "chars4" in [info["name"] for info in document]


def test_score_json_is_one_document(small_store: Path) -> None:
    result = run_calib("score", "-e", "chars4", "--json", "--db", small_store)
    assert result.returncode == 0, result.stderr
    document = _one_document(result.stdout)
    assert {row["estimator"] for row in document} == {"chars4"}
    assert sum(row["calls"] for row in document) > 0


def test_an_unknown_estimator_is_one_error_line(small_store: Path) -> None:
    result = run_calib("score", "-e", "nope", "--db", small_store)
    # An unknown name is a usage error (UnknownEstimatorError), so it exits 2.
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Error: unknown estimator 'nope'")
    assert "chars4" in lines[0]  # the valid names are listed


def test_running_out_of_the_memory_cap_says_how_to_raise_it(
    small_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALIB_MEMORY_LIMIT", "2MB")  # far below what a batch of calls needs
    result = run_calib("score", "-e", "chars4", "--db", small_store)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Error: the store failed: Out of Memory Error")
    assert lines[0].endswith("(set CALIB_MEMORY_LIMIT to a larger size, such as 1GB)")


def test_an_unknown_sessions_choice_is_a_usage_error(small_store: Path) -> None:
    result = run_calib("score", "--sessions", "some", "--db", small_store)
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["Error: unknown --sessions 'some'; use all, train or holdout"]


def test_a_missing_path_fails_with_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    result = run_calib("ingest", missing, "--db", tmp_path / "x.duckdb", "-q")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"Error: no such file or folder ({missing}); check the path"]


def test_score_writes_the_per_call_frame_it_summarises(small_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.parquet"
    result = run_calib("score", "-e", "chars4", "--json", "--calls", out, "--db", small_store)
    assert result.returncode == 0, result.stderr
    summary = _one_document(result.stdout)
    frame = pl.read_parquet(out)
    assert set(frame["estimator"]) == {"chars4"}
    # the summary's scored calls and breaks are the frame's rows by status
    assert frame.filter(pl.col("status") == "ok").height == sum(row["calls"] for row in summary)
    assert frame.filter(pl.col("status") == "break").height == sum(row["breaks"] for row in summary)
    for column in ("tool", "session", "call", "provider", "model", "family", "reason", "ctx", "delta"):
        assert column in frame.columns
    scored = frame.filter(pl.col("status") == "ok")
    assert (scored["family"] == "incremental").all()
    expected = scored["previous_ctx"] + scored["previous_carry"] + scored["estimated_delta"]
    assert (scored["predicted_ctx"] == expected).all()
    # every call with usage has a prediction (end to end); the first of each session in full
    with_usage = frame.filter(pl.col("family").is_not_null())
    assert with_usage["predicted_ctx"].null_count() == 0
    assert (with_usage.filter(pl.col("status") == "baseline")["family"] == "full").all()


def test_score_overall_sums_the_groups(small_store: Path) -> None:
    by_group = _one_document(run_calib("score", "-e", "chars4", "--json", "--db", small_store).stdout)
    result = run_calib("score", "-e", "chars4", "--json", "--overall", "--db", small_store)
    assert result.returncode == 0, result.stderr
    (overall,) = _one_document(result.stdout)
    assert (overall["provider"], overall["model"]) == (None, None)
    for figure in ("calls", "breaks", "e2e_calls", "full_calls"):
        assert overall[figure] == sum(row[figure] for row in by_group)


def test_score_refuses_an_unknown_calls_format_before_scoring(small_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "calls.txt"
    result = run_calib("score", "-e", "chars4", "--calls", out, "--db", small_store)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"Error: cannot write the per-call frame as '.txt' ({out}); name a file ending in .csv, .parquet, .jsonl"
    ]
    assert not out.exists()


@pytest.mark.parametrize(
    "items",
    [
        [],
        [{"b": 1, "a": [1, {"z": None, "y": "中文 \u0085 control"}]}],
        [{"n": i, "nested": {"list": list(range(i))}} for i in range(5)],
    ],
)
def test_a_list_written_as_it_comes_is_the_document_emit_json_writes(
    items: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from calib.cli.output import emit_json, emit_json_list

    head = {"window": "real", "config": "calibration.json", "zeta": {"k": 1}}
    emit_json({**head, "calls": items})
    whole = capsys.readouterr().out
    emit_json_list(head, "calls", iter(items))
    assert capsys.readouterr().out == whole
