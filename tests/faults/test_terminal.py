"""Text from logs and paths reaching the terminal: control characters are shown escaped, never sent raw
(a model name cannot retitle the terminal or forge an `Error:` line), rich markup in it prints as it is,
and report.md's cells hold it escaped too. Ctrl-C is one line, exit 130."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from faults.kit import counts, error_line, json_of, run_calib, session_files, tree_hashes

from calib.cli.common import progress_bar
from calib.synth import write_sample

# One hostile model name per session: an OSC sequence retitling the terminal, a rich closing tag
# with no opening one, a newline and a markdown cell separator, an 8-bit CSI and a right-to-left override.
MODELS = ["evil\x1b]0;pwned\x07-model", "[/bold]", "two\nlines|pipe", "c1\x9b2J\u202eevil"]
SHOWN = ["evil\\x1b]0;pwned\\x07-model", "[/bold]", "two\\nlines|pipe", "c1\\x9b2J\\u202eevil"]
# What may never reach a terminal raw: C0 controls but the newline ending a line, DEL, C1, the
# separators Python splits lines on, and the bidirectional overrides.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _rename_models(root: Path) -> None:
    for log, model in zip(session_files(root), MODELS, strict=True):
        lines = []
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "model" in record:
                record["model"] = model
            lines.append(json.dumps(record))
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def hostile(gemini_source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four sessions, each under one of `MODELS`."""
    root = tmp_path_factory.mktemp("hostile") / "data"
    shutil.copytree(gemini_source, root)
    _rename_models(root)
    return root


@pytest.fixture(scope="module")
def hostile_store(hostile: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of `hostile` (only read by the tests)."""
    db = tmp_path_factory.mktemp("hostile-store") / "calib.duckdb"
    result = run_calib("ingest", hostile, "--db", db, "-q")
    assert result.returncode == 0, result.stderr
    return db


def _clean(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert not RAW.search(result.stdout), repr(result.stdout)
    assert not RAW.search(result.stderr), repr(result.stderr)


def test_a_model_name_cannot_retitle_the_terminal_through_replay(hostile_store: Path) -> None:
    result = run_calib("replay", "--db", hostile_store, "-e", "chars4")
    _clean(result)
    assert result.stderr.splitlines() == [
        f"Warning: no context window for {', '.join(sorted(SHOWN))}; their calls are left out "
        "(add them with --windows FILE or --window N)"
    ]


def test_score_prints_log_text_escaped_and_markup_as_itself(hostile_store: Path) -> None:
    result = run_calib("score", "--db", hostile_store, "-e", "chars4")
    _clean(result)
    for shown in SHOWN:
        assert shown in result.stdout
    assert "[/bold]" in result.stdout


def test_fit_prints_a_markup_model_name_as_itself(hostile: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibration.json"
    # nothing held out: the figures are those of the training sessions, so every model has a row
    result = run_calib(
        "fit", hostile, "--db", tmp_path / "calib.duckdb", "--out", out, "--holdout", "0", "-q"
    )
    _clean(result)
    assert "[/bold]" in result.stdout and "evil\\x1b]0;pwned\\x07-model" in result.stdout
    assert out.exists()


def test_json_output_keeps_the_names_and_sends_no_control_character_raw(hostile_store: Path) -> None:
    result = run_calib("score", "--db", hostile_store, "-e", "chars4", "--json")
    _clean(result)
    assert {r["model"] for r in json_of(result)} == set(MODELS)  # escaped as JSON, not changed


def test_report_md_cells_hold_log_text_escaped(hostile_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = run_calib("report", "--db", hostile_store, "-e", "chars4", "--no-figures", "--out", out)
    _clean(result)
    text = (out / "report.md").read_text(encoding="utf-8")
    assert not RAW.search(text.replace("\n", "")), [line for line in text.splitlines() if RAW.search(line)]
    assert "| google / two\\nlines\\|pipe |" in text
    assert "evil\\x1b]0;pwned\\x07-model" in text
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert {g["model"] for g in summary["groups"]} == set(MODELS)  # the data keeps the names as they are


@pytest.mark.parametrize(
    "args",
    [
        ("score", "--db", "{bad}/calib.duckdb", "-e", "chars4"),
        ("ingest", "{bad}/session.jsonl", "--db", "{tmp}/calib.duckdb"),
        (
            "report",
            "--db",
            "{store}",
            "-e",
            "chars4",
            "--no-figures",
            "--out",
            "{tmp}/r",
            "--baseline",
            "{bad}",
        ),
    ],
    ids=["score-db", "ingest-path", "report-baseline"],
)
def test_a_path_with_a_newline_cannot_forge_an_error_line(
    args: tuple[str, ...], store_copy: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "x\nError: all is well\x1b[2J"
    values = {"bad": str(bad), "tmp": str(tmp_path), "store": str(store_copy)}
    result = run_calib(*(a.format(**values) for a in args))
    assert result.returncode in (1, 2)
    line = error_line(result)  # exactly one line on stderr
    assert line.startswith("Error: ") and "x\\nError: all is well\\x1b[2J" in line
    assert not RAW.search(result.stderr)


def test_an_ingest_warning_shows_the_path_escaped(sessions: Path, tmp_path: Path) -> None:
    log = session_files(sessions)[1]
    hostile = log.parent.parent / "proj\x1b]0;pwned\x07"
    log.parent.rename(hostile)
    log = session_files(sessions)[1]
    lines = log.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2] + " damaged"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = tree_hashes(sessions)
    result = run_calib("ingest", sessions, "--db", tmp_path / "calib.duckdb")
    _clean(result)
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    shown = str(log).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert f"({shown}:4)" in warning
    assert tree_hashes(sessions) == source


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, so the progress bar draws on it."""

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_a_file_name_escaped_and_not_as_markup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("ingest", quiet=False) as update:
        assert update is not None
        update(1, 2, "/logs/session-\x1b]0;pwned\x07[red]a.jsonl")  # what ingest reports: the file done
    drawn = terminal.getvalue()
    assert "session-\\x1b]0;pwned\\x07[red]a" in drawn
    assert "\x1b]0;pwned" not in drawn


# -- Ctrl-C ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 gemini-cli sessions (60 written, each copied under 10 session ids): long enough to score that
    Ctrl-C lands while the command is working."""
    root = tmp_path_factory.mktemp("big")
    one = root / "one"
    write_sample("gemini-cli", one, layout="gemini-jsonl", sessions=60, seed=5)
    data = root / "data"
    for k in range(10):
        for log in session_files(one):
            text = log.read_text(encoding="utf-8")
            sid = json.loads(text.splitlines()[0])["sessionId"]
            target = data / f"copy{k}" / log.relative_to(one)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.replace(sid, str(uuid.uuid5(uuid.NAMESPACE_OID, f"{k}/{sid}"))))
    db = root / "calib.duckdb"
    result = run_calib("ingest", data, "--db", db, "-q")
    assert result.returncode == 0, result.stderr
    return db


def _opened(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    "args",
    [("score", "-e", "chars4", "-e", "cjk"), ("report", "-e", "chars4", "--no-figures")],
    ids=["score", "report"],
)
def test_ctrl_c_is_one_line_and_exit_130(args: tuple[str, ...], big_store: Path, tmp_path: Path) -> None:
    # each attempt on a copy of the store as ingest left it: a command that finished has written its
    # counts, which would make the next attempt's work shorter and its store another
    store = tmp_path / "calib.duckdb"
    command = [sys.executable, "-m", "calib", *args, "--db", str(store)]
    if args[0] == "report":
        command += ["--out", str(tmp_path / "r")]
    for _ in range(3):  # the command may finish before the signal lands: try again
        shutil.copyfile(big_store, store)
        stored, source = counts(store), tree_hashes(store)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not _opened(proc.pid, store):
            time.sleep(0.002)
        time.sleep(0.01)  # working on it (a first score of this store takes about 0.1 s more)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        if proc.returncode != 0:
            break
    else:
        pytest.skip("the command finished before Ctrl-C reached it, three times")
    assert proc.returncode == 130, stderr
    assert stderr.splitlines() == ["Error: interrupted"]
    assert tree_hashes(store) == source and counts(store) == stored  # the store as it was


# Model names that matplotlib would read as its math markup: an odd `$` (which it cannot parse) and a
# pair around a TeX command (which it would typeset instead of printing).
MATH_MODELS = ["gemini-$\\frac{x$", "a$\\alpha$b", "$$", "plain-model"]


def test_a_model_name_holding_math_markup_draws_the_figures(gemini_source: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    data = tmp_path / "data"
    shutil.copytree(gemini_source, data)
    for log, model in zip(session_files(data), MATH_MODELS, strict=True):
        lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        for record in lines:
            if "model" in record:
                record["model"] = model
        log.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    db = tmp_path / "calib.duckdb"
    assert run_calib("ingest", data, "--db", db, "-q").returncode == 0
    out = tmp_path / "report"
    result = run_calib("report", "--db", db, "-e", "chars4", "--out", out, "-q")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert sorted(p.name for p in out.glob("*.png"))  # every figure drawn, none failed on a name
