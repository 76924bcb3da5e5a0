"""Reading without writing, and side by side: `score`, `report`, `replay` and `export --parquet` work on a
store that cannot be written (a read-only mount) and beside other readers of it, with the output they give
alone; the counts they make are kept in the store when it can be written, never twice; a store opened
read-only through the API can be scored; an older store is upgraded by a reading command where it can be."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from faults.kit import error_line, listing, rows, run_calib, tree_hashes
from faults.mounts import need_mounts, read_only, run_mounted

import calib
from calib.scoring.score import score_store
from calib.store.store import Store, migrations, open_store

READERS: dict[str, tuple[str, ...]] = {
    "score": ("score", "-e", "chars4", "-e", "charclass", "--json"),
    "report": ("report", "-e", "chars4", "--no-figures", "--json", "-q"),
    "replay": ("replay", "-e", "chars4", "--json"),
    "export": ("export", "--parquet", "--json", "-q"),
}


def _args(name: str, out: Path) -> list[str | Path]:
    """The command line of the reader `name`, writing what it writes (a report, an export) under `out`."""
    args: list[str | Path] = list(READERS[name])
    if name == "report":
        args += ["--out", out / "report"]
    if name == "export":
        args.insert(2, out / "export")
    return args


def _output(name: str, result: subprocess.CompletedProcess[str]) -> Any:
    """What a reader computed, without the paths it was told to write to."""
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    if name == "report":
        return document["summary"]
    if name == "export":
        return {table: spec["rows"] for table, spec in document["tables"].items()}
    return document


@pytest.fixture(scope="module")
def alone(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """The output of a reader on a writable copy of the store that nothing else has open (made once)."""
    made: dict[str, Any] = {}

    def output(name: str) -> Any:
        if name not in made:
            db = tmp_path_factory.mktemp(f"alone-{name}") / "calib.duckdb"
            shutil.copy(sample_store, db)
            made[name] = _output(name, run_calib(*_args(name, db.parent), "--db", db))
        return made[name]

    return output


def _duplicated_counts(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT count(*) FROM (SELECT source, text_hash FROM text_counts GROUP BY ALL HAVING count(*) > 1)"
        ).fetchone()
    finally:
        con.close()
    return int(row[0]) if row else -1


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_works_on_a_read_only_mount(
    name: str, alone: Callable[[str], Any], store_copy: Path, tmp_path: Path
) -> None:
    need_mounts()
    folder = store_copy.parent
    before, entries = tree_hashes(folder), listing(folder)
    out = tmp_path / "out"
    out.mkdir()
    result = run_mounted(read_only(folder), *_args(name, out), "--db", store_copy)
    assert result.stderr == ""
    assert _output(name, result) == alone(name)
    assert tree_hashes(folder) == before and listing(folder) == entries


@pytest.mark.parametrize("name", list(READERS))
def test_a_reader_works_beside_another_reader(
    name: str, alone: Callable[[str], Any], store_copy: Path, tmp_path: Path
) -> None:
    other = duckdb.connect(str(store_copy), read_only=True)  # a notebook, a DuckDB shell, another calib
    try:
        out = tmp_path / "out"
        out.mkdir()
        result = run_calib(*_args(name, out), "--db", store_copy)
    finally:
        other.close()
    assert result.stderr == ""
    assert _output(name, result) == alone(name)


def test_readers_at_once_give_what_each_gives_alone(
    alone: Callable[[str], Any], sample_store: Path, store_copy: Path, tmp_path: Path
) -> None:
    names = ["score", "score", "report", "replay", "score"]
    outs = [tmp_path / f"out{i}" for i in range(len(names))]
    running = []
    for name, out in zip(names, outs, strict=True):
        out.mkdir()
        command = [sys.executable, "-m", "calib", *map(str, _args(name, out)), "--db", str(store_copy)]
        running.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for process in running:
        stdout, stderr = process.communicate(timeout=180)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    assert [r.stderr for r in results] == [""] * len(names)
    for name, result in zip(names, results, strict=True):
        assert _output(name, result) == alone(name)
    assert _duplicated_counts(store_copy) == 0  # each kept its counts, or left them to another, never twice
    assert rows(store_copy) == rows(sample_store)


def test_a_reader_keeps_its_counts_in_a_store_it_can_write(store_copy: Path) -> None:
    result = run_calib("score", "-e", "chars4", "--db", store_copy)
    assert result.returncode == 0, result.stderr
    con = duckdb.connect(str(store_copy), read_only=True)
    try:
        counted = con.execute(
            "SELECT count(DISTINCT text_hash) FROM text_counts WHERE source = 'chars4'"
        ).fetchone()
        texts = con.execute("SELECT count(DISTINCT text_hash) FROM parts").fetchone()
        assert counted == texts
    finally:
        con.close()
    again = run_calib("score", "-e", "chars4", "--db", store_copy)
    assert again.stdout == result.stdout
    assert _duplicated_counts(store_copy) == 0


def test_a_store_opened_read_only_can_be_scored(store_copy: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin.duckdb"
    shutil.copy(store_copy, twin)
    with open_store(twin) as store:
        expected = calib.score_calls(store, ["chars4", "charclass"])
    before = tree_hashes(store_copy.parent)
    with open_store(store_copy, read_only=True) as store:
        scored = calib.score_calls(store, ["chars4", "charclass"])
        again = calib.score_calls(store, ["chars4"])  # the counts made above are read back
        kept = store.query("SELECT count(*) AS n FROM part_estimates WHERE source = 'chars4'")["n"][0]
        parts = store.counts()["parts"]
    assert scored.equals(expected)
    assert again.equals(expected.filter(expected["estimator"] == "chars4"))
    assert kept == parts  # every part has its count, though none could be written
    assert tree_hashes(store_copy.parent) == before  # read-only means nothing is written, even at close


def _texts(db: Path) -> int:
    """The distinct texts of the store's parts."""
    with Store(db, read_only=True) as store:
        return int(store.query("SELECT count(DISTINCT text_hash) AS n FROM parts")["n"][0])


def test_a_reader_in_a_process_that_has_the_store_open(store_copy: Path) -> None:
    texts = _texts(store_copy)
    with open_store(store_copy) as held:  # a notebook's store, open read-write: the reader shares it
        scored = score_store(store_copy, ["chars4"], overall=True)
        kept = held.query("SELECT count(*) AS n FROM text_counts WHERE source = 'chars4'")["n"][0]
        frame = calib.score_calls(held, ["chars4"])
    assert kept == texts  # the reader's counts went into the store
    with open_store(store_copy, read_only=True) as held:  # open read-only: the reader reads beside it
        assert score_store(store_copy, ["chars4"], overall=True).equals(scored)
        assert calib.score_calls(held, ["chars4"]).equals(frame)


def _older_store(source: Path, target: Path) -> int:
    """A copy of the store at `source` as the calib before the latest migration wrote it; that migration."""
    known = migrations()
    latest = known[-1][0]
    con = duckdb.connect(str(target))
    try:
        con.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMP NOT NULL)"
        )
        for version, name, sql in known[:-1]:
            con.execute(sql)
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
        con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
        tables = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'src'"
            ).fetchall()
        ]
        ours = {
            r[0]
            for r in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
        }
        for table in tables:
            if table in ours and table != "schema_migrations":
                columns = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
                theirs = [r[0] for r in con.execute(f"DESCRIBE src.{table}").fetchall()]
                shared = ", ".join(c for c in theirs if c in columns)
                con.execute(f"INSERT INTO {table} ({shared}) SELECT {shared} FROM src.{table}")
    finally:
        con.close()
    return latest


def test_a_reader_upgrades_an_older_store(
    alone: Callable[[str], Any], sample_store: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old" / "calib.duckdb"
    old.parent.mkdir()
    latest = _older_store(sample_store, old)
    result = run_calib(*_args("score", tmp_path), "--db", old)
    assert _output("score", result) == alone("score")
    with Store(old, read_only=True) as store:
        assert latest in store.applied_migrations()
    assert rows(old) == rows(sample_store)


def test_an_older_store_on_a_read_only_mount_is_one_line(sample_store: Path, tmp_path: Path) -> None:
    need_mounts()
    old = tmp_path / "old" / "calib.duckdb"
    old.parent.mkdir()
    latest = _older_store(sample_store, old)
    before = tree_hashes(old.parent)
    result = run_mounted(read_only(old.parent), "score", "-e", "chars4", "--db", old)
    assert result.returncode == 1
    assert error_line(result) == (
        f"Error: the store was written by an older calib and needs migration {latest}, which cannot be "
        f"made here: Read-only file system ({old}); run any calib command on it once where it can be "
        "written, or read it with the calib that wrote it"
    )
    assert tree_hashes(old.parent) == before
