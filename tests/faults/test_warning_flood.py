"""A log of many damaged lines: the first few are warned about in full, the rest only counted, so that
memory and output stay small however many there are; `-q` prints no warning, only the summary's count."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson
import pytest
from faults.kit import counts, json_of, run_calib, session_files, tree_hashes

from calib.core.errors import InputWarning
from calib.ingest.pipeline import ingest
from calib.ingest.sources import find_sources
from calib.ingest.workers import Task, parse_task
from calib.store.writes import FileState
from calib.synth import write_sample

KEPT = 3  # warnings kept in full per file
GARBAGE = b"garbage: not JSON, left by a broken copy " + b"x" * 40


def _flood(log: Path, n: int) -> list[int]:
    """Put `n` damaged lines after the first line of a JSONL log; returns their line numbers."""
    lines = log.read_bytes().split(b"\n")
    log.write_bytes(b"\n".join([lines[0], *[GARBAGE] * n, *lines[1:]]))
    return list(range(2, n + 2))


def _reason() -> str:
    try:
        orjson.loads(GARBAGE)
    except orjson.JSONDecodeError as exc:
        return str(exc.msg)
    raise AssertionError("GARBAGE parses")


def _message(log: Path, line: int) -> str:
    return f"this line is not valid JSON ({_reason()}); left out, the rest of the session was imported ({log}:{line})"


def test_a_flood_of_damaged_lines_shows_the_first_three_and_a_count(sessions: Path, tmp_path: Path) -> None:
    flooded, other = session_files(sessions)[:2]
    damaged = _flood(flooded, 1000)
    _flood(other, 2)  # below the limit: both shown, nothing counted
    source = tree_hashes(sessions)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db)
    assert result.returncode == 0, result.stderr
    first = [
        *(f"Warning: {_message(flooded, n)}" for n in damaged[:KEPT]),
        f"Warning: … and {1000 - KEPT} more damaged lines in {flooded}",
    ]
    second = [f"Warning: {_message(other, n)}" for n in (2, 3)]
    assert result.stderr.splitlines() in (first + second, second + first)  # each file's lines together
    assert result.stdout.strip().endswith("; 1002 warnings")
    assert counts(db)["sessions"] == 4  # both damaged sessions are stored
    assert tree_hashes(sessions) == source


def test_json_carries_the_kept_warnings_and_how_many_more_each_file_had(
    sessions: Path, tmp_path: Path
) -> None:
    flooded = session_files(sessions)[0]
    damaged = _flood(flooded, 500)
    result = run_calib("ingest", sessions, "--db", tmp_path / "calib.duckdb", "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert doc["warnings"] == [
        {"path": str(flooded), "line": n, "message": _message(flooded, n)} for n in damaged[:KEPT]
    ]
    assert doc["warnings_left_out"] == {str(flooded): 500 - KEPT}
    assert doc["errors"] == [] and doc["sessions"] == 4


def test_quiet_prints_no_warning_only_the_summary_count(sessions: Path, tmp_path: Path) -> None:
    _flood(session_files(sessions)[0], 50)
    result = run_calib("ingest", sessions, "--db", tmp_path / "calib.duckdb", "-q")
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "4 files: added 4 sessions, 59 calls, 194 parts; skipped 4 files that are not sessions; 50 warnings"
    ]


@pytest.mark.parametrize(
    ("tool", "layout"),
    [("gemini-cli", "gemini-jsonl"), ("claude-code", None), ("codex", None), ("llxprt", "llxprt-chats")],
)
def test_every_line_log_keeps_three_warnings_and_a_count(
    tool: str, layout: str | None, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_sample(tool, data, layout=layout, sessions=1, seed=4)
    (data / "truth.json").unlink()
    [log] = data.rglob("*.jsonl")
    _flood(log, 200)
    result = ingest([data], db=tmp_path / "calib.duckdb", workers=1)
    assert result.ok and result.sessions == 1
    assert len(result.warnings) == KEPT and all(w.path == str(log) for w in result.warnings)
    assert result.warnings_left_out == {str(log): 200 - KEPT}
    assert result.summary().endswith("; 200 warnings")


def _parse_peak(log: Path, importer: str) -> tuple[int, list[InputWarning]]:
    """Peak Python memory (bytes) of parsing one log, and the warnings its parse kept."""
    state = FileState(str(log), importer, log.stat().st_size, 0, "", [], None)
    tracemalloc.start()
    try:
        done = parse_task(Task(0, log, importer, state, None, state.size))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.error is None, done.error
    return peak, done.warnings


@pytest.mark.parametrize(
    ("tool", "layout"),
    [("gemini-cli", "gemini-jsonl"), ("claude-code", None), ("codex", None), ("llxprt", "llxprt-chats")],
)
def test_damaged_lines_cost_no_memory_of_their_own(tool: str, layout: str | None, tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_sample(tool, data, layout=layout, sessions=1, seed=4)
    (data / "truth.json").unlink()
    [source] = find_sources([data])[0]
    log = source.path
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    original = log.read_bytes()
    log.write_bytes(original)
    _flood(log, 10_000)
    small.write_bytes(log.read_bytes())
    log.write_bytes(original)
    _flood(log, 60_000)
    large.write_bytes(log.read_bytes())
    small_peak, kept = _parse_peak(small, source.importer.name)
    large_peak, _ = _parse_peak(large, source.importer.name)
    assert len(kept) == KEPT
    # Reading a file costs memory in proportion to its bytes (about 130 bytes a line of these here: the
    # line itself); a warning kept for every damaged line cost about 1 KB more per line.
    per_line = (large_peak - small_peak) / 50_000
    assert per_line < 300, f"{per_line:.0f} bytes of memory per damaged line"


def test_an_unfinished_last_line_is_warned_about_in_full_after_a_flood(
    sessions: Path, tmp_path: Path
) -> None:
    log = session_files(sessions)[0]
    damaged = _flood(log, 20)
    lines = log.read_bytes().split(b"\n")[:-1]
    log.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2])
    result = run_calib("ingest", sessions, "--db", tmp_path / "calib.duckdb", "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    unfinished = (
        f"the last line is unfinished (gemini-cli may still be writing it); left out ({log}:{len(lines)}); "
        "ingest again once it is complete to add it"
    )
    # a warning about the file as a whole is never one of the lines counted past the first few
    assert [w["message"] for w in doc["warnings"]] == [
        *(_message(log, n) for n in damaged[:KEPT]),
        unfinished,
    ]
    assert doc["warnings_left_out"] == {str(log): 20 - KEPT}
