"""Ingest benchmark: a reproducible gemini-cli corpus, cold and warm `calib ingest`, ccusage beside it.

The corpus is the real gemini-cli recordings under `../shared/fixtures/gemini` (or any folder of
them) copied `copies` times, each copy under a project folder of its own and with its own session ids,
laid out as gemini-cli lays them out: `HOME/.gemini/tmp/<hash>/chats/session-<time>-<id8>.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Fixed namespace so that the same source and copy number always give the same session id.
_NAMESPACE = uuid.UUID("6f1d2c4e-9a57-4b8e-8c3d-2b7a0e5f4c19")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
_START_TIME = re.compile(rb'"startTime"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d)')


@dataclass(frozen=True)
class CorpusInfo:
    """What `build_gemini_corpus` wrote: the HOME folder, its `.gemini` folder, file count and bytes."""

    home: Path
    files: int
    bytes: int

    @property
    def gemini_dir(self) -> Path:
        """The `.gemini` folder, the path to hand to `calib ingest`."""
        return self.home / ".gemini"


def _sources(src: Path) -> list[Path]:
    """The gemini-cli recordings under `src`: JSON files with a top-level sessionId and messages."""
    found = []
    for path in sorted(src.rglob("*.json")):
        head = path.read_bytes()[:4096]
        if _SESSION_ID.search(head) and b'"messages"' in path.read_bytes():
            found.append(path)
    return found


def project_hash(copy: int) -> str:
    """The `tmp/<hash>` folder name of copy `copy` (sha256, as gemini-cli names project folders)."""
    return hashlib.sha256(f"/bench/project-{copy:03d}".encode()).hexdigest()


def build_gemini_corpus(src: Path, home: Path, copies: int = 20) -> CorpusInfo:
    """Write `copies` copies of the recordings under `src` into `home/.gemini/tmp/<hash>/chats/`.

    Every original sessionId maps, per copy, to a new UUID derived from it and the copy number (so a
    sub-agent still shares its parent's id within a copy, as gemini-cli wrote it); the file name takes
    the new id's first 8 characters. The output is byte-for-byte the same on every run.
    """
    sources = _sources(src)
    if not sources:
        raise FileNotFoundError(f"no gemini-cli recordings under {src}")
    tmp = home / ".gemini" / "tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    total = files = 0
    for copy in range(copies):
        chats = tmp / project_hash(copy) / "chats"
        chats.mkdir(parents=True)
        for path in sources:
            data = path.read_bytes()
            match = _SESSION_ID.search(data)
            assert match is not None
            old = match.group(1)
            new = str(uuid.uuid5(_NAMESPACE, f"{old.decode()}:{copy}")).encode()
            data = data.replace(old, new)  # same length: a UUID for a UUID
            start = _START_TIME.search(data)
            stamp = start.group(1).decode().replace(":", "-") if start else "2026-01-01T00-00"
            name = f"session-{stamp}-{new[:8].decode()}.json"
            target = chats / name
            n = 1
            while target.exists():  # two recordings that started in the same minute
                target = chats / f"session-{stamp}-{new[:8].decode()}.{n}.json"
                n += 1
            target.write_bytes(data)
            files += 1
            total += len(data)
    return CorpusInfo(home, files, total)


def corpus_bytes(root: Path) -> tuple[int, int]:
    """(files, bytes) of every regular file under `root`."""
    files = size = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(dirpath, name))
    return files, size


def default_fixtures() -> Path:
    """`../shared/fixtures/gemini` beside the project checkout (the real recordings)."""
    return Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "gemini"


# -- timing ------------------------------------------------------------------------------------------


def find_ccusage(explicit: str | None = None) -> str | None:
    """The ccusage executable: `explicit`, `$CALIB_CCUSAGE`, or `ccusage` on PATH.

    When that is npm's JavaScript launcher, the native binary it would start is used instead, so
    that node's own start-up is not counted against ccusage.
    """
    found = explicit or os.environ.get("CALIB_CCUSAGE") or shutil.which("ccusage")
    if not found:
        return None
    path = Path(found).resolve()
    if path.suffix in (".js", ".mjs") or path.read_bytes()[:2] == b"#!":
        for parent in path.parents:
            native = sorted(parent.glob("node_modules/@ccusage/ccusage-*/bin/ccusage"))
            native += sorted(parent.glob("@ccusage/ccusage-*/bin/ccusage"))
            if native:
                return str(native[0])
    return str(path)


def find_ccusage_command(explicit: str | None = None) -> str | None:
    """The `ccusage` command as a user types it, when it is npm's node launcher (else None).

    Timed beside the native binary: what a user of the npm package waits for includes node.
    """
    found = explicit or os.environ.get("CALIB_CCUSAGE") or shutil.which("ccusage")
    if not found:
        return None
    native = find_ccusage(found)
    return None if native is None or Path(native) == Path(found).resolve() else found


@dataclass
class Run:
    """One timed command: wall seconds, peak RSS (KiB, of it or any process it waited for), stdout."""

    seconds: float
    max_rss_kib: int
    stdout: bytes


def timed(cmd: list[str], env: dict[str, str] | None = None) -> Run:
    """Run `cmd` (its stdout to a temporary file, stderr discarded) and measure it."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        # wait4 gives this child's own rusage; its ru_maxrss covers the workers it waited for too.
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        data = out.read()
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    return Run(seconds, int(usage.ru_maxrss), data)


def calib_cmd() -> list[str]:
    """How to start the `calib` CLI of this interpreter."""
    exe = Path(sys.executable).with_name("calib")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "calib"]


def _fresh(db: Path) -> None:
    for suffix in ("", ".wal", ".ingest.json"):
        Path(str(db) + suffix).unlink(missing_ok=True)


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


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def bench_ingest(
    home: Path,
    work: Path,
    *,
    ccusage: str | None = None,
    ccusage_command: str | None = None,
    repeats: int = 5,
    edit_check: bool = True,
) -> dict[str, Any]:
    """Time `calib ingest` cold and warm on the corpus under `home`, side by side with ccusage.

    Each round runs ccusage, and calib into a new store (cold) then again on that store (warm, nothing
    changed), so that they share whatever else the machine is doing; the order turns from round to
    round. Medians over `repeats` rounds. `ccusage` is its native binary; `ccusage_command`, when
    given, is the npm launcher that starts it (node included), timed in the same rounds. Then (if
    `edit_check`) one file gains a message: the warm run must read only it, and the store must equal
    a cold ingest of the edited corpus (row counts and sum of ctx).
    """
    gemini = home / ".gemini"
    files, size = corpus_bytes(gemini)
    work.mkdir(parents=True, exist_ok=True)
    db = work / "bench.duckdb"
    cmd = [*calib_cmd(), "ingest", str(gemini), "--db", str(db), "--json", "-q"]
    ccu_cmd = [ccusage, "gemini", "session", "--json", "--offline"] if ccusage else None
    launcher_cmd = [ccusage_command, *ccu_cmd[1:]] if ccu_cmd and ccusage_command else None
    ccu_env = dict(os.environ, HOME=str(home))
    cold: list[float] = []
    warm: list[float] = []
    ccu: list[float] = []
    launcher: list[float] = []
    cold_doc: dict[str, Any] = {}
    warm_doc: dict[str, Any] = {}

    def run_ccusage() -> None:
        if ccu_cmd:
            ccu.append(timed(ccu_cmd, ccu_env).seconds)

    def run_launcher() -> None:
        if launcher_cmd:
            launcher.append(timed(launcher_cmd, ccu_env).seconds)

    def run_calib() -> None:
        nonlocal cold_doc, warm_doc
        _fresh(db)
        run = timed(cmd)
        cold.append(run.seconds)
        cold_doc = json.loads(run.stdout)
        run = timed(cmd)
        warm.append(run.seconds)
        warm_doc = json.loads(run.stdout)

    steps = [run_ccusage, run_launcher, run_calib]
    for round_ in range(repeats):
        # The order turns each round, so that no tool always runs right after another.
        for step in steps[round_ % 3 :] + steps[: round_ % 3]:
            step()
    _fresh(db)
    cold_rss = timed(cmd).max_rss_kib
    totals = store_totals(db)
    report: dict[str, Any] = {
        "corpus": {"path": str(gemini), "files": files, "bytes": size},
        "commands": {
            "calib": " ".join(cmd),
            "ccusage": f"HOME={home} {' '.join(ccu_cmd)}" if ccu_cmd else None,
            "ccusage_command": f"HOME={home} {' '.join(launcher_cmd)}" if launcher_cmd else None,
        },
        "repeats": repeats,
        "calib_cold_s": _median(cold),
        "calib_warm_s": _median(warm),
        "calib_cold_mb_s": size / 1e6 / _median(cold),
        "calib_cold_runs_s": cold,
        "calib_warm_runs_s": warm,
        "cold_added": {k: cold_doc.get(k) for k in ("sessions", "calls", "parts")},
        "warm_added": {k: warm_doc.get(k) for k in ("sessions", "calls", "parts", "read", "unchanged")},
        "cold_peak_rss_mib": cold_rss / 1024,
        "store_mib": os.path.getsize(db) / 2**20,
        "store": totals,
        "ccusage_s": _median(ccu) if ccu else None,
        "ccusage_runs_s": ccu,
        "ccusage_command_s": _median(launcher) if launcher else None,
        "ccusage_command_runs_s": launcher,
    }
    if ccu:
        report["cold_over_ccusage"] = report["calib_cold_s"] / report["ccusage_s"]
        report["warm_over_ccusage"] = report["calib_warm_s"] / report["ccusage_s"]
    if launcher:
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
        warm_doc = json.loads(timed(cmd).stdout)
        warm_totals = store_totals(db)
        cold_db = work / "edited-cold.duckdb"
        _fresh(cold_db)
        cold_cmd = [*cmd[:3], "--db", str(cold_db), "--json", "-q"]
        timed(cold_cmd)
        cold_totals = store_totals(cold_db)
        _fresh(cold_db)
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
    parser.add_argument("--out", type=Path, default=Path(".bench/ingest"), help="where to build it all")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ccusage", default=None, help="ccusage executable (default: on PATH)")
    parser.add_argument("--no-edit", action="store_true", help="skip the edited-file check")
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
    )
    report["copies"] = args.copies
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
