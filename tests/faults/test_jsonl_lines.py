"""A gemini-cli JSONL log with a cut-off last line (the agent is writing it) or a damaged line inside:
the other lines import, the line left out is a warning naming file:line, and the run succeeds."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from faults.kit import counts, json_of, rows, run_calib, session_files, tree_hashes


def _cold(data: Path, tmp_path: Path, name: str) -> Path:
    """A new store of `data`, ingested in one go: what the rows should be."""
    db = tmp_path / f"{name}.duckdb"
    assert run_calib("ingest", data, "--db", db, "-q").returncode == 0
    return db


def test_a_cut_off_last_line_is_left_out_then_added_once_complete(sessions: Path, tmp_path: Path) -> None:
    log = session_files(sessions)[0]
    complete = log.read_bytes()
    lines = complete.split(b"\n")[:-1]
    n = len(lines)
    # The reference: the same data with that last line not yet begun.
    before_line = tmp_path / "before-line"
    shutil.copytree(sessions, before_line)
    session_files(before_line)[0].write_bytes(b"\n".join(lines[:-1]) + b"\n")
    expected_partial = rows(_cold(before_line, tmp_path, "partial"))

    db = tmp_path / "calib.duckdb"
    log.write_bytes(b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) // 2])
    source = tree_hashes(sessions)
    result = run_calib("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    message = (
        f"the last line is unfinished (gemini-cli may still be writing it); left out ({log}:{n}); "
        "ingest again once it is complete to add it"
    )
    assert json_of(result)["warnings"] == [{"path": str(log), "line": n, "message": message}]
    assert json_of(result)["errors"] == []
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert tree_hashes(sessions) == source  # read, never written
    assert rows(db) == expected_partial  # every complete line of the session is stored

    log.write_bytes(complete)  # gemini-cli finishes the line
    result = run_calib("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert doc["warnings"] == [] and doc["resumed"] == 1 and doc["read"] == 1
    assert rows(db) == rows(_cold(sessions, tmp_path, "complete"))  # nothing lost or duplicated


def test_a_damaged_line_inside_a_log_skips_that_line_not_the_session(sessions: Path, tmp_path: Path) -> None:
    log = session_files(sessions)[1]
    lines = log.read_bytes().split(b"\n")
    garbage = b'{"id": "m-7", "type": "gemini", "content": '
    lines[3] = garbage
    log.write_bytes(b"\n".join(lines))
    try:
        orjson.loads(garbage)
    except orjson.JSONDecodeError as exc:
        reason = exc.msg
    source = tree_hashes(sessions)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    message = (
        f"this line is not valid JSON ({reason}); left out, the rest of the session was imported ({log}:4)"
    )
    assert json_of(result)["warnings"] == [{"path": str(log), "line": 4, "message": message}]
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert counts(db)["sessions"] == 4  # the damaged session is stored too
    assert tree_hashes(sessions) == source
    again = run_calib("ingest", sessions, "--db", db, "--json")
    assert again.returncode == 0 and json_of(again)["sessions"] == 0
    assert counts(db)["sessions"] == 4


def test_the_summary_line_counts_warnings_and_the_run_succeeds(sessions: Path, tmp_path: Path) -> None:
    log = session_files(sessions)[2]
    log.write_bytes(log.read_bytes() + b'{"id": "half')
    result = run_calib("ingest", sessions, "--db", tmp_path / "calib.duckdb")
    assert result.returncode == 0
    assert result.stdout.rstrip().endswith("; 1 warning")
    assert result.stderr.startswith("Warning: the last line is unfinished")
