"""The quick path of `calib ingest`: light, and indistinguishable from the full command."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest
import typer
from helpers import run_console_script
from typer.testing import CliRunner

from calib.cli import _quick_ingest, flags
from calib.cli.app import app

HEAVY = ("typer", "rich", "duckdb", "pyarrow", "polars")


class Probe(NamedTuple):
    code: object
    stdout: str
    heavy: list[str]  # the packages of HEAVY it loaded


def _probe(*args: str | Path) -> Probe:
    run = run_console_script(*args)
    return Probe(run.code, run.stdout, sorted(run.packages & set(HEAVY)))


@pytest.fixture
def ingested(sessions_dir: Path, tmp_path: Path) -> list[str]:
    """The arguments of `calib ingest` into a fresh store that has already read `sessions_dir`."""
    args = ["ingest", str(sessions_dir), "--db", str(tmp_path / "q.duckdb")]
    assert CliRunner().invoke(app, [*args, "-q"]).exit_code == 0
    return args


@pytest.mark.parametrize("extra", [["-q"], ["--json"], ["--quiet", "--json"]])
def test_quick_and_full_paths_print_the_same(ingested: list[str], extra: list[str]) -> None:
    full = CliRunner().invoke(app, [*ingested, *extra])  # the typer command, which always runs
    assert full.exit_code == 0, full.output
    assert "2 unchanged" in full.stdout or '"unchanged": 2' in full.stdout
    quick = _probe(*ingested, *extra)
    assert quick.heavy == []  # it was the quick path that answered
    assert quick.code == 0
    assert quick.stdout == full.stdout


def test_the_quick_path_loads_neither_typer_nor_duckdb(ingested: list[str]) -> None:
    quick = _probe(*ingested, "--json")
    assert quick.code == 0
    assert quick.heavy == []
    changed = _probe(*ingested, "--full")  # not for the quick path: the full command loads them
    assert {"typer", "duckdb"} <= set(changed.heavy)


def test_the_quick_path_reads_the_flags_the_typer_command_declares(ingested: list[str]) -> None:
    params = {p.name: p for p in typer.main.get_command(app).commands["ingest"].params}  # type: ignore[attr-defined]
    assert tuple(params["db"].opts) == flags.DB
    assert params["db"].envvar == flags.DB_ENV
    assert tuple(params["as_json"].opts) == flags.JSON
    assert tuple(params["quiet"].opts) == flags.QUIET
    path, db = ingested[1], ingested[3]
    for quiet in flags.QUIET:
        assert _quick_ingest(["ingest", path, f"{flags.DB[0]}={db}", quiet]) == 0
    assert _quick_ingest(["ingest", "--unknown", path, "--db", db]) is None
    assert _quick_ingest(["ingest", path, "--db"]) is None


def test_the_quick_path_finds_the_store_named_by_the_environment(
    ingested: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without --db, the quick path looks where the library would: $CALIB_DB, else ./calib.duckdb.
    store = ingested[ingested.index("--db") + 1]
    monkeypatch.setenv("CALIB_DB", store)
    assert _quick_ingest(["ingest", ingested[1], "-q"]) == 0
    monkeypatch.setenv("CALIB_DB", store + ".other")
    assert _quick_ingest(["ingest", ingested[1], "-q"]) is None
