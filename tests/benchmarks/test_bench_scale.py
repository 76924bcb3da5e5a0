"""The scale benchmark harness and its process-tree memory sampler (no timing is asserted)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from benchmarks import bench_scale as bench_scale_module
from benchmarks.bench_scale import COMMANDS, DEFAULT_COMMANDS, bench_scale, markdown, merged
from benchmarks.harness import (
    Quiet,
    build_gemini_corpus,
    copy_store,
    move_store,
    project_hash,
    settle,
    timed,
    tree_pss_kib,
)
from helpers import shared_fixture

from calib.synth import write_sample

MIB = 1024

# A parent holding 40 MiB forks a child that allocates 100 MiB and forks a grandchild that allocates
# 50 MiB; all three hold their memory for a while, then each waits for its child.
_FAMILY = """
import os, sys, time
hold = float(sys.argv[1])
parent = b"p" * (40 << 20)
if sys.argv[2] == "fork":
    pid = os.fork()
    if pid == 0:
        child = b"c" * (100 << 20)
        grand = os.fork()
        if grand == 0:
            grandchild = b"g" * (50 << 20)
            time.sleep(hold)
            os._exit(0)
        time.sleep(hold)
        os.waitpid(grand, 0)
        os._exit(0)
    time.sleep(hold)
    os.waitpid(pid, 0)
else:
    time.sleep(hold)
"""


def test_the_tree_sampler_sees_the_memory_of_forked_children(tmp_path: Path) -> None:
    script = tmp_path / "family.py"
    script.write_text(_FAMILY)
    alone = timed([sys.executable, str(script), "0.3", "alone"])
    family = timed([sys.executable, str(script), "1.5", "fork"], interval=0.02)
    assert family.samples > 3
    # ru_maxrss is the largest single process: the child, which holds 100 MiB besides the parent's.
    assert family.max_rss_kib > alone.max_rss_kib + 90 * MIB
    # The tree's sum holds all three at once: their 190 MiB, each page once, though the child's and
    # the grandchild's RSS also hold the pages they share with their parents (a summed RSS of 400 MiB).
    assert family.tree_peak_kib > alone.max_rss_kib + 140 * MIB
    assert family.tree_peak_kib < alone.max_rss_kib + 200 * MIB
    assert tree_pss_kib(os.getpid()) > 0
    assert tree_pss_kib(2**22 + 12345) == 0  # no such process


def test_settle_flushes_and_reports_how_busy_the_machine_is() -> None:
    load = settle(Quiet(max_load=2.0**10, window=0.05, timeout=0))
    if Path("/proc/stat").exists():
        assert load is not None and load >= 0
    else:
        assert load is None


def test_stores_are_copied_and_moved_with_what_lies_beside_them(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.duckdb", tmp_path / "b.duckdb", tmp_path / "c.duckdb"
    a.write_text("store")
    Path(f"{a}.ingest.json").write_text("{}")
    Path(f"{b}.wal").write_text("stale")  # replaced: b becomes a copy of a, nothing more
    copy_store(a, b)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.duckdb",
        "a.duckdb.ingest.json",
        "b.duckdb",
        "b.duckdb.ingest.json",
    ]
    move_store(b, c)
    assert not b.exists() and c.read_text() == "store" and Path(f"{c}.ingest.json").read_text() == "{}"


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("recordings") / "gemini"
    write_sample("gemini-cli", out, layout="gemini-json-parts", sessions=4, seed=11)
    return out


def _texts(record: object) -> list[str]:
    """Every string of at least 80 characters in a parsed recording."""
    if isinstance(record, str):
        return [record] if len(record) >= 80 else []
    if isinstance(record, dict):
        return [t for v in record.values() for t in _texts(v)]
    if isinstance(record, list):
        return [t for v in record for t in _texts(v)]
    return []


def test_distinct_texts_give_each_copy_texts_of_its_own(sources: Path, tmp_path: Path) -> None:
    copied = build_gemini_corpus(sources, tmp_path / "copied", copies=3)
    distinct = build_gemini_corpus(sources, tmp_path / "distinct", copies=3, distinct_texts=True)
    texts: dict[str, list[set[str]]] = {}
    for name, info in (("copied", copied), ("distinct", distinct)):
        per_copy = []
        for copy in range(3):
            project = info.gemini_dir / "tmp" / project_hash(copy)
            records = [json.loads(p.read_bytes()) for p in sorted(project.rglob("session-*.json"))]
            per_copy.append({t for r in records for t in _texts(r)})
        texts[name] = per_copy
    # the same files, sessions and first copy; only the later copies' long texts differ
    assert distinct.files == copied.files
    assert texts["copied"][0] == texts["distinct"][0] and texts["copied"][0]
    assert texts["copied"][0] == texts["copied"][1] == texts["copied"][2]
    assert not texts["distinct"][0] & texts["distinct"][1] and not texts["distinct"][1] & texts["distinct"][2]
    assert {t.rsplit(" #", 1)[0] for t in texts["distinct"][2]} == texts["copied"][0]


def _fake_ccusage(folder: Path) -> str:
    """A stand-in for ccusage that prints an empty session report."""
    exe = folder / "ccusage"
    exe.write_text("#!/bin/sh\necho '{\"sessions\": []}'\n")
    exe.chmod(0o755)
    return str(exe)


def _check_report(report: dict[str, Any], scales: list[int], commands: list[str]) -> None:
    assert [s["scale"] for s in report["scales"]] == scales
    assert report["commands"] == commands
    for s in report["scales"]:
        assert s["sessions"] > 0 and s["calls"] > 0 and s["corpus"]["bytes"] > 0
        assert set(s["commands"]) == set(commands), s["commands"]
        for name, fig in s["commands"].items():
            assert "error" not in fig, (name, fig)
            assert fig["s"] > 0 and fig["tree_peak_mib"] >= fig["max_rss_mib"] > 0
            assert len(fig["runs"]) == 1
        if "ccusage" in commands:
            assert s["cold_over_ccusage"] > 0 and s["warm_over_ccusage"] > 0
    assert set(report["growth"]) == set(commands)
    table = markdown(report)
    assert table.startswith("| scale | corpus MB | sessions | calls | " + " | ".join(commands))
    rows = [line for line in table.splitlines() if line.startswith(tuple(f"| {n}x |" for n in scales))]
    assert len(rows) == len(scales)


@pytest.mark.slow
def test_every_command_at_two_scales_of_a_synthetic_corpus(sources: Path, tmp_path: Path) -> None:
    commands = [c for c in COMMANDS if c != "score-warm"]
    report = bench_scale(
        sources,
        tmp_path / "out",
        scales=[1, 2],
        copies_per_scale=1,
        commands=commands,
        repeats=1,
        ingest_repeats=1,
        ccusage=_fake_ccusage(tmp_path),
        quiet=None,
    )
    _check_report(report, [1, 2], commands)
    one, two = report["scales"]
    assert two["sessions"] == 2 * one["sessions"] and two["calls"] == 2 * one["calls"]
    growth = report["growth"]["ingest-cold"]
    assert set(growth["us_per_call"]) == {"1", "2"}
    assert growth["tree_peak_growth"] is not None and growth["us_per_call_growth"] is not None
    assert "µs/call 1x" in markdown(report)
    # run one scale at a time, the runs merge into the same report
    runs = [{**report, "scales": [scale], "growth": {}} for scale in (two, one)]
    assert merged(runs)["growth"] == report["growth"]
    assert markdown(merged(runs)) == markdown(report)
    with pytest.raises(ValueError, match="corpora differ"):
        merged([runs[0], {**runs[1], "texts": "distinct" if report["texts"] == "copied" else "copied"}])
    with pytest.raises(ValueError, match="same scale"):
        merged([runs[0], runs[0]])
    # the corpora are deleted after their scale, unless kept
    assert not list((tmp_path / "out").glob("scale-*"))


def test_a_subset_of_commands_and_kept_corpora(sources: Path, tmp_path: Path) -> None:
    report = bench_scale(
        sources,
        tmp_path / "out",
        scales=[1],
        copies_per_scale=1,
        commands=["ingest-warm", "replay"],
        repeats=1,
        ingest_repeats=1,
        keep=True,
        quiet=None,
    )
    _check_report(report, [1], ["ingest-warm", "replay"])
    assert (tmp_path / "out" / "scale-1" / "home" / ".gemini").is_dir()
    with pytest.raises(ValueError, match="unknown commands"):
        bench_scale(sources, tmp_path / "out", commands=["ingest", "score"], quiet=None)


@pytest.mark.realdata
@pytest.mark.slow
def test_the_command_line_on_one_copy_of_the_real_fixtures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = shared_fixture("gemini")
    out = tmp_path / "out"
    argv = ["--src", str(src), "--scales", "1", "--copies-per-scale", "1", "--repeats", "1"]
    argv += ["--ingest-repeats", "1", "--out", str(out), "--ccusage", _fake_ccusage(tmp_path)]
    argv += ["--max-load", "1024", "--settle-timeout", "0"]  # settle, never wait: no timing asserted
    assert bench_scale_module.main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert printed.startswith(json.dumps(report, indent=2))
    assert printed.endswith((out / "report.md").read_text())
    _check_report(report, [1], list(DEFAULT_COMMANDS))
