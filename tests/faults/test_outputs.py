"""Where calib writes its outputs (`fit --out`, `export --runtime`, `score --calls`, `report --out`): a
path that holds something else is refused before any work, and what is written is written whole."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from faults.kit import counts, error_line, listing, run_calib, session_files, tree_hashes

from calib.analysis import plots
from calib.analysis.report import run_report
from calib.calibration.pipeline import run_fit
from calib.core.errors import CalibError
from calib.ingest.cache import manifest_path
from calib.scoring import score as scoring

NOT_WRITTEN = "nothing was written"
CONFIG_HINT = f"name a new file or an earlier calibration config; {NOT_WRITTEN}"
CALLS_HINT = f"name a new file or one `calib score --calls` wrote; {NOT_WRITTEN}"
REPORT_HINT = f"name a new or empty folder, or one `calib report` wrote; {NOT_WRITTEN}"
RUNTIME_HINT = f"name another folder, or move the file away; {NOT_WRITTEN}"


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE session (id TEXT PRIMARY KEY)")
    con.commit()
    con.close()
    return path


@pytest.fixture(scope="module")
def config(sample_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A calibration config `calib fit` wrote (read it, never write it)."""
    out = tmp_path_factory.mktemp("config") / "calibration.json"
    result = run_calib("fit", "--db", sample_store, "--out", out, "-q")
    assert result.returncode == 0, result.stderr
    return out


# -- fit --out -------------------------------------------------------------------------------------

STORE_NAMES: dict[str, Callable[[Path, Path], Path]] = {
    "the store itself": lambda store, tmp: store,
    "a symbolic link to it": lambda store, tmp: _link(tmp / "link.json", store, os.symlink),
    "a hard link to it": lambda store, tmp: _link(tmp / "hard.json", store, os.link),
    "its path through ..": lambda store, tmp: store.parent / ".." / store.parent.name / store.name,
}


def _link(path: Path, store: Path, make: Callable[[Path, Path], None]) -> Path:
    make(store, path)
    return path


@pytest.mark.parametrize("name", STORE_NAMES)
def test_fit_out_the_store_in_use_is_refused_and_the_store_kept(
    name: str, store_copy: Path, tmp_path: Path
) -> None:
    out = STORE_NAMES[name](store_copy, tmp_path)
    before, stored, entries = tree_hashes(store_copy), counts(store_copy), listing(tmp_path)
    result = run_calib("fit", "--db", store_copy, "--out", out, "-q")
    assert result.returncode == 2, result.stdout
    assert error_line(result) == (
        f"Error: will not write the calibration config over the calib store in use ({out}); {CONFIG_HINT}"
    )
    assert result.stdout == ""  # no "wrote ..."
    assert tree_hashes(store_copy) == before and counts(store_copy) == stored
    assert listing(tmp_path) == entries


@pytest.mark.parametrize("companion", ["write-ahead log", "ingest record"])
def test_fit_out_a_file_of_the_store_is_refused(companion: str, store_copy: Path, tmp_path: Path) -> None:
    out = Path(f"{store_copy}.wal" if companion == "write-ahead log" else manifest_path(store_copy))
    entries = listing(tmp_path)
    result = run_calib("fit", "--db", store_copy, "--out", out, "-q")
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the calibration config over a file of the calib store in use ({out}); "
        f"{CONFIG_HINT}"
    )
    assert listing(tmp_path) == entries


def test_fit_out_a_new_store_is_refused_before_anything_is_ingested(sessions: Path, tmp_path: Path) -> None:
    db = tmp_path / "new" / "calib.duckdb"
    result = run_calib("fit", sessions, "--db", db, "--out", db, "-q")
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the calibration config over the calib store in use ({db}); {CONFIG_HINT}"
    )
    assert not db.parent.exists()  # refused before the store was made


FOREIGN: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "an agent's session": (lambda data, tmp: session_files(data)[0], "a gemini-cli session"),
    "an agent's SQLite database": (lambda data, tmp: _sqlite(tmp / "opencode.db"), "a SQLite database"),
    "a text file": (lambda data, tmp: _text(tmp / "notes.txt", "my notes\n"), "a file that is not a calibration config"),
    "JSON of another program": (lambda data, tmp: _text(tmp / "settings.json", '{"theme": "dark"}\n'), "a file that is not a calibration config"),
    "an empty file": (lambda data, tmp: _text(tmp / "agent.lock", ""), "a file that is not a calibration config"),
    "a folder": (lambda data, tmp: _text(tmp / "calibration.json" / "mine.txt", "mine").parent, "a folder"),
}  # fmt: skip


def _text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", FOREIGN)
def test_fit_out_refuses_a_file_that_is_not_a_calibration_config(
    name: str, store_copy: Path, sessions: Path, tmp_path: Path
) -> None:
    make, reason = FOREIGN[name]
    out = make(sessions, tmp_path)
    before, stored = tree_hashes(out), counts(store_copy)
    entries, data = listing(tmp_path), listing(sessions)
    result = run_calib("fit", "--db", store_copy, "--out", out, "-q")
    assert result.returncode == 2
    assert (
        error_line(result)
        == f"Error: will not write the calibration config over {reason} ({out}); {CONFIG_HINT}"
    )
    assert result.stdout == ""
    assert tree_hashes(out) == before and counts(store_copy) == stored
    assert listing(tmp_path) == entries and listing(sessions) == data  # no temporary file left


def test_fit_out_under_a_file_is_refused_before_the_fit(store_copy: Path, tmp_path: Path) -> None:
    blocker = _text(tmp_path / "taken", "mine")
    result = run_calib("fit", "--db", store_copy, "--out", blocker / "calibration.json", "-q")
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the calibration config under a file ({blocker}); {CONFIG_HINT}"
    )
    assert blocker.read_text() == "mine"


def test_fit_rewrites_its_own_config_and_says_so(store_copy: Path, config: Path, tmp_path: Path) -> None:
    out = _text(tmp_path / "out" / "calibration.json", config.read_text())
    result = run_calib("fit", "--db", store_copy, "--out", out, "-q")
    assert result.returncode == 0, result.stderr
    # (after a line per agent folder read, where this machine has any)
    assert any(f"; wrote {out};" in line for line in result.stdout.splitlines())
    assert json.loads(out.read_text())["schema_version"] == json.loads(config.read_text())["schema_version"]
    assert listing(out.parent) == ["calibration.json"]


def test_a_failed_config_write_keeps_the_old_config_and_no_temporary_file(
    store_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out" / "calibration.json"
    run_fit(db=store_copy, out=out, ingest=False)
    before = tree_hashes(out.parent)

    def full_disk(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(CalibError) as caught:
        run_fit(db=store_copy, out=out, base="chars4", ingest=False)
    assert str(caught.value) == (
        f"cannot write calibration.json: No space left on device ({out}); "
        "check the folder's permissions and free space; nothing was changed"
    )
    assert tree_hashes(out.parent) == before


# -- export --runtime ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "reason"),
    [
        ("calib_runtime.py", "print('my own runtime')\n", "the runtime over a file that is not a runtime calib wrote"),
        ("calibration.json", '{"theme": "dark"}\n', "the calibration config over a file that is not a calibration config"),
        ("calib-runtime.md", "# my notes\n", "the runtime's guide over a file that is not a guide calib wrote"),
    ],
)  # fmt: skip
def test_export_runtime_refuses_a_file_it_did_not_write(
    name: str, text: str, reason: str, config: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "vendor"
    mine = _text(folder / name, text)
    before = tree_hashes(folder)
    result = run_calib("export", "--runtime", "py", folder, "--config", config)
    assert result.returncode == 2
    assert error_line(result) == f"Error: will not write {reason} ({mine}); {RUNTIME_HINT}"
    assert tree_hashes(folder) == before  # not one file written, not even the others


def test_export_runtime_refuses_the_store_in_use(config: Path, store_copy: Path) -> None:
    os.link(store_copy, store_copy.parent / "calib_runtime.py")
    before = tree_hashes(store_copy)
    result = run_calib("export", "--runtime", "py", store_copy.parent, "--config", config, "--db", store_copy)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the runtime over the calib store in use ({store_copy.parent / 'calib_runtime.py'}); "
        f"{RUNTIME_HINT}"
    )
    assert tree_hashes(store_copy) == before


@pytest.mark.parametrize("runtime", ["py", "ts", "js"])
def test_export_runtime_replaces_its_own_files_also_of_an_older_calib(
    runtime: str, config: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "vendor"
    first = run_calib("export", "--runtime", runtime, folder, "--config", config, "--json")
    assert first.returncode == 0, first.stderr
    written = tree_hashes(folder)
    for name in json.loads(first.stdout)["files"]:  # as an earlier calib version wrote them
        if name != "calibration.json":
            (folder / name).write_text((folder / name).read_text() + "\n// older\n")
    again = run_calib("export", "--runtime", runtime, folder, "--config", config, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["replaced"] == json.loads(first.stdout)["files"]
    assert tree_hashes(folder) == written


# -- score --calls ---------------------------------------------------------------------------------


def test_score_calls_refuses_an_agents_session_file(store_copy: Path, sessions: Path) -> None:
    target = session_files(sessions)[0]
    before = tree_hashes(sessions)
    result = run_calib("score", "--db", store_copy, "-e", "chars4", "--calls", target)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the per-call frame over a gemini-cli session ({target}); {CALLS_HINT}"
    )
    assert result.stdout == ""
    assert tree_hashes(sessions) == before


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_score_calls_refuses_a_file_that_is_not_its_output(
    suffix: str, store_copy: Path, tmp_path: Path
) -> None:
    target = tmp_path / f"mine{suffix}"
    frame = pl.DataFrame({"session": ["a"], "cost": [1.5]})  # a table of the user's, with a column in common
    {".csv": frame.write_csv, ".parquet": frame.write_parquet, ".jsonl": frame.write_ndjson}[suffix](target)
    before = tree_hashes(tmp_path)
    result = run_calib("score", "--db", store_copy, "-e", "chars4", "--calls", target)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the per-call frame over a file that is not a per-call frame "
        f"`calib score --calls` wrote ({target}); {CALLS_HINT}"
    )
    assert tree_hashes(tmp_path) == before


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_score_calls_rewrites_its_own_output(suffix: str, store_copy: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / f"calls{suffix}"
    target.parent.mkdir()
    for estimators in (["chars4", "charclass"], ["chars4"]):
        result = run_calib(
            "score", "--db", store_copy, *(a for e in estimators for a in ("-e", e)), "--calls", target
        )
        assert result.returncode == 0, result.stderr
        frame = {".csv": pl.read_csv, ".parquet": pl.read_parquet, ".jsonl": pl.read_ndjson}[suffix](target)
        assert sorted(frame["estimator"].unique()) == sorted(estimators)
    assert listing(target.parent) == [target.name]


def test_a_failed_score_keeps_the_old_calls_file_and_no_temporary_file(
    store_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out" / "calls.csv"
    target.parent.mkdir()
    scoring.score_store(store_copy, ["charclass"], calls=target)
    before = tree_hashes(target.parent)
    real = scoring.score_frame

    def second_fails(rows: pl.DataFrame, name: str, *args: Any) -> pl.DataFrame:
        if name == "charclass":  # once chars4's rows, which the earlier file does not hold, are written
            raise CalibError("the estimator failed")
        return real(rows, name, *args)

    monkeypatch.setattr(scoring, "score_frame", second_fails)
    with pytest.raises(CalibError, match="the estimator failed"):
        scoring.score_store(store_copy, ["chars4", "charclass"], calls=target)
    assert tree_hashes(target.parent) == before


# -- report --out ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"report.md": "# my own notes\n"}, "a folder that is not a calib report"),
        ({"notes.txt": "mine", "data/a.csv": "x\n"}, "a folder that is not a calib report"),
        ({"summary.json": '{"format": "other/1"}\n'}, "a folder that is not a calib report"),
    ],
)
def test_report_out_refuses_a_folder_that_is_not_a_report(
    files: dict[str, str], reason: str, store_copy: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    for name, text in files.items():
        _text(out / name, text)
    before, entries = tree_hashes(out), listing(tmp_path)
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert result.returncode == 2
    assert error_line(result) == f"Error: will not write the report over {reason} ({out}); {REPORT_HINT}"
    assert tree_hashes(out) == before and listing(tmp_path) == entries


def test_report_out_refuses_a_report_holding_a_file_calib_did_not_write(
    store_copy: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    first = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert first.returncode == 0, first.stderr
    _text(out / "notes.txt", "mine")
    before = tree_hashes(out)
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert result.returncode == 2
    assert error_line(result) == (
        f"Error: will not write the report over a calib report that also holds notes.txt, which calib "
        f"did not write ({out}); {REPORT_HINT}"
    )
    assert tree_hashes(out) == before


def test_report_out_a_file_is_refused(store_copy: Path, tmp_path: Path) -> None:
    out = _text(tmp_path / "report", "mine")
    result = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert result.returncode == 2
    assert error_line(result) == f"Error: will not write the report over a file ({out}); {REPORT_HINT}"
    assert out.read_text() == "mine"


def test_report_rewrites_its_own_folder_whole(store_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "report"
    first = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--fit", "--out", out)
    assert first.returncode == 0, first.stderr
    assert "calibration.json" in listing(out)
    again = run_calib("report", "--db", store_copy, "-e", "chars4", "--no-figures", "--out", out)
    assert again.returncode == 0, again.stderr
    assert listing(out) == ["report.md", "summary.json"]  # the old fit's config is gone with the old report
    assert listing(out.parent) == ["report", "report/report.md", "report/summary.json"]


def test_a_failed_report_leaves_the_old_folder_as_it_was(
    store_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out" / "report"
    run_report(store_copy, out=out, estimators=["chars4"], figures=False)
    before = tree_hashes(out)
    saved: list[str] = []

    def third_fails(fig: Any, path: str | os.PathLike[str]) -> None:
        saved.append(os.fspath(path))
        if len(saved) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        Path(path).write_bytes(b"png")

    monkeypatch.setattr(plots, "save_figure", third_fails)
    with pytest.raises(CalibError) as caught:
        run_report(store_copy, out=out, estimators=["chars4"], figures=True)
    name = Path(saved[-1]).name
    assert str(caught.value) == (
        f"cannot write {name}: No space left on device ({out / name}); "
        "check the folder's permissions and free space; nothing was changed"
    )
    assert tree_hashes(out) == before
    assert listing(out.parent) == ["report", "report/report.md", "report/summary.json"]  # no temporary folder
