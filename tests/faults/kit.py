"""What every fault test needs: the real CLI in a subprocess, hashes of files, and a store's row counts."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from calib.store.store import Store


def run_calib(
    *args: str | Path, cwd: Path | None = None, preexec: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m calib ARGS` in a fresh interpreter, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "calib", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        preexec_fn=preexec,
    )


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command printed on stderr (asserting it printed exactly one)."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def tree_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (or of `root` itself), by path: to show nothing changed."""
    if root.is_file():
        return {str(root): hashlib.sha256(root.read_bytes()).hexdigest()}
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def listing(folder: Path) -> list[str]:
    """Every entry under `folder`, relative: to show nothing was created beside a file."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def counts(db: Path) -> dict[str, int]:
    """Row counts of the store's main tables (read-only)."""
    with Store(db, read_only=True) as store:
        return store.counts()


def rows(db: Path) -> dict[str, Any]:
    """The stored rows that matter, in a stable order: to compare two stores for equality."""
    with Store(db, read_only=True) as store:
        return {
            "sessions": sorted(store.query("SELECT session_uid FROM sessions")["session_uid"].to_list()),
            "calls": sorted(
                json.dumps(r, default=str, sort_keys=True)
                for r in store.query("SELECT call_uid, seq, input, output FROM calls").to_dicts()
            ),
            "parts": sorted(
                json.dumps(r, sort_keys=True)
                for r in store.query("SELECT part_uid, seq, text FROM parts").to_dicts()
            ),
        }


def json_of(result: subprocess.CompletedProcess[str]) -> Any:
    """The one JSON document a `--json` command printed."""
    return json.loads(result.stdout)


def session_files(root: Path) -> list[Path]:
    """The session logs under `root`, in name order."""
    return sorted(root.rglob("session-*.jsonl"))


def rows_by_uid(db: Path) -> dict[str, dict[str, Any]]:
    """Each table's rows by uid, seq and prompt bounds left out (a message left out moves those after it)."""
    with Store(db, read_only=True) as store:
        return {
            "sessions": {r["session_uid"]: r for r in store.query("SELECT * FROM sessions").to_dicts()},
            "calls": {
                r["call_uid"]: r
                for r in store.query("SELECT * EXCLUDE (seq, prompt_start, prompt_end) FROM calls").to_dicts()
            },
            "parts": {r["part_uid"]: r for r in store.query("SELECT * EXCLUDE (seq) FROM parts").to_dicts()},
        }


def rows_without(
    clean: dict[str, dict[str, Any]], *, message: str | None = None, session: str | None = None
) -> dict[str, dict[str, Any]]:
    """`rows_by_uid` of a clean store without the rows of one message (and without the copies it made, if
    it is a Dexto summary: `<part uid>@<summary id>`), or without those of one session."""

    def kept(row: dict[str, Any], uid: str) -> bool:
        if session is not None and row["session_uid"] == session:
            return False
        return message is None or (row["message_id"] != message and not uid.endswith(f"@{message}"))

    return {
        "sessions": {u: r for u, r in clean["sessions"].items() if u != session},
        "calls": {u: r for u, r in clean["calls"].items() if kept(r, u)},
        "parts": {u: r for u, r in clean["parts"].items() if kept(r, u)},
    }


def assert_same_rows(stored: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    """Every row expected is stored, and nothing else (a session's `ended_at` may move with its messages)."""
    for table in ("calls", "parts"):
        assert stored[table].keys() == expected[table].keys(), table
        assert stored[table] == expected[table], table
    assert stored["sessions"].keys() == expected["sessions"].keys()


def ingest_read_only(data: Path, tmp_path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Ingest `data` into a new store, checking it succeeds and no source file is written: the `--json`
    document and the stored rows (`rows_by_uid`)."""
    source = tree_hashes(data)
    store = tmp_path / "calib.duckdb"
    result = run_calib("ingest", data, "--db", store, "--json")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert tree_hashes(data) == source  # read, never written
    return json_of(result), rows_by_uid(store)
