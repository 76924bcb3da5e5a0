"""What the long commands report to their progress bar (`calib.cli.common.progress_bar` draws it):
on the bundled sample (~600 calls, one batch of sessions), every phase moves more than once, counts
up to its total and says what it is."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from itertools import groupby
from pathlib import Path

import pytest

from calib.analysis.replay import run_replay
from calib.analysis.report import run_report
from calib.calibration.pipeline import FITTING, run_fit
from calib.ingest.pipeline import ingest
from calib.scoring.counts import COUNTING
from calib.scoring.score import SCORING, score_store

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"

Call = tuple[int, int, str]


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the bundled sample, as `calib ingest datasets/sample` builds it."""
    db = tmp_path_factory.mktemp("progress") / "sample.duckdb"
    result = ingest([SAMPLE], db=db)
    assert result.sessions > 40 and not result.errors
    return db


@pytest.fixture
def store(sample_store: Path, tmp_path: Path) -> Path:
    """A copy of the sample store whose texts are not counted yet (a command keeps its counts)."""
    return Path(shutil.copy(sample_store, tmp_path / "store.duckdb"))


def _phases(calls: list[Call]) -> list[tuple[str, list[int]]]:
    """The calls as phases: runs of the same label and total, with the counts reported."""
    return [(what, [done for done, _, _ in run]) for (what, _), run in groupby(calls, lambda c: (c[2], c[1]))]


def _check(calls: list[Call]) -> list[tuple[str, list[int]]]:
    assert len(calls) > 1
    assert all(total > 0 and 0 <= done <= total for done, total, _ in calls)
    phases = _phases(calls)
    for what, dones in phases:
        assert what, "every phase says what it is"
        assert dones == sorted(dones), f"{what} went backwards: {dones}"
        assert len(set(dones)) > 2, f"{what} moved only from {dones[0]} to {dones[-1]}"
    totals = {what: total for _, total, what in calls}
    assert all(dones[-1] == totals[what] for what, dones in phases), "each phase ends at its total"
    return phases


Run = Callable[[Path, Path, Callable[[int, int, str], None]], object]

COMMANDS: dict[str, tuple[Run, str | None]] = {
    "score": (lambda db, _, progress: score_store(db, ["chars4", "cjk"], progress=progress), SCORING),
    "fit": (lambda db, _, progress: run_fit(db=db, out=None, ingest=False, progress=progress), FITTING),
    "report": (
        lambda db, out, progress: run_report(db, out=out, figures=False, progress=progress),
        None,
    ),
    "replay": (lambda db, _, progress: run_replay(db, progress=progress), None),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_long_command_reports_every_phase_more_than_once(command: str, store: Path, tmp_path: Path) -> None:
    run, phase = COMMANDS[command]
    calls: list[Call] = []
    run(store, tmp_path / "out", lambda done, total, what: calls.append((done, total, what)))
    phases = _check(calls)
    labels = [what for what, _ in phases]
    assert labels[0].startswith(COUNTING)  # the texts are counted first, an estimator at a time
    if phase is not None:
        assert labels[-1] == phase


def test_with_every_text_counted_the_calls_still_move(store: Path) -> None:
    score_store(store, ["chars4"])
    calls: list[Call] = []
    score_store(store, ["chars4"], progress=lambda done, total, what: calls.append((done, total, what)))
    assert [what for what, _ in _check(calls)] == [SCORING]
