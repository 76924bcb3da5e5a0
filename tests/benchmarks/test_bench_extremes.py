"""The extremes benchmark's inputs: one session repeated to a size, a huge tool output, a NUL tail."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.bench_extremes import MB, build_big_tool_output, build_long_session, build_nul_tail, markdown

from calib.store.store import Store
from calib.synth import write_sample


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One synthetic Claude Code transcript (a stand-in for the real one the benchmark repeats)."""
    out = tmp_path_factory.mktemp("claude")
    write_sample("claude-code", out, sessions=1, seed=3)
    (log,) = out.rglob("*.jsonl")
    return log


def _ingest(folder: Path, db: Path) -> tuple[int, int, int]:
    import calib

    result = calib.ingest_sessions([folder], db=db, workers=1)
    assert result.ok and result.warnings == [], result
    with Store(db, read_only=True) as store:
        distinct = store.query("SELECT count(DISTINCT call_uid) AS n FROM calls")["n"][0]
    return result.sessions, result.calls, int(distinct)


def test_a_log_repeated_to_a_size_stays_one_session_of_distinct_calls(
    transcript: Path, tmp_path: Path
) -> None:
    single = _ingest(transcript.parent, tmp_path / "one.duckdb")
    target = tmp_path / "long" / "projects" / "-long" / transcript.name
    built = build_long_session(transcript, target, 1)
    assert target.stat().st_size == built["bytes"] >= MB
    sessions, calls, distinct = _ingest(target.parent, tmp_path / "long.duckdb")
    assert sessions == 1 and calls == single[1] * built["copies"] == distinct


def test_the_big_tool_output_and_the_nul_tail(transcript: Path, tmp_path: Path) -> None:
    big = tmp_path / "big" / "projects" / "-big" / transcript.name
    build_big_tool_output(transcript, big, 2)
    assert big.stat().st_size > 2 * MB
    assert _ingest(big.parent, tmp_path / "big.duckdb")[0] == 1
    tail = tmp_path / "tail" / transcript.name
    built = build_nul_tail(transcript, tail, 64 * MB)
    assert tail.stat().st_size == built["bytes"] == transcript.stat().st_size + 64 * MB
    with tail.open("rb") as fh:
        fh.seek(built["log_bytes"])
        assert fh.read(16) == b"\0" * 16


def test_the_table_escapes_the_messages() -> None:
    row = {"probe": "p", "input": "i", "exit": 1, "s": 1.5, "max_rss_mib": 10, "tree_peak_mib": 12}
    table = markdown([{**row, "message": "Error: a | b"}])
    assert table.splitlines()[-1] == "| p | i | 1 | 1.5 | 10 | 12 | Error: a \\| b |"
