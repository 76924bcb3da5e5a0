"""A JSONL log with a cut-off last line (the agent is writing it) or a damaged line inside: the other
lines import, the line left out is a warning naming file:line, and the run succeeds. The same for
gemini-cli logs, Claude Code transcripts and Codex rollouts."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from faults.kit import counts, json_of, rows, run_calib, session_files, tree_hashes

from calib.store.store import Store
from calib.synth import write_sample


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


# -- the same rule for Claude Code transcripts and Codex rollouts ------------------------------------

AGENTS = ("claude-code", "codex")


@pytest.fixture(scope="module", params=AGENTS)
def agent_source(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """(agent, three sessions of it written once): copy them before changing anything."""
    agent = str(request.param)
    out = tmp_path_factory.mktemp("faults") / agent
    write_sample(agent, out, sessions=3, seed=5)
    (out / "truth.json").unlink()
    return agent, out


@pytest.fixture
def agent_logs(agent_source: tuple[str, Path], tmp_path: Path) -> tuple[str, Path]:
    """(agent, a private copy of its sessions)."""
    agent, source = agent_source
    target = tmp_path / "data"
    shutil.copytree(source, target)
    return agent, target


def _logs(root: Path) -> list[Path]:
    """The JSONL logs under `root`, largest first (the one with the most lines to cut)."""
    return sorted(root.rglob("*.jsonl"), key=lambda p: (-p.stat().st_size, str(p)))


def _gives_usage(agent: str, line: bytes) -> bool:
    """True for a line that records a call's token usage (Claude Code: an assistant line with usage;
    Codex: a `token_count` event with its counts)."""
    record = orjson.loads(line)
    if agent == "claude-code":
        message = record.get("message")
        return record.get("type") == "assistant" and isinstance(message, dict) and bool(message.get("usage"))
    payload = record.get("payload")
    return (
        record.get("type") == "event_msg"
        and isinstance(payload, dict)
        and payload.get("type") == "token_count"
        and payload.get("info") is not None
    )


def _tool_output(agent: str, line: bytes) -> bool:
    """True for a line that adds only a tool's output (Claude Code: a user line; Codex: a
    `function_call_output` item): finishing it adds rows after the stored ones."""
    record = orjson.loads(line)
    if agent == "claude-code":
        return record.get("type") == "user"
    payload = record.get("payload")
    return isinstance(payload, dict) and payload.get("type") == "function_call_output"


def _totals(db: Path) -> tuple[int, ...]:
    """How many calls the store holds and the sums of their token counts."""
    with Store(db, read_only=True) as store:
        frame = store.query(
            "SELECT count(*) AS n, sum(input) AS i, sum(output) AS o, sum(reasoning) AS r, "
            "sum(cache_read) AS cr, sum(cache_write) AS cw FROM calls"
        )
    return tuple(int(v or 0) for v in frame.row(0))


@pytest.mark.parametrize("kind", ["usage", "tool output"])
def test_a_cut_off_line_of_any_agent_is_left_out_then_added_once_complete(
    agent_logs: tuple[str, Path], tmp_path: Path, kind: str
) -> None:
    agent, data = agent_logs
    log = _logs(data)[0]
    lines = log.read_bytes().split(b"\n")[:-1]
    # The agent is writing line k + 1 in the middle of the session: one that records a call's usage
    # (finishing it may change a call already stored, so the log may be read whole again), or one
    # that only adds a tool's output (finishing it only adds rows: the log is read on from line k).
    wanted = _gives_usage if kind == "usage" else _tool_output
    k = next(i for i in range(len(lines) // 2, len(lines)) if wanted(agent, lines[i]))
    before_line = tmp_path / "before-line"
    shutil.copytree(data, before_line)
    (before_line / log.relative_to(data)).write_bytes(b"\n".join(lines[:k]) + b"\n")
    partial = _cold(before_line, tmp_path, "partial")

    db = tmp_path / "calib.duckdb"
    log.write_bytes(b"\n".join(lines[:k]) + b"\n" + lines[k][: len(lines[k]) // 2])
    source = tree_hashes(data)
    result = run_calib("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    message = (
        f"the last line is unfinished ({agent} may still be writing it); left out ({log}:{k + 1}); "
        "ingest again once it is complete to add it"
    )
    doc = json_of(result)
    assert doc["warnings"] == [{"path": str(log), "line": k + 1, "message": message}]
    assert doc["errors"] == []
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert tree_hashes(data) == source  # read, never written
    assert rows(db) == rows(partial)  # every complete line is stored
    assert _totals(db) == _totals(partial)

    log.write_bytes(b"\n".join(lines[: k + 1]) + b"\n")  # the agent finishes the line
    source = tree_hashes(data)
    result = run_calib("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert doc["warnings"] == [] and doc["errors"] == [] and doc["read"] == 1
    assert tree_hashes(data) == source
    whole = _cold(data, tmp_path, "complete")
    assert rows(db) == rows(whole)  # nothing lost or duplicated
    assert _totals(db) == _totals(whole)
    if kind == "usage":
        assert _totals(db) != _totals(partial)  # the finished line's usage was added
    else:
        assert doc["resumed"] == 1 and rows(db) != rows(partial)  # its output was appended


def test_a_damaged_line_of_any_agent_skips_that_line_not_the_session(
    agent_logs: tuple[str, Path], tmp_path: Path
) -> None:
    agent, data = agent_logs
    clean = _cold(data, tmp_path, "clean")
    log = _logs(data)[0]
    lines = log.read_bytes().split(b"\n")
    # A line in the middle that records no usage is damaged: the session keeps every call.
    index = next(i for i in range(len(lines) // 2, len(lines)) if not _gives_usage(agent, lines[i]))
    garbage = lines[index][: len(lines[index]) // 2]
    lines[index] = garbage
    log.write_bytes(b"\n".join(lines))
    try:
        orjson.loads(garbage)
    except orjson.JSONDecodeError as exc:
        reason = exc.msg
    source = tree_hashes(data)
    db = tmp_path / "calib.duckdb"
    result = run_calib("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    line = index + 1
    message = (
        f"this line is not valid JSON ({reason}); left out, the rest of the session was imported "
        f"({log}:{line})"
    )
    assert json_of(result)["warnings"] == [{"path": str(log), "line": line, "message": message}]
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert counts(db)["sessions"] == counts(clean)["sessions"]  # the damaged session is stored too
    assert _totals(db)[0] == _totals(clean)[0]  # and all its calls
    assert tree_hashes(data) == source
    again = run_calib("ingest", data, "--db", db, "--json")
    assert again.returncode == 0 and json_of(again)["sessions"] == 0 and json_of(again)["warnings"] == []
