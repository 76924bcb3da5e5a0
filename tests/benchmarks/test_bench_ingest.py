"""The ingest benchmark harness: a reproducible corpus, cold and warm runs, and the edited-file check."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import pytest
from benchmarks import bench_ingest as bench_ingest_module
from benchmarks.bench_ingest import bench_ingest, build_gemini_corpus, find_ccusage, find_ccusage_command
from benchmarks.harness import Quiet

from calib.synth import write_sample


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recordings") / "gemini"
    write_sample("gemini-cli", out, layout="gemini-json-parts", sessions=3, seed=11)
    return out


def _session_ids(root: Path) -> list[str]:
    return sorted(json.loads(p.read_text())["sessionId"] for p in root.rglob("session-*.json"))


def test_corpus_copies_get_their_own_session_ids_and_are_the_same_each_time(
    sources: Path, tmp_path: Path
) -> None:
    info = build_gemini_corpus(sources, tmp_path / "a", copies=3)
    again = build_gemini_corpus(sources, tmp_path / "b", copies=3)
    assert info.files == 9 and len(set(_session_ids(info.gemini_dir))) == 9
    assert _session_ids(info.gemini_dir) == _session_ids(again.gemini_dir)
    chats = [p.relative_to(info.home) for p in info.gemini_dir.rglob("session-*.json")]
    # Laid out as gemini-cli lays them out: HOME/.gemini/tmp/<project hash>/chats/session-*.json
    assert {(p.parts[:2], p.parent.name, len(p.parts)) for p in chats} == {((".gemini", "tmp"), "chats", 5)}


def test_cold_warm_and_edited_runs(sources: Path, tmp_path: Path) -> None:
    info = build_gemini_corpus(sources, tmp_path / "home", copies=2)
    before = {p: p.read_bytes() for p in info.gemini_dir.rglob("session-*.json")}
    report = bench_ingest(info.home, tmp_path / "work", repeats=1, quiet=None)
    assert report["cold_added"]["sessions"] == report["store"]["sessions"] == 6
    assert report["warm_added"] == {"sessions": 0, "calls": 0, "parts": 0, "read": 0, "unchanged": 6}
    edit = report["edit"]
    assert (edit["warm_read"], edit["warm_unchanged"], edit["equal"]) == (1, 5, True)
    assert edit["warm_store"]["calls"] == report["store"]["calls"] + 1
    assert {p: p.read_bytes() for p in before} == before  # the edited recording is put back
    assert report["ccusage_s"] is None and "cold_over_ccusage" not in report


def test_the_order_of_the_tools_turns_each_round(
    sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = build_gemini_corpus(sources, tmp_path / "home", copies=1)
    tools = {}
    for name in ("ccusage", "launcher"):
        tools[name] = tmp_path / name
        tools[name].write_text("#!/bin/sh\necho '{}'\n")
        os.chmod(tools[name], 0o755)
    started: list[str] = []
    real = bench_ingest_module.timed

    def timed(cmd: list[str], env: dict[str, str] | None = None, **kw: Any) -> bench_ingest_module.Run:
        started.append(Path(cmd[0]).name if Path(cmd[0]).name in tools else "calib")
        return real(cmd, env, **kw)

    monkeypatch.setattr(bench_ingest_module, "timed", timed)
    report = bench_ingest(
        info.home,
        tmp_path / "work",
        ccusage=str(tools["ccusage"]),
        ccusage_command=str(tools["launcher"]),
        repeats=3,
        edit_check=False,
        quiet=Quiet(max_load=2.0**10, window=0.01, timeout=0),  # settles (sync), never waits
    )
    # calib runs twice a round (cold, then warm).
    rounds = [name for name, _ in itertools.groupby(started)]
    assert rounds == [
        "ccusage",
        "launcher",
        "calib",
        "launcher",
        "calib",
        "ccusage",
        "calib",
        "ccusage",
        "launcher",
    ]
    assert len(report["ccusage_runs_s"]) == len(report["calib_cold_runs_s"]) == 3
    # every run is measured, memory included, with how busy the rest of the machine was
    for runs in report["runs"].values():
        assert len(runs) == 3
        for run in runs:
            assert run["tree_peak_mib"] >= run["max_rss_mib"] > 0
            assert set(run) >= {"s", "cpu_s", "others_load", "settle_load"}


def test_npm_launcher_is_timed_apart_from_the_native_binary(tmp_path: Path) -> None:
    native = tmp_path / "node_modules" / "@ccusage" / "ccusage-linux-x64" / "bin" / "ccusage"
    native.parent.mkdir(parents=True)
    native.write_bytes(b"\x7fELF")
    launcher = tmp_path / "node_modules" / "ccusage" / "src" / "cli.js"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/usr/bin/env node\n")
    os.chmod(native, 0o755)
    assert find_ccusage(str(launcher)) == str(native)
    assert find_ccusage_command(str(launcher)) == str(launcher)
    assert find_ccusage_command(str(native)) is None
