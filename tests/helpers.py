"""Helpers shared by tests (importable as `helpers` thanks to pytest's pythonpath setting)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS, Call, ParsedSession, Part, Session

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


# -- sessions written by hand, counted exactly (the removal ledger's and what-if pruning's tests) -------

T0 = datetime(2026, 3, 2, 10, 0, 0)
MINUTE = timedelta(minutes=1)


def text_of(tokens: int, letter: str = "a") -> str:
    """A text `chars4_config` counts as exactly `tokens`."""
    return letter * (4 * tokens)


class SessionBuilder:
    """One session's parts and calls, appended in order; a call's prompt ends at the last part so far."""

    def __init__(self, uid: str, provider: str, model: str, style: str) -> None:
        self.uid, self.provider, self.model, self.style = uid, provider, model, style
        self.parts: list[Part] = []
        self.calls: list[Call] = []

    def part(self, kind: str, tokens: int, *, by: int | None = None, **extra: Any) -> None:
        """A part of `tokens` tokens (`by`: the call that produced it)."""
        role = "assistant" if by is not None else "tool" if kind == "tool_result" else "user"
        call = f"{self.uid}:c{by}" if by is not None else None
        seq = len(self.parts)
        text = text_of(tokens)
        self.parts.append(Part(f"{self.uid}:p{seq}", self.uid, seq, role, kind, text, call_uid=call, **extra))

    def call(self, start: int, minute: float, ctx: int | None, read: int | None, write: int | None,
             output: int = 40, reasoning: int | None = None) -> None:  # fmt: skip
        """A call at T0 + `minute` minutes sending parts `start`.. (`ctx` None: its usage was lost)."""
        k = len(self.calls)
        status = "ok" if ctx is not None else "missing"
        self.calls.append(
            Call(f"{self.uid}:c{k}", self.uid, k, start, len(self.parts), status, self.style,  # type: ignore[arg-type]
                 ts=T0 + minute * MINUTE, provider=self.provider, model=self.model, input=ctx,
                 output=output if ctx is not None else None, reasoning=reasoning, cache_read=read,
                 cache_write=write, ctx=ctx, carry=output if ctx is not None else None)
        )  # fmt: skip

    def session(self) -> ParsedSession:
        path = f"/logs/{self.uid}.jsonl"
        return ParsedSession(Session(self.uid, "test", self.uid, path, "test"), self.calls, self.parts)


def chars4_config(path: Path) -> Path:
    """A calibration that counts `len(text) / 4` for every provider: chars4, ratios 1, no framing."""
    params = {"ratios": dict.fromkeys(RATIO_KEYS, 1.0), "message_overhead": 0.0, "calls": 10}
    doc = {
        "schema_version": 1,
        "base": "chars4",
        "kind_groups": dict(KIND_GROUPS),
        "ratio_groups": list(RATIO_KEYS),
        "default_group": DEFAULT_KIND_GROUP,
        "default": params,
        "providers": {},
    }
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path
