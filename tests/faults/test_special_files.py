"""What is not a regular file or a folder (a FIFO, a socket, a device) is never opened: found while walking
it is skipped with a warning, named on the command line it is an error, and the rest imports. Each run is
timed: opening a FIFO would wait for a writer forever."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path

import pytest
from faults.kit import counts, error_line, json_of, rows, session_files

from calib.synth import write_sample

PROMPT = 60  # seconds: an ingest of these few files takes one or two; a hang never ends
HINT = "name a session file or a folder; the other paths were still imported"


def run_promptly(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m calib ARGS`, failing the test if it has not returned within `PROMPT` seconds."""
    start = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "calib", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=PROMPT,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"calib {' '.join(map(str, args))} hung (no answer in {PROMPT} s)")
    assert time.monotonic() - start < PROMPT
    return result


@pytest.fixture
def special(
    request: pytest.FixtureRequest, sessions: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A FIFO or a socket named like a gemini-cli session log, beside the real ones."""
    chats = session_files(sessions)[0].parent
    path = chats / "session-2026-03-09T00-00-deadbeef.jsonl"
    if request.param == "fifo":
        os.mkfifo(path)
        yield path
        return
    monkeypatch.chdir(chats)  # a relative name: a socket's path may hold 108 bytes at most
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(path.name)
        yield path


KINDS = {"fifo": "a FIFO", "socket": "a socket"}


@pytest.mark.parametrize("special", ["fifo", "socket"], indirect=True)
def test_a_fifo_or_socket_found_while_walking_is_skipped_with_a_warning(
    special: Path, sessions: Path, tmp_path: Path
) -> None:
    kind = KINDS["fifo" if special.is_fifo() else "socket"]
    db = tmp_path / "calib.duckdb"
    source = {p: sha256(p.read_bytes()).hexdigest() for p in sessions.rglob("*") if p.is_file()}
    result = run_promptly("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    message = f"{kind}, not a regular file; skipped ({special})"
    assert doc["warnings"] == [{"path": str(special), "line": None, "message": message}]
    assert str(special) in doc["skipped"]
    assert (doc["sessions"], doc["errors"]) == (4, [])
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert {p: sha256(p.read_bytes()).hexdigest() for p in sessions.rglob("*") if p.is_file()} == source
    again = run_promptly("ingest", sessions, "--db", db, "-q")  # the quick path, with nothing changed
    assert again.returncode == 0, again.stderr
    assert counts(db)["sessions"] == 4


def test_a_fifo_named_on_the_command_line_is_an_error_and_the_rest_imports(
    sessions: Path, tmp_path: Path
) -> None:
    fifo = tmp_path / "session-2026-03-09T00-00-deadbeef.jsonl"
    os.mkfifo(fifo)
    db = tmp_path / "calib.duckdb"
    for forced in ([], ["--format", "gemini-cli"]):
        result = run_promptly("ingest", fifo, sessions, "--db", db, *forced)
        assert result.returncode == 1
        assert error_line(result) == f"Error: a FIFO, not a regular file ({fifo}); {HINT}"
        assert counts(db)["sessions"] == 4


def test_a_device_named_on_the_command_line_is_never_read(tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    result = run_promptly("ingest", "--format", "gemini-cli", "/dev/zero", "--db", db)
    assert result.returncode == 1
    assert error_line(result) == f"Error: a character device, not a regular file (/dev/zero); {HINT}"


def test_a_session_file_replaced_by_a_fifo_after_an_ingest_is_not_opened(
    sessions: Path, tmp_path: Path
) -> None:
    log = session_files(sessions)[0]
    db = tmp_path / "calib.duckdb"
    assert run_promptly("ingest", log, "--db", db, "-q").returncode == 0
    stored = rows(db)
    log.unlink()
    os.mkfifo(log)
    result = run_promptly("ingest", log, "--db", db)
    assert result.returncode == 1
    assert error_line(result) == f"Error: a FIFO, not a regular file ({log}); {HINT}"
    assert rows(db) == stored  # what was stored stays


def test_a_source_that_became_a_fifo_before_it_was_parsed_is_an_error(tmp_path: Path) -> None:
    # Found as a file, then replaced by a FIFO before a worker opened it.
    fifo = tmp_path / "session-2026-03-09T00-00-deadbeef.jsonl"
    os.mkfifo(fifo)
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from calib.ingest.workers import Task, parse_task\n"
        "from calib.store.writes import FileState\n"
        "path = Path(sys.argv[1])\n"
        "state = FileState(str(path), 'gemini-cli', 10, 0, 'x', [], None)\n"
        "done = parse_task(Task(0, path, 'gemini-cli', state, None, 10))\n"
        "print(done.error)\n"
    )
    try:
        result = subprocess.run(
            [sys.executable, "-c", probe, str(fifo)], capture_output=True, text=True, timeout=PROMPT
        )
    except subprocess.TimeoutExpired:
        pytest.fail("parsing a FIFO hung")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"a FIFO, not a regular file ({fifo}); {HINT}"]


def test_a_fifo_inside_a_folder_read_as_a_whole_is_skipped_with_a_warning(tmp_path: Path) -> None:
    data = tmp_path / "opencode"
    write_sample("opencode", data, layout="opencode-json-tree", sessions=2, seed=5)
    (data / "truth.json").unlink()
    expected = tmp_path / "expected.duckdb"
    assert run_promptly("ingest", data, "--db", expected, "-q").returncode == 0
    storage = data / ".local" / "share" / "opencode" / "storage"
    project = next(p for p in (storage / "session").iterdir() if p.is_dir())
    fifos = [project / "ses_fifo.json", next((storage / "part").iterdir()) / "prt_fifo.json"]
    for fifo in fifos:
        os.mkfifo(fifo)
    db = tmp_path / "calib.duckdb"
    result = run_promptly("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert doc["errors"] == []
    assert sorted(doc["warnings"], key=lambda w: w["path"]) == sorted(
        (
            {"path": str(f), "line": None, "message": f"a FIFO, not a regular file; skipped ({f})"}
            for f in fifos
        ),
        key=lambda w: w["path"],
    )
    assert rows(db) == rows(expected)  # every session, call and part; nothing of the FIFOs


def test_a_fifo_as_a_gemini_project_marker_is_not_opened(sessions: Path, tmp_path: Path) -> None:
    marker = session_files(sessions)[0].parent.parent / ".project_root"
    marker.unlink()
    os.mkfifo(marker)
    db = tmp_path / "calib.duckdb"
    result = run_promptly("ingest", sessions, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert doc["sessions"] == 4
    assert [w["message"] for w in doc["warnings"]] == [f"a FIFO, not a regular file; skipped ({marker})"]


def test_a_fifo_beside_a_session_log_is_never_read_by_its_importer(tmp_path: Path) -> None:
    # Claude Code reads a sub-agent's `agent-<id>.meta.json` beside its transcript.
    data = tmp_path / "claude"
    write_sample("claude-code", data, sessions=1, seed=2)
    (data / "truth.json").unlink()
    [main] = data.rglob("*.jsonl")
    subagents = main.parent / main.stem / "subagents"
    subagents.mkdir(parents=True)
    shutil.copy(main, subagents / "agent-a1b2c3.jsonl")
    expected = tmp_path / "expected.duckdb"
    assert run_promptly("ingest", data, "--db", expected, "-q").returncode == 0
    meta = subagents / "agent-a1b2c3.meta.json"
    os.mkfifo(meta)
    db = tmp_path / "calib.duckdb"
    result = run_promptly("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    doc = json_of(result)
    assert [w["message"] for w in doc["warnings"]] == [f"a FIFO, not a regular file; skipped ({meta})"]
    assert rows(db) == rows(expected)
