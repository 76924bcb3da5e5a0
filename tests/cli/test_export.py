"""`calib export --parquet DIR`, and the other commands reading DIR back with `--db DIR`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from calib.cli.app import app


def _run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def exported(small_store: Path) -> Path:
    out = small_store.parent / "export"
    code, stdout, stderr = _run("export", "--parquet", out, "--db", small_store, "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert document["out"] == str(out) and not document["replaced"]
    assert document["tables"]["sessions"] == {"rows": 2, "files": 1, "partition_by": ["tool", "month"]}
    assert document["tables"]["files"]["partition_by"] == []
    assert "call_chain" in document["views"]
    return out


def test_score_report_and_fit_read_the_export_as_they_read_the_store(
    small_store: Path, exported: Path, tmp_path: Path
) -> None:
    on_folder = _run("score", "--db", exported, "-e", "chars4", "-e", "charclass", "--json", "-q")
    on_store = _run("score", "--db", small_store, "-e", "chars4", "-e", "charclass", "--json", "-q")
    assert on_folder[0] == 0, on_folder[2]
    assert json.loads(on_folder[1]) and on_folder[1] == on_store[1]
    # no session paths and a read-only store: the agents' own folders are not ingested into it
    code, stdout, stderr = _run(
        "fit", "--db", exported, "--out", tmp_path / "c.json", "--base", "chars4", "--json"
    )
    assert code == 0, stderr
    assert json.loads(stdout)["ingest"] is None
    assert json.loads((tmp_path / "c.json").read_text())["schema_version"]
    code, _, stderr = _run(
        "report", "--db", exported, "-e", "chars4", "--no-figures", "--out", tmp_path / "r", "-q"
    )
    assert code == 0, stderr
    assert (tmp_path / "r" / "summary.json").is_file()


def test_export_says_what_it_wrote_and_replaces_an_earlier_export(small_store: Path, exported: Path) -> None:
    code, stdout, stderr = _run("export", "--parquet", exported, "--db", small_store)
    assert code == 0, stderr
    assert stdout.splitlines()[-1].startswith(f"replaced {exported}: 7 tables, ")
    assert stdout.splitlines()[-1].endswith(f"`calib score --db {exported}` reads it back")
    assert "sessions" in stdout and "tool, month" in stdout


def test_export_needs_a_format(small_store: Path) -> None:
    code, stdout, stderr = _run("export", "--db", small_store)
    assert (code, stdout) == (2, "")
    assert stderr == "Error: nothing to export; name what to write, e.g. --parquet DIR\n"


def test_a_folder_that_is_not_an_export_is_one_line_and_untouched(small_store: Path, tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    code, stdout, stderr = _run("export", "--parquet", tmp_path, "--db", small_store)
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"Error: cannot export to {tmp_path}: the folder is not empty and not a calib export; name a new "
        "or empty folder, or one an earlier `calib export --parquet` wrote; nothing was changed\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_a_missing_store_is_not_exported(tmp_path: Path) -> None:
    code, _, stderr = _run("export", "--parquet", tmp_path / "out", "--db", tmp_path / "none.duckdb")
    assert code == 2
    assert stderr == f"Error: no calib store at {tmp_path / 'none.duckdb'}; run `calib ingest` first\n"
    assert list(tmp_path.iterdir()) == []


def test_nothing_is_ingested_into_an_export(sessions_dir: Path, exported: Path, tmp_path: Path) -> None:
    code, _, stderr = _run("ingest", sessions_dir, "--db", exported, "-q")
    assert code == 2
    assert stderr == (
        f"Error: {exported} is a Parquet export, which calib only reads; ingest into a .duckdb store, "
        "then `calib export --parquet` it again\n"
    )
    code, _, stderr = _run("fit", sessions_dir, "--db", exported, "--out", tmp_path / "c.json")
    assert code == 2
    assert stderr.startswith("Error: a Parquet export is read-only: it cannot ingest the paths given;")
    assert not (tmp_path / "c.json").exists()
