"""Every command runs with the network unreachable: ingest, score, fit, report, replay, the gate and export.

(DuckDB's own downloads do not go through Python's sockets: those are switched off in its connect
config, which `test_store_path.test_every_connection_has_extension_autoloading_off` checks.)
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from calib.cli.app import app


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any connection or name lookup raises (and is recorded)."""
    attempts: list[str] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(repr(args)[:80])
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def test_every_command_works_offline(no_sockets: list[str], sessions: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "calib.duckdb")
    config = str(tmp_path / "calibration.json")

    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.output

    ok("ingest", str(sessions), "--db", db, "-q")
    ok("score", "--db", db, "-e", "chars4", "-e", "charclass", "-e", "tiktoken:o200k_base", "-q")
    ok("fit", str(sessions), "--db", db, "--out", config, "-q")
    ok("report", "--db", db, "-e", "chars4", "--config", config, "--out", str(tmp_path / "base"), "-q")
    ok("replay", "--db", db, "-e", "chars4", "-e", f"calibrated:{config}", "-q")
    gate = ok(
        "report", "--db", db, "-e", "chars4", "--config", config, "--no-figures",
        "--out", str(tmp_path / "now"), "--baseline", str(tmp_path / "base" / "summary.json"), "-q",
    )  # fmt: skip
    assert "gate PASS" in gate
    pooled = str(tmp_path / "pooled")  # DuckDB's Parquet reader and writer are built in
    ok("export", "--parquet", pooled, "--db", db, "-q")
    ok("score", "--db", pooled, "-e", "chars4", "-e", "tiktoken:cl100k_base", "-q")
    assert no_sockets == []
