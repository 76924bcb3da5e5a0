"""The store failing, or named wrongly: each says what is really wrong, on one line. A full disk says so,
a damaged file is called damaged (never "locked"), an empty file becomes a new store, and `--db -` or a
URL is a usage error that creates nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from faults.kit import counts, error_line, listing, rows, run_calib, tree_hashes
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


@pytest.mark.parametrize("command", ["ingest", "fit"])
def test_an_empty_file_becomes_a_new_store(command: str, sessions: Path, tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    db.touch()
    extra = ("--out", tmp_path / "calibration.json") if command == "fit" else ()
    result = run_calib(command, sessions, "--db", db, "-q", *extra)
    assert result.returncode == 0, result.stderr
    assert counts(db)["sessions"] == 4


def test_an_empty_file_kept_through_a_link_stays_the_users_file(sessions: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.duckdb"
    target.touch()
    os.chmod(target, 0o640)
    link = tmp_path / "calib.duckdb"
    link.symlink_to(target)
    result = run_calib("ingest", sessions, "--db", link, "-q")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and (target.stat().st_mode & 0o777) == 0o640
    assert counts(target)["sessions"] == 4


@pytest.mark.parametrize("command", [("score", "-e", "chars4"), ("replay",), ("export", "--parquet", "out")])
def test_a_reading_command_on_an_empty_file_finds_no_store(command: tuple[str, ...], tmp_path: Path) -> None:
    db = tmp_path / "calib.duckdb"
    db.touch()
    result = run_calib(*command, "--db", db, cwd=tmp_path)
    assert result.returncode == 2
    assert error_line(result) == f"Error: no calib store in {db}: the file is empty; run `calib ingest` first"
    assert db.stat().st_size == 0 and listing(tmp_path) == ["calib.duckdb"]


_NOT_FILES = {
    "-": "standard input or output (-)",
    "http://example.com/calib.duckdb": "a URL (http:)",
    "https://example.com/calib.duckdb": "a URL (https:)",
    "s3://bucket/calib.duckdb": "a URL (s3:)",
    "gs://bucket/calib.duckdb": "a URL (gs:)",
    "hf://datasets/someone/calib.duckdb": "a URL (hf:)",
    "md:my_db": "a URL (md:)",
    "motherduck:my_db": "a URL (motherduck:)",
    ":memory:": "an in-memory database (:memory:)",
}


def _not_a_file(db: str) -> str:
    return (
        f"Error: the store must be a local file, not {_NOT_FILES[db]}; pass --db or CALIB_DB a file path, "
        "such as ./calib.duckdb"
    )


@pytest.mark.parametrize("db", list(_NOT_FILES))
def test_a_db_that_is_no_file_is_a_usage_error(db: str, sessions: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for args in (("ingest", sessions, "--db", db), ("score", "-e", "chars4", "--db", db)):
        result = run_calib(*args, cwd=work)
        assert result.returncode == 2, result.stderr
        assert error_line(result) == _not_a_file(db)
    assert listing(work) == []  # no store named `-`, no `http:` folder, no manifest


@pytest.mark.parametrize(
    "command",
    [("fit", "--out", "c.json"), ("report", "--no-figures"), ("replay",), ("export", "--parquet", "out")],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("db", ["-", "s3://bucket/calib.duckdb"])
def test_every_command_refuses_a_db_that_is_no_file(
    db: str, command: tuple[str, ...], tmp_path: Path
) -> None:
    result = run_calib(*command, "--db", db, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert error_line(result) == _not_a_file(db)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("db", ["-", "https://example.com/calib.duckdb"])
def test_calib_db_that_is_no_file_is_a_usage_error(db: str, sessions: Path, tmp_path: Path) -> None:
    env = {**os.environ, "CALIB_DB": db}
    work = tmp_path / "work"
    work.mkdir()
    for args in (("ingest", sessions), ("score", "-e", "chars4")):
        result = subprocess.run(
            [sys.executable, "-m", "calib", *map(str, args)],
            capture_output=True, text=True, cwd=work, env=env, timeout=180,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert error_line(result) == _not_a_file(db)
    assert listing(work) == []


def test_open_store_refuses_a_path_that_is_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from calib.core.errors import UsageError
    from calib.store.store import open_store

    monkeypatch.chdir(tmp_path)
    for db in ("-", "s3://bucket/calib.duckdb", ":memory:"):
        for read_only in (False, True):
            with pytest.raises(UsageError) as info:
                open_store(db, read_only=read_only)
            assert f"Error: {info.value}" == _not_a_file(db)
    monkeypatch.setenv("CALIB_DB", "md:my_db")
    with pytest.raises(UsageError) as info:
        open_store()
    assert f"Error: {info.value}" == _not_a_file("md:my_db")
    assert listing(tmp_path) == []
