"""Every command answers `--help` and names its options; the commands are listed in their order."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from calib.cli.app import app

OPTIONS = {
    "ingest": ["--format", "--full", "--db", "--json", "--quiet"],
    "estimators": ["--db", "--json"],
    "bench": ["--estimator", "--quick", "--db", "--json", "--quiet"],
    "score": ["--estimator", "--sessions", "--calls", "--db", "--json", "--quiet"],
    "fit": ["--base", "--out", "--holdout", "--format", "--db", "--json", "--quiet"],
    "sample": ["--tool", "--out", "--layout", "--sessions", "--seed", "--json"],
    "report": [
        "--out",
        "--estimator",
        "--config",
        "--fit",
        "--base",
        "--figures",
        "--replay-window",
        "--baseline",
        "--max-regression",
        "--fail-on-new-group",
        "--db",
        "--json",
        "--quiet",
    ],
    "replay": ["--estimator", "--policy", "--rule", "--windows", "--window", "--db", "--json", "--quiet"],
    "export": ["--parquet", "--db", "--json", "--quiet"],
}


def _help(*args: str) -> str:
    result = CliRunner().invoke(
        app, [*args, "--help"], env={"COLUMNS": "200"}
    )  # rich reads the width from COLUMNS
    assert result.exit_code == 0, result.output
    return result.stdout


def test_every_registered_command_has_a_help_test() -> None:
    group = typer.main.get_group(app)
    assert list(group.commands) == list(OPTIONS)


def test_the_top_level_help_lists_the_commands_in_order() -> None:
    text = _help()
    panel = text[text.index("Commands") :]
    listed = re.findall(r"^│ ([a-z]+) ", panel, flags=re.MULTILINE)
    assert listed == list(OPTIONS)
    assert "--debug" in text


@pytest.mark.parametrize("command", list(OPTIONS))
def test_help_names_the_options(command: str) -> None:
    text = _help(command)
    missing = [option for option in OPTIONS[command] if option not in text]
    assert not missing


def test_bench_has_no_ingest_benchmark_options() -> None:
    text = _help("bench")
    assert not [option for option in ("--ingest", "--corpus", "--ccusage") if option in text]
