"""Faults found beyond the issue's list: the file system failing under a command is one line, not a
traceback, and a --db that is a folder is refused."""

from __future__ import annotations

from pathlib import Path

from faults.kit import counts, error_line, listing, run_calib


def test_a_report_folder_that_is_a_file_is_one_line(store_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "taken"
    out.write_text("mine")
    stored = counts(store_copy)
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the report over a file ({out}); name a new or empty folder, or one "
        "`calib report` wrote; nothing was written"
    )
    assert out.read_text() == "mine" and counts(store_copy) == stored


def test_a_config_path_under_a_file_is_one_line(store_copy: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("mine")
    result = run_calib("fit", "--db", store_copy, "--out", blocker / "calibration.json", "-q")
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the calibration config under a file ({blocker}); name a new file or an "
        "earlier calibration config; nothing was written"
    )
    assert blocker.read_text() == "mine"


def test_a_db_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    result = run_calib("score", "--db", folder, "-e", "chars4")
    assert result.returncode == 2
    assert (
        error_line(result)
        == f"Error: not a calib store: {folder} is a folder; point --db at a .duckdb file, "
        "or at a folder `calib export --parquet` wrote"
    )
    assert listing(folder) == []
