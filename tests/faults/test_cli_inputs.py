"""Paths and numbers on the command line: `~user` for a user that does not exist is one line, exit 2,
wherever a path is taken (and nothing is created under a folder literally named `~user`); a window too
large to replay is a usage error, not a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from faults.kit import counts, error_line, listing, run_calib

NOBODY = "~nosuchuser-calib"
REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "reports" / "baseline" / "calibration.json"
TILDE_ERROR = f"Error: cannot expand {NOBODY}: there is no such user ({NOBODY}/x); write the path out in full"

# Each command line with `{p}` where it takes the path `~nosuchuser-calib/x`.
TAKERS = {
    "score-db": ("score", "--db", "{p}", "-e", "chars4"),
    "ingest-db": ("ingest", "{sessions}", "--db", "{p}"),
    "ingest-path": ("ingest", "{p}", "--db", "{store}"),
    "fit-out": ("fit", "{sessions}", "--db", "{tmp}/fit.duckdb", "--out", "{p}", "-q"),
    "report-out": ("report", "--db", "{store}", "-e", "chars4", "--no-figures", "--out", "{p}"),
    "report-config": ("report", "--db", "{store}", "-e", "chars4", "--no-figures", "--out", "{tmp}/r", "--config",
                      "{p}"),
    "report-baseline": ("report", "--db", "{store}", "-e", "chars4", "--no-figures", "--out", "{tmp}/r",
                        "--baseline", "{p}"),
    "calibrated": ("score", "--db", "{store}", "-e", "calibrated:{p}"),
    "score-calls": ("score", "--db", "{store}", "-e", "chars4", "--calls", "{p}"),
    "replay-windows": ("replay", "--db", "{store}", "-e", "chars4", "--windows", "{p}"),
    "sample-out": ("sample", "--tool", "gemini-cli", "--out", "{p}"),
    "export-parquet": ("export", "--db", "{store}", "--parquet", "{p}"),
    "export-runtime": ("export", "--runtime", "py", "{p}", "--config", "{config}"),
}  # fmt: skip


@pytest.mark.parametrize("args", TAKERS.values(), ids=TAKERS.keys())
def test_the_home_of_a_user_that_does_not_exist_is_one_line(
    args: tuple[str, ...], sessions: Path, store_copy: Path, tmp_path: Path
) -> None:
    work = tmp_path / "cwd"
    work.mkdir()
    values = {
        "p": f"{NOBODY}/x",
        "config": str(CONFIG),
        "sessions": str(sessions),
        "store": str(store_copy),
        "tmp": str(tmp_path),
    }
    stored = counts(store_copy)
    result = run_calib(*(a.format(**values) for a in args), cwd=work)
    assert result.returncode == 2
    assert error_line(result) == TILDE_ERROR
    assert listing(work) == []  # no folder named `~nosuchuser-calib` was made here
    assert counts(store_copy) == stored


@pytest.mark.parametrize(
    "command", [("ingest", "{sessions}"), ("score", "-e", "chars4")], ids=["ingest", "score"]
)
def test_a_calib_db_under_a_user_that_does_not_exist_is_one_line(
    command: tuple[str, ...], sessions: Path, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "calib", *(a.format(sessions=sessions) for a in command)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "CALIB_DB": f"{NOBODY}/x"},
        timeout=180,
    )
    assert result.returncode == 2
    assert error_line(result) == TILDE_ERROR


def test_a_tilde_alone_in_an_option_is_the_home_folder(store_copy: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "calib", "report", "--db", str(store_copy), "-e", "chars4", "--no-figures",
         "--out=~/report"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "HOME": str(home)}, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (home / "report" / "report.md").exists()
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize(
    ("args", "value"),
    [
        (("replay", "-e", "chars4", "--window"), str(10**30)),
        (("replay", "-e", "chars4", "--window"), "0"),
        (("report", "-e", "chars4", "--no-figures", "--replay-window"), str(10**30)),
    ],
    ids=["replay-huge", "replay-zero", "report-huge"],
)
def test_a_window_out_of_range_is_a_usage_error(
    args: tuple[str, ...], value: str, store_copy: Path, tmp_path: Path
) -> None:
    out = ["--out", str(tmp_path / "r")] if args[0] == "report" else []
    result = run_calib(*args, value, "--db", store_copy, *out)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: a window of {int(value):,} tokens is out of range; pass a token count from 1 to 1,000,000,000"
    )
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_gate_tolerance_that_is_not_a_finite_number_is_a_usage_error(
    value: str, store_copy: Path, tmp_path: Path
) -> None:
    result = run_calib(
        "report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", tmp_path / "r",
        "--baseline", REPO / "reports" / "baseline" / "summary.json", "--max-regression", value,
    )  # fmt: skip
    assert result.returncode == 2  # a limit of nan% passed every figure
    assert error_line(result) == (
        f"Error: --max-regression {value} is not a finite percent; pass a number such as 5"
    )
    assert not (tmp_path / "r").exists()


def test_a_window_out_of_range_in_a_windows_file_names_the_file(store_copy: Path, tmp_path: Path) -> None:
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"*": 10**30}), encoding="utf-8")
    result = run_calib("replay", "--db", store_copy, "-e", "chars4", "--windows", path)
    assert result.returncode == 1
    assert error_line(result) == (
        f"Error: window of '*': invalid window {10**30}/0/None ({path}); "
        "context and input must be 1 to 1,000,000,000 tokens, max_output not negative"
    )
