"""The store failing: each failure says what is really wrong, on one line. A full disk says so, and a
damaged file is called damaged (never "locked")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from faults.kit import error_line, rows, run_calib, tree_hashes
from faults.mounts import need_mounts, run_mounted, tmpfs

from calib.synth import write_sample

# A DuckDB file: three 4 KiB headers, then blocks of 256 KiB, each led by its 8-byte checksum.
_HEADERS = 3 * 4096
_BLOCK = 256 * 1024
_RESTORE = "restore it from a backup, or ingest the sessions again into a new --db"


def _damage(db: Path, offset: int) -> None:
    with db.open("r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xab" * 64)


def _text_block(db: Path) -> int:
    """Where the block holding the parts' texts starts in the file."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT min(block_id) FROM pragma_storage_info('parts') WHERE column_name = 'text' AND block_id >= 0"
        ).fetchone()
    finally:
        con.close()
    assert row is not None and row[0] is not None
    return _HEADERS + int(row[0]) * _BLOCK


@pytest.mark.parametrize(("where", "block"), [("header", 0), ("first block", _HEADERS)])
def test_a_damaged_store_is_called_damaged_not_locked(
    where: str, block: int, store_copy: Path, sessions: Path
) -> None:
    _damage(store_copy, block + 100)
    before = tree_hashes(store_copy)
    for args in (("score", "-e", "chars4"), ("ingest", sessions)):
        result = run_calib(*args, "--db", store_copy)
        assert result.returncode == 1, result.stderr
        assert error_line(result) == (
            f"Error: the store is damaged: the block at byte {block} fails its checksum ({store_copy}); {_RESTORE}"
        )
    assert tree_hashes(store_copy) == before


def test_a_damaged_block_met_while_reading_is_one_line(store_copy: Path) -> None:
    block = _text_block(store_copy)
    _damage(store_copy, block + 100)
    result = run_calib("score", "-e", "chars4", "--db", store_copy)
    assert result.returncode == 1, result.stderr
    assert error_line(result) == (
        f"Error: the store is damaged: the block at byte {block} fails its checksum ({store_copy}); {_RESTORE}"
    )


def test_the_lock_of_another_process_is_named_with_its_pid(store_copy: Path, sessions: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb,sys,time; c=duckdb.connect(sys.argv[1]); print('ok', flush=True); "
         "time.sleep(60)", str(store_copy)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        for args in (("ingest", sessions), ("score", "-e", "chars4")):
            result = run_calib(*args, "--db", store_copy)
            assert result.returncode == 1
            assert error_line(result) == (
                f"Error: the store is locked by process {holder.pid} ({store_copy}); close the other calib "
                "or DuckDB session, or use --db to pick another store"
            )
    finally:
        holder.kill()
        holder.wait()


def test_a_full_disk_says_no_space_left(sample_store: Path, tmp_path: Path) -> None:
    need_mounts()
    more = tmp_path / "more"
    write_sample("gemini-cli", more, layout="gemini-jsonl", sessions=30, seed=5)
    disk, saved = tmp_path / "disk", tmp_path / "saved"
    disk.mkdir()
    saved.mkdir()
    db = disk / "calib.duckdb"
    stored = rows(sample_store)
    # the store as it was, on a disk with room for less than the new sessions; after the ingest its files
    # are copied out, to be read once the disk is gone
    steps = [*tmpfs(disk, "3m"), f"cp {sample_store} {db}"]
    after = f"cp {disk}/calib.duckdb* {saved}/"
    result = run_mounted(steps, "ingest", more, "--db", db, "-q", after=after)
    assert result.returncode == 1, result.stderr
    line = error_line(result)
    assert line in (
        f"Error: No space left on device ({db}); free space on that disk, or pass --db a store on another",
        f"Error: No space left on device ({db}.wal); free space on that disk, or pass --db a store on another",
    )
    kept = rows(saved / "calib.duckdb")  # nothing stored before is lost
    for table, keys in stored.items():
        assert set(keys) <= set(kept[table])


def test_a_new_store_on_a_full_disk_says_no_space_left(sessions: Path, tmp_path: Path) -> None:
    need_mounts()
    disk = tmp_path / "disk"
    disk.mkdir()
    db = disk / "calib.duckdb"
    result = run_mounted(tmpfs(disk, "512k"), "ingest", sessions, "--db", db, "-q")
    assert result.returncode == 1, result.stderr
    assert error_line(result) in (
        f"Error: No space left on device ({db}); free space on that disk, or pass --db a store on another",
        f"Error: No space left on device ({db}.wal); free space on that disk, or pass --db a store on another",
    )
