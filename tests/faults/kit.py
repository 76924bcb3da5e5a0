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
