"""What `calib` alone and `calib --version` print: through the typer app, and through the console
script, which answers both before loading the framework."""

from __future__ import annotations

import pytest
from helpers import run_console_script
from typer.testing import CliRunner

from calib.cli.app import app
from calib.cli.start import START
from calib.core.version import __version__


def _console(*args: str) -> dict[str, object]:
    run = run_console_script(*args)
    return {"code": run.code, "stdout": run.stdout, "typer": "typer" in run.packages}


def _lines_of_the_three_commands(text: str) -> list[str]:
    return [line.split()[1] for line in text.splitlines() if line.startswith("  calib ")]


def test_calib_alone_names_the_three_commands_to_start_with() -> None:
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 0
    assert _lines_of_the_three_commands(result.stdout) == ["fit", "report", "replay"]
    assert "calib --help for every command" in result.stdout
    assert "Usage:" not in result.stdout  # not the full help


def test_calib_alone_is_answered_without_the_framework() -> None:
    result = _console()
    assert result == {"code": 0, "stdout": START + "\n", "typer": False}


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_package_version(flag: str) -> None:
    result = CliRunner().invoke(app, [flag])
    assert result.exit_code == 0
    assert result.stdout == f"calib {__version__}\n"
    assert _console(flag) == {"code": 0, "stdout": f"calib {__version__}\n", "typer": False}


def test_version_comes_before_a_command() -> None:
    # eager, like --help: `calib --version score` prints the version and runs nothing
    result = CliRunner().invoke(app, ["--version", "score", "--db", "/nonexistent/x.duckdb"])
    assert result.exit_code == 0
    assert result.stdout == f"calib {__version__}\n"


def test_the_three_commands_exist() -> None:
    for command in _lines_of_the_three_commands(START):
        assert CliRunner().invoke(app, [command, "--help"]).exit_code == 0
