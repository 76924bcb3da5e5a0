"""Memory at the extremes: one very long session, a log that ends in NUL bytes, a file or a line too
large for the memory there is, and DuckDB running out of its cap while storing. Small stand-ins for the
probes of `tests/benchmarks/bench_extremes.py` (hundreds of MB), fast enough for every run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest
from benchmarks.harness import timed
from faults.kit import counts, error_line, json_of, rows, run_calib

import calib
from calib.core import memory
from calib.synth import write_sample

SESSION = "5e55a0e0-0000-4000-8000-000000000001"


def write_claude_session(
    path: Path, calls: int, *, compact_every: int = 0, big_output: int = 0, session: str = SESSION
) -> Path:
    """One Claude Code transcript of `calls` calls chained by `parentUuid`, with a compaction every
    `compact_every` calls (each adds an entry to the session's meta) and, with `big_output`, a tool
    output of that many bytes at the second call."""
    ns = uuid.UUID(session)
    start = datetime(2026, 1, 1, 12, 0, 0)
    base = {
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/project",
        "sessionId": session,
        "version": "2.1.1",
        "gitBranch": "main",
    }
    lines: list[dict[str, object]] = []
    parent: str | None = None
    ctx = 12_000

    def add(kind: str, **record: object) -> str:
        line_uuid = str(uuid.uuid5(ns, f"{kind}{len(lines)}"))
        stamp = (start + timedelta(seconds=len(lines))).isoformat(timespec="milliseconds") + "Z"
        lines.append({**base, "parentUuid": parent, "uuid": line_uuid, "timestamp": stamp, **record})
        return line_uuid

    def assistant(i: int, content: list[dict[str, object]], output: int) -> str:
        usage = {
            "input_tokens": 10,
            "cache_read_input_tokens": ctx - 10,
            "cache_creation_input_tokens": 0,
            "output_tokens": output,
        }
        message = {
            "model": "claude-opus-4-5-20251101",
            "id": f"msg_{i:06d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "end_turn",
            "usage": usage,
        }
        return add("a", type="assistant", requestId=f"req_{i:06d}", message=message)

    for i in range(calls):
        if compact_every and i and i % compact_every == 0:
            parent = add(
                "b",
                type="system",
                subtype="compact_boundary",
                content="Conversation compacted",
                level="info",
                compactMetadata={"trigger": "auto", "preTokens": ctx},
            )
            lines[-1]["parentUuid"] = None
            summary = {"role": "user", "content": f"Summary of the conversation before step {i}."}
            parent = add("s", type="user", isCompactSummary=True, message=summary)
            ctx = 12_000
        prompt = {"role": "user", "content": f"Step {i}: what does {i}.py do?"}
        parent = add("u", type="user", message=prompt)
        ctx += 40
        if big_output and i == 1:
            use = {"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "make"}}
            parent = assistant(i * 10, [use], 30)
            ctx += 30 + big_output // 4
            output = ("build step output: compiled module ok\n" * (big_output // 38 + 1))[:big_output]
            result = {"type": "tool_result", "tool_use_id": "toolu_big", "content": output}
            parent = add("r", type="user", message={"role": "user", "content": [result]})
        text = f"{i}.py adds {i} to its argument and returns it. " * 3
        parent = assistant(i * 10 + 1, [{"type": "text", "text": text}], 50)
        ctx += 50
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def peak_rss_mib(*args: str | Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """`calib ARGS` and the peak resident memory of its process tree (MiB). It is started by the
    benchmarks' small spawner process: a process forked from this one (pytest, with polars and DuckDB
    loaded) would report at least this one's memory as its own."""
    with tempfile.TemporaryDirectory() as tmp:
        err = Path(tmp) / "stderr"
        cmd = ["sh", "-c", 'exec "$@" 2>"$0"', str(err), sys.executable, "-m", "calib", *map(str, args)]
        run = timed(cmd, ok=range(256))
        result = subprocess.CompletedProcess(cmd, run.returncode, run.stdout.decode(), err.read_text())
    return result, max(run.max_rss_kib, run.tree_peak_kib) / 1024


def file_digest(path: Path) -> str:
    """sha256 of a file read in blocks (a log with a large NUL tail is never read whole here either)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


# -- one long session ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_session_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of one session of 4,000 calls with a compaction every 5 (a meta of 40 KB)."""
    root = tmp_path_factory.mktemp("long-session")
    write_claude_session(root / "logs" / "project" / f"{SESSION}.jsonl", 4000, compact_every=5)
    db = root / "calib.duckdb"
    result = run_calib("ingest", root / "logs", "--db", db, "-q")
    assert result.returncode == 0, result.stderr
    assert counts(db)["calls"] == 4000 and counts(db)["sessions"] == 1
    return db


def test_one_long_session_replays_and_reports_within_the_default_memory_cap(
    long_session_store: Path, tmp_path: Path
) -> None:
    env_limit = os.environ.pop("CALIB_MEMORY_LIMIT", None)  # the default cap, as a user runs it
    try:
        replay = run_calib("replay", "--db", long_session_store, "-e", "chars4", "--json")
        assert replay.returncode == 0, replay.stderr
        assert replay.stderr == ""
        replayed = {row["calls"] for row in json_of(replay)["summary"]}
        assert replayed == {4000}
        out = tmp_path / "report"
        report = run_calib(
            "report", "--db", long_session_store, "-e", "chars4", "--no-figures", "--out", out, "-q"
        )
        assert report.returncode == 0, report.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["store"]["calls"] == 4000
        assert {row["calls"] for row in summary["replay"]["rows"]} == {4000}
    finally:
        if env_limit is not None:
            os.environ["CALIB_MEMORY_LIMIT"] = env_limit


# -- a NUL tail ---------------------------------------------------------------------------------------

# (agent, layout): the three line logs
LINE_LOGS = [("claude-code", None), ("codex", None), ("gemini-cli", "gemini-jsonl")]
NUL_TAIL = 256 << 20  # sparse: no disk used, and never read


@pytest.mark.parametrize(("agent", "layout"), LINE_LOGS, ids=[a for a, _ in LINE_LOGS])
def test_a_nul_tail_is_left_out_unread_with_a_true_warning(
    agent: str, layout: str | None, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    write_sample(agent, data, sessions=2, seed=7, layout=layout)
    (data / "truth.json").unlink()
    reference = tmp_path / "reference.duckdb"
    assert run_calib("ingest", data, "--db", reference, "-q").returncode == 0

    log = max(data.rglob("*.jsonl"), key=lambda p: (p.stat().st_size, str(p)))
    content = log.read_bytes()
    assert content.endswith(b"\n")
    # the agent crashed: its last line landed without its newline, then the file system's zeros
    log.write_bytes(content[:-1])
    os.truncate(log, len(content) - 1 + NUL_TAIL)
    last_line = content.count(b"\n")
    before = file_digest(log)

    db = tmp_path / "calib.duckdb"
    result, peak = peak_rss_mib("ingest", data, "--db", db, "--json")
    assert result.returncode == 0, result.stderr
    message = (
        f"{NUL_TAIL:,} NUL bytes after the last line ({agent} may have crashed); left out "
        f"({log}:{last_line}); the lines before them were imported"
    )
    doc = json_of(result)
    assert doc["warnings"] == [{"path": str(log), "line": last_line, "message": message}]
    assert doc["errors"] == []
    assert result.stderr.splitlines() == [f"Warning: {message}"]
    assert rows(db) == rows(reference)  # every line, the last one too
    assert peak < NUL_TAIL / (1 << 20)  # the tail was never read into memory
    assert file_digest(log) == before  # read, never written


# -- a file or a line too large for the memory there is ------------------------------------------------


@pytest.fixture
def three_small_and_one_big(tmp_path: Path) -> tuple[Path, Path]:
    """(folder, big log): three small Claude Code sessions and a long one of 1,500 calls."""
    data = tmp_path / "data"
    write_sample("claude-code", data, sessions=3, seed=11)
    (data / "truth.json").unlink()
    big = write_claude_session(data / "projects" / "-work-big" / f"{SESSION}.jsonl", 1500, big_output=300_000)
    return data, big


def test_a_log_too_large_for_the_memory_available_fails_alone_before_it_is_read(
    three_small_and_one_big: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, big = three_small_and_one_big
    size = big.stat().st_size
    # Reading a Claude Code transcript takes about 3 times its size: let 2 times its size be free.
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * size)
    monkeypatch.setattr(memory, "CHECK_FROM", 0)  # the file is small: have it checked all the same
    result = calib.ingest_sessions([data], db=tmp_path / "calib.duckdb", workers=1)
    mb = 1 << 20
    message = (
        f"this file is {size / mb:.1f} MB, and reading it takes about {3 * size / mb:.1f} MB of memory; "
        f"{2 * size / mb:.1f} MB is available ({big}); free some memory, or ingest this file on a "
        "machine with more; other files were still imported"
    )
    assert [str(e) for e in result.errors] == [message]
    assert result.sessions == 3 and result.warnings == []


def test_a_line_too_large_to_decode_fails_its_file_and_is_not_called_damaged(
    three_small_and_one_big: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, big = three_small_and_one_big
    loads = orjson.loads

    def short_of_memory(raw: bytes | str) -> object:
        # orjson's answer when it cannot allocate its buffer: a JSONDecodeError like a syntax error's
        if len(raw) > 200_000:
            raise orjson.JSONDecodeError("Not enough memory to allocate buffer for parsing", "", 0)
        return loads(raw)

    monkeypatch.setattr(orjson, "loads", short_of_memory)
    result = calib.ingest_sessions([data], db=tmp_path / "calib.duckdb", workers=1)
    size = big.stat().st_size / (1 << 20)
    message = (
        f"not enough memory to read this file ({size:.1f} MB) ({big}); free some memory, or ingest this "
        "file on a machine with more; other files were still imported"
    )
    assert [str(e) for e in result.errors] == [message]
    assert result.warnings == []  # no line called damaged
    assert result.sessions == 3


def test_duckdb_running_out_of_memory_while_storing_says_how_to_raise_its_cap(tmp_path: Path) -> None:
    data = tmp_path / "data"
    big = write_claude_session(data / "project" / f"{SESSION}.jsonl", 3, big_output=8 << 20)
    db = tmp_path / "calib.duckdb"
    env = dict(os.environ, CALIB_MEMORY_LIMIT="4MB")
    result = subprocess.run(
        [sys.executable, "-m", "calib", "ingest", str(data), "--db", str(db), "-q"],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("Error: cannot store the rows of this source: Out of Memory Error: ")
    assert line.endswith(
        f"({big}); set CALIB_MEMORY_LIMIT to a larger size, such as 1GB; other files were still imported"
    )


# -- a session longer than a batch ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three short Claude Code sessions and one of 600 calls (a compaction every 7) in one store."""
    root = tmp_path_factory.mktemp("mixed")
    write_sample("claude-code", root / "logs", sessions=3, seed=13)
    (root / "logs" / "truth.json").unlink()
    write_claude_session(root / "logs" / "projects" / "-work-long" / f"{SESSION}.jsonl", 600, compact_every=7)
    db = root / "calib.duckdb"
    assert run_calib("ingest", root / "logs", "--db", db, "-q").returncode == 0
    return db


def test_a_session_split_across_batches_gives_the_figures_of_the_whole(mixed_store: Path) -> None:
    from calib.analysis.batches import Spool
    from calib.analysis.build import build_report
    from calib.analysis.replay import replay_store
    from calib.calibration.pipeline import run_fit
    from calib.scoring.chain import FeatureTable
    from calib.scoring.score import score_store
    from calib.store.store import Store

    names = ["chars4", "cjk"]
    calls = counts(mixed_store)["calls"]
    with Store(mixed_store) as store:
        with FeatureTable(store, names) as table:
            sizes = [batch.height for batch in table.batches(batch_calls=200)]
        assert sizes.count(200) == 3 and sum(sizes) == calls  # the short ones, then the long one in 3
        whole = build_report(store, estimators=names, fit=True, batch_rows=10**9)
        cut = build_report(store, estimators=names, fit=True, batch_rows=4 * 200)  # 3 scorers + the replay's
        assert json.dumps(cut.summary, sort_keys=True) == json.dumps(whole.summary, sort_keys=True)
        assert cut.scores.equals(whole.scores)
        assert whole.timeline is not None and cut.timeline is not None and cut.timeline.equals(whole.timeline)
        tallies = []
        for size in (10**9, 200):
            with Spool() as spool:
                tally = replay_store(store, names, rules=["own"], window="auto", spool=spool, calls=size)
                tallies.append(tally.summary())
        assert tallies[1].equals(tallies[0])
    assert score_store(mixed_store, names, batch_calls=200).equals(score_store(mixed_store, names))
    fits = [
        run_fit(db=mixed_store, base="chars4", ingest=False, out=None, holdout_fraction=0.5, batch_calls=n)
        for n in (10**9, 200)
    ]
    assert fits[1] == fits[0]
