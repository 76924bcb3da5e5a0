"""Ingest benchmark: a reproducible gemini-cli corpus, cold and warm `calib ingest`, ccusage beside it.

Each tool runs as a fresh process on a settled machine (dirty pages flushed, nothing else busy; see
`harness`), the tools interleaved in rounds whose order turns, calib cold into a new store each round;
the figures are medians over the rounds. The corpus and the timing helpers live in `harness.py`.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: put tests/ on the path, as pytest's pythonpath does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    _NAMESPACE,
    CorpusInfo,
    Quiet,
    Run,
    build_gemini_corpus,
    calib_cmd,
    ccusage_args,
    corpus_bytes,
    default_fixtures,
    find_ccusage,
    find_ccusage_command,
    fresh_store,
    median,
    project_hash,
    timed,
)

__all__ = [
    "CorpusInfo",
    "Run",
    "bench_ingest",
    "build_gemini_corpus",
    "corpus_bytes",
    "find_ccusage",
    "find_ccusage_command",
    "project_hash",
    "store_totals",
    "timed",
]


def store_totals(db: Path) -> dict[str, int]:
    """Row counts of the main tables and the sum of ctx over calls."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table in ("sessions", "calls", "parts"):
            row = con.execute(f"SELECT count(*) FROM {table}").fetchone()
            out[table] = int(row[0]) if row else 0
        row = con.execute("SELECT coalesce(sum(ctx), 0) FROM calls").fetchone()
        out["ctx_sum"] = int(row[0]) if row else 0
        return out
    finally:
        con.close()


def _sessions_in(ccusage_json: bytes) -> int | None:
    """How many sessions ccusage's `session --json` report lists (None if it is not that report)."""
    try:
        return len(json.loads(ccusage_json)["sessions"])
    except (ValueError, KeyError, TypeError):
        return None


def bench_ingest(
    home: Path,
    work: Path,
    *,
    ccusage: str | None = None,
    ccusage_command: str | None = None,
    repeats: int = 5,
    edit_check: bool = True,
    quiet: Quiet | None = Quiet(),  # noqa: B008  (frozen)
) -> dict[str, Any]:
    """Time `calib ingest` cold and warm on the corpus under `home`, side by side with ccusage.

    Each round runs ccusage, and calib into a new store (cold) then again on that store (warm, nothing
    changed); the order of the tools turns from round to round, so that none always runs right after
    another. Every run is a fresh process started on a settled machine (`quiet`; None: no waiting,
    for tests). Medians over `repeats` rounds. `ccusage` is its native binary; `ccusage_command`,
    when given, is the npm launcher that starts it (node included), timed in the same rounds. Then
    (if `edit_check`) one file gains a message: the warm run must read only it, and the store must
    equal a cold ingest of the edited corpus (row counts and sum of ctx).
    """
    gemini = home / ".gemini"
    files, size = corpus_bytes(gemini)
    work.mkdir(parents=True, exist_ok=True)
    db = work / "bench.duckdb"
    cmd = [*calib_cmd(), "ingest", str(gemini), "--db", str(db), "--json", "-q"]
    ccu_cmd = ccusage_args(ccusage) if ccusage else None
    launcher_cmd = [ccusage_command, *ccu_cmd[1:]] if ccu_cmd and ccusage_command else None
    ccu_env = dict(os.environ, HOME=str(home))
    runs: dict[str, list[Run]] = {"ccusage": [], "ccusage_command": [], "cold": [], "warm": []}
    cold_doc: dict[str, Any] = {}
    warm_doc: dict[str, Any] = {}

    def run_ccusage() -> None:
        if ccu_cmd:
            runs["ccusage"].append(timed(ccu_cmd, ccu_env, quiet=quiet))

    def run_launcher() -> None:
        if launcher_cmd:
            runs["ccusage_command"].append(timed(launcher_cmd, ccu_env, quiet=quiet))

    def run_calib() -> None:
        nonlocal cold_doc, warm_doc
        fresh_store(db)
        run = timed(cmd, quiet=quiet, ok=(0, 1))
        runs["cold"].append(run)
        cold_doc = json.loads(run.stdout)
        run = timed(cmd, quiet=quiet, ok=(0, 1))
        runs["warm"].append(run)
        warm_doc = json.loads(run.stdout)

    steps = [run_ccusage, run_launcher, run_calib]
    for round_ in range(repeats):
        # The order turns each round, so that no tool always runs right after another.
        for step in steps[round_ % 3 :] + steps[: round_ % 3]:
            step()
    totals = store_totals(db)

    def seconds(name: str) -> float | None:
        return median([r.seconds for r in runs[name]]) if runs[name] else None

    report: dict[str, Any] = {
        "corpus": {"path": str(gemini), "files": files, "bytes": size},
        "commands": {
            "calib": " ".join(cmd),
            "ccusage": f"HOME={home} {' '.join(ccu_cmd)}" if ccu_cmd else None,
            "ccusage_command": f"HOME={home} {' '.join(launcher_cmd)}" if launcher_cmd else None,
        },
        "repeats": repeats,
        "calib_cold_s": seconds("cold"),
        "calib_warm_s": seconds("warm"),
        "calib_cold_mb_s": size / 1e6 / median([r.seconds for r in runs["cold"]]),
        "calib_cold_runs_s": [r.seconds for r in runs["cold"]],
        "calib_warm_runs_s": [r.seconds for r in runs["warm"]],
        "cold_added": {k: cold_doc.get(k) for k in ("sessions", "calls", "parts")},
        "warm_added": {k: warm_doc.get(k) for k in ("sessions", "calls", "parts", "read", "unchanged")},
        "cold_peak_rss_mib": median([r.max_rss_kib for r in runs["cold"]]) / 1024,
        "cold_tree_peak_mib": median([r.tree_peak_kib for r in runs["cold"]]) / 1024,
        "store_mib": os.path.getsize(db) / 2**20,
        "store": totals,
        "ccusage_s": seconds("ccusage"),
        "ccusage_runs_s": [r.seconds for r in runs["ccusage"]],
        "ccusage_peak_rss_mib": median([r.max_rss_kib for r in runs["ccusage"]]) / 1024
        if runs["ccusage"]
        else None,
        "ccusage_sessions": _sessions_in(runs["ccusage"][-1].stdout) if runs["ccusage"] else None,
        "ccusage_command_s": seconds("ccusage_command"),
        "ccusage_command_runs_s": [r.seconds for r in runs["ccusage_command"]],
        # Every run's figures, with how busy the rest of the machine was meanwhile (cores).
        "runs": {name: [r.figures() for r in rs] for name, rs in runs.items() if rs},
        "quiet": vars(quiet) if quiet is not None else None,
    }
    if runs["ccusage"]:
        report["cold_over_ccusage"] = report["calib_cold_s"] / report["ccusage_s"]
        report["warm_over_ccusage"] = report["calib_warm_s"] / report["ccusage_s"]
    if runs["ccusage_command"]:
        report["cold_over_ccusage_command"] = report["calib_cold_s"] / report["ccusage_command_s"]
    if edit_check:
        report["edit"] = _edit_check(gemini, db, work, cmd)
    return report


def _edit_check(gemini: Path, db: Path, work: Path, cmd: list[str]) -> dict[str, Any]:
    """Append a message to one recording; warm ingest must read only it and match a cold ingest."""
    target = sorted(gemini.rglob("session-*.json"))[0]
    original = target.read_bytes()
    stat = target.stat()
    try:
        record = json.loads(original)
        record["messages"].append(
            {
                "id": str(uuid.uuid5(_NAMESPACE, f"edit:{target.name}")),
                "timestamp": "2026-04-01T00:00:00.000Z",
                "type": "gemini",
                "content": "An appended answer.",
                "thoughts": [],
                "tokens": {
                    "input": 12345,
                    "output": 6,
                    "cached": 0,
                    "thoughts": 0,
                    "tool": 0,
                    "total": 12351,
                },
                "model": "gemini-2.5-pro",
            }
        )
        target.write_text(json.dumps(record, indent=2))
        warm_doc = json.loads(timed(cmd, ok=(0, 1)).stdout)
        warm_totals = store_totals(db)
        cold_db = work / "edited-cold.duckdb"
        fresh_store(cold_db)
        cold_cmd = [*cmd[:-4], "--db", str(cold_db), "--json", "-q"]
        timed(cold_cmd, ok=(0, 1))
        cold_totals = store_totals(cold_db)
        fresh_store(cold_db)
        return {
            "file": str(target),
            "warm_read": warm_doc.get("read"),
            "warm_unchanged": warm_doc.get("unchanged"),
            "warm_added": {k: warm_doc.get(k) for k in ("sessions", "calls", "parts")},
            "warm_store": warm_totals,
            "cold_store": cold_totals,
            "equal": warm_totals == cold_totals,
        }
    finally:
        target.write_bytes(original)
        os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def main(argv: list[str] | None = None) -> int:
    """`python tests/benchmarks/bench_ingest.py`: build the corpus and print the benchmark as JSON."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--src", type=Path, default=default_fixtures(), help="folder of real recordings")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[2] / ".bench" / "ingest",  # /.bench/ is gitignored
        help="where to build it all",
    )
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ccusage", default=None, help="ccusage executable (default: on PATH)")
    parser.add_argument("--no-edit", action="store_true", help="skip the edited-file check")
    parser.add_argument(
        "--max-load", type=float, default=Quiet.max_load, help="cores others may use before a run starts"
    )
    parser.add_argument(
        "--settle-timeout", type=float, default=Quiet.timeout, help="seconds to wait for that at most"
    )
    args = parser.parse_args(argv)
    home = args.out.resolve() / "home"
    info = build_gemini_corpus(args.src, home, args.copies)
    report = bench_ingest(
        info.home,
        args.out.resolve() / "work",
        ccusage=find_ccusage(args.ccusage),
        ccusage_command=find_ccusage_command(args.ccusage),
        repeats=args.repeats,
        edit_check=not args.no_edit,
        quiet=Quiet(max_load=args.max_load, timeout=args.settle_timeout),
    )
    report["copies"] = args.copies
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
