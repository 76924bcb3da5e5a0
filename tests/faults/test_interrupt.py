"""A running `calib ingest` killed (SIGTERM or SIGKILL): no worker process outlives it, the store stays
consistent, and the next run completes with the same rows as an ingest never interrupted."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faults.kit import rows, run_calib

from calib.synth import write_sample

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 40 MB of gemini-cli sessions: enough for ingest to parse in worker processes for a while."""
    root = tmp_path_factory.mktemp("kill")
    one = root / "one"
    write_sample("gemini-cli", one, layout="gemini-jsonl", sessions=40, seed=5)
    data = root / "data"
    for k in range(20):
        shutil.copytree(one / ".gemini", data / f"copy{k}" / ".gemini")
    return data


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killed_ingest_leaves_no_process_and_a_store_the_next_run_completes(
    sig: signal.Signals, corpus: Path, tmp_path: Path
) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: ingest parses inline, there are no workers to outlive it")
    db = tmp_path / "calib.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "calib", "ingest", str(corpus), "--db", str(db), "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None and not workers:
        workers = _children(proc.pid)
        time.sleep(0.005)
    if not workers:
        proc.kill()
        pytest.skip("ingest finished before its workers could be seen")
    time.sleep(0.2)
    proc.send_signal(sig)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for pid in left:  # do not leave them to the next test either
        os.kill(pid, signal.SIGKILL)
    assert left == [], "worker processes outlived the killed ingest"

    again = run_calib("ingest", corpus, "--db", db, "-q")
    assert again.returncode == 0, again.stderr
    clean = tmp_path / "clean.duckdb"
    assert run_calib("ingest", corpus, "--db", clean, "-q").returncode == 0
    assert rows(db) == rows(clean)
    spools = [n for n in os.listdir("/dev/shm") if n.startswith(f"calib-ingest-{proc.pid}-")]
    assert spools == []  # the killed run's RAM-backed spool was removed by the next one
