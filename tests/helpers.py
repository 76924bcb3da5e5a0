"""Helpers shared by tests (importable as `helpers` thanks to pytest's pythonpath setting)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


def shared_fixture(*parts: str) -> Path:
    """A path under ../shared/fixtures; the test is skipped with a clear reason if it is absent."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real fixtures not present: {path} (clone the project with ../shared beside it)")
    return path


# Runs the console script (`calib.cli.main`) in a fresh interpreter, then reports its exit code, what it
# printed and which top-level packages it loaded.
_CONSOLE_PROBE = """
import contextlib, io, json, sys
from calib.cli import main
sys.argv = ["calib", *sys.argv[1:]]
out = io.StringIO()
code = None
with contextlib.redirect_stdout(out):
    try:
        main()
    except SystemExit as exit:
        code = exit.code
packages = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"code": code, "stdout": out.getvalue(), "packages": packages}))
"""


class ConsoleRun(NamedTuple):
    code: object  # what main() exited with (None: it returned)
    stdout: str
    packages: frozenset[str]  # the top-level packages the run imported


def run_console_script(*args: str | Path) -> ConsoleRun:
    """`calib ARGS...` as the console script runs it, in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _CONSOLE_PROBE, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    return ConsoleRun(result["code"], result["stdout"], frozenset(result["packages"]))
