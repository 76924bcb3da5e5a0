"""Memory at the extremes: the peak of calib on inputs far beyond the usual, each as a fresh process.

A developer's probe, not a test (the inputs are hundreds of MB; `tests/faults/test_memory_bounds.py`
checks the same behaviour on small inputs). Probes:

- `ingest-N`: a real Claude Code log repeated to N MB as one session (each copy with uuids, message,
  request and tool ids of its own and its timestamps moved on, its root chained by `parentUuid` to the
  previous copy's last line), ingested into a new store;
- `replay`, `report`: `calib replay -e chars4` and `calib report -e chars4 --no-figures` on the store
  of the 200 MB (or the middle size's) one-session log;
- `tool-output`: one session whose one tool output is 200 MB (`--tool-output-mb`), ingested;
- `nul-tail`: a log followed by 1 GB of NUL bytes (a sparse file, as a crash leaves it), ingested.

Each run is timed by `harness.timed` (wall seconds; ru_maxrss of the largest process; the peak of the
process tree's summed PSS), its exit code and its message kept (the ingest's errors and warnings, or
the last line of stderr). Probe data lives under `.bench/extremes/` (gitignored) and is deleted at the
end unless `--keep`. Run it on an otherwise idle machine, one probe at a time (it does so itself):

    python tests/benchmarks/bench_extremes.py                    # every probe, sizes 100,200,500
    python tests/benchmarks/bench_extremes.py --probes nul-tail  # one probe
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO

if __package__ in (None, ""):  # run as a script: put tests/ on the path, as pytest's pythonpath does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Quiet, Run, calib_cmd, fresh_store, timed

PROBES = ("ingest", "replay", "report", "tool-output", "nul-tail")
DEFAULT_OUT = Path(__file__).resolve().parents[2] / ".bench" / "extremes"  # /.bench/ is gitignored
# The real log repeated: 2.4 MB, 219 calls and 752 parts a copy (200 MB: 84 copies, 18,400 calls).
DEFAULT_LOG = (
    Path(__file__).resolve().parents[3]
    / "shared/fixtures/claude-code/entireio+cli/projects/-Users-soph-Work-entire-devenv-cli"
    / "0442a060-edc3-4307-bddb-11a2951fd1a1.jsonl"
)
MB = 1 << 20

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_IDS = re.compile(rb"\b(?:msg|req|toolu|srvtoolu)_[A-Za-z0-9]+")
_STAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
_SESSION = re.compile(rb'"sessionId":"([^"]+)"')


def _stamp(raw: bytes) -> datetime:
    return datetime.fromisoformat(raw.decode().replace("Z", "+00:00"))


class _Copier:
    """Rewrites one line of the source log for copy `n`: ids of its own, timestamps moved on."""

    def __init__(self, lines: list[bytes]) -> None:
        found = _SESSION.search(b"".join(lines[:50]))
        assert found is not None, "no sessionId in the source log"
        self.session = found.group(1)
        stamps = [_stamp(m.group()) for line in lines for m in _STAMP.finditer(line)]
        self.span = (max(stamps) - min(stamps)) + timedelta(minutes=1) if stamps else timedelta(hours=1)
        self.copy = 0

    def _uuid(self, m: re.Match[bytes]) -> bytes:
        old = m.group()
        if old == self.session or not self.copy:
            return old
        tail = (int(old[24:], 16) + self.copy * 0x9E3779B97F) % (1 << 48)
        return old[:24] + f"{tail:012x}".encode()

    def _id(self, m: re.Match[bytes]) -> bytes:
        return m.group() + (f"c{self.copy}".encode() if self.copy else b"")

    def _time(self, m: re.Match[bytes]) -> bytes:
        if not self.copy:
            return m.group()
        moved = _stamp(m.group()) + self.span * self.copy
        return moved.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b"Z"

    def line(self, raw: bytes) -> bytes:
        raw = _UUID.sub(self._uuid, raw)
        raw = _IDS.sub(self._id, raw)
        return _STAMP.sub(self._time, raw)


def build_long_session(src: Path, target: Path, megabytes: int) -> dict[str, Any]:
    """Write `src` (a Claude Code log) repeated to at least `megabytes` MB into `target`, one session."""
    lines = src.read_bytes().splitlines()
    copier = _Copier(lines)
    target.parent.mkdir(parents=True, exist_ok=True)
    size = 0
    copies = 0
    last_uuid: bytes | None = None
    with target.open("wb") as out:
        while size < megabytes * MB:
            copier.copy = copies
            rooted = False
            for raw in lines:
                record = json.loads(raw)
                if copies and record.get("type") == "summary":
                    continue  # a title line: once per file
                line = copier.line(raw)
                if copies and not rooted and "parentUuid" in record and record["parentUuid"] is None:
                    # the copy's root continues the previous copy's last line: one conversation
                    line = line.replace(b'"parentUuid":null', b'"parentUuid":"' + last_uuid + b'"', 1)
                    rooted = True
                uid = json.loads(line).get("uuid")
                if isinstance(uid, str):
                    last_uuid = uid.encode()
                out.write(line + b"\n")
                size += len(line) + 1
            copies += 1
    return {"bytes": size, "copies": copies}


def build_big_tool_output(src: Path, target: Path, megabytes: int) -> dict[str, Any]:
    """Write `src` with its first tool output replaced by one of `megabytes` MB of text lines."""
    target.parent.mkdir(parents=True, exist_ok=True)
    marker = "\x00BIG\x00"
    done = False
    with target.open("wb") as out:
        for raw in src.read_bytes().splitlines():
            record = json.loads(raw)
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if not done and record.get("type") == "user" and isinstance(content, list):
                results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if results:
                    results[0]["content"] = marker
                    record.pop("toolUseResult", None)
                    head, tail = json.dumps(record, separators=(",", ":")).split(json.dumps(marker)[1:-1])
                    out.write(head.encode())
                    _write_text(out, megabytes * MB)
                    out.write(tail.encode() + b"\n")
                    done = True
                    continue
            out.write(raw + b"\n")
    assert done, "no tool output in the source log"
    return {"bytes": target.stat().st_size}


def _write_text(out: BinaryIO, size: int) -> None:
    """`size` bytes of numbered output lines, JSON-escaped (newlines as \\n)."""
    written = 0
    n = 0
    while written < size:
        block = "".join(f"{i:09d} build step output: compiled module ok\\n" for i in range(n, n + 20_000))
        n += 20_000
        data = block.encode()[: size - written]
        if data.endswith(b"\\"):
            data = data[:-1]  # never a lone escape
        out.write(data)
        written += len(data)


def build_nul_tail(src: Path, target: Path, tail_bytes: int) -> dict[str, Any]:
    """Copy `src` to `target` and extend it with `tail_bytes` NUL bytes (sparse: no disk used)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, target)
    size = target.stat().st_size
    os.truncate(target, size + tail_bytes)
    return {"bytes": size + tail_bytes, "log_bytes": size}


def _measure(cmd: list[str], work: Path, quiet: Quiet | None) -> tuple[Run, str]:
    """Run `cmd` (whatever its exit) and return its figures and its stderr."""
    err = work / "stderr.txt"
    # exec: the shell becomes the command, so the measured process is calib itself
    wrapped = ["sh", "-c", 'exec "$@" 2>"$0"', str(err), *cmd]
    run = timed(wrapped, quiet=quiet, ok=range(-64, 256))
    text = err.read_text(errors="replace") if err.exists() else ""
    err.unlink(missing_ok=True)
    return run, text


def _message(run: Run, stderr: str) -> str:
    """What the command said: the ingest's errors and warnings (JSON), else stderr's last line."""
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and ("errors" in doc or "warnings" in doc):
        said = [e["message"] for e in doc.get("errors", []) + doc.get("warnings", [])]
        counts = f"sessions {doc.get('sessions')}, calls {doc.get('calls')}, parts {doc.get('parts')}"
        return "; ".join([counts, *said])
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _row(probe: str, what: str, argv: list[str], run: Run, stderr: str) -> dict[str, Any]:
    return {
        "probe": probe,
        "input": what,
        "exit": run.returncode,
        "s": round(run.seconds, 2),
        "max_rss_mib": round(run.max_rss_kib / 1024),
        "tree_peak_mib": round(run.tree_peak_kib / 1024),
        "message": _message(run, stderr)[:400],
        "argv": " ".join(["calib", *argv]),
    }


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_probes(
    src: Path,
    out: Path,
    *,
    probes: Sequence[str],
    sizes: Sequence[int],
    tool_output_mb: int,
    nul_tail_mb: int,
    quiet: Quiet | None,
    keep: bool,
) -> list[dict[str, Any]]:
    """Build each probe's input under `out`, run it, and return one row of figures per run."""
    out.mkdir(parents=True, exist_ok=True)
    calib = calib_cmd()
    rows: list[dict[str, Any]] = []
    store_size = 200 if 200 in sizes else sorted(sizes)[len(sizes) // 2]

    def note(row: dict[str, Any]) -> None:
        rows.append(row)
        _log(
            f"{row['probe']} {row['input']}: exit {row['exit']}, {row['s']} s, {row['max_rss_mib']} MB "
            f"(tree {row['tree_peak_mib']} MB) {row['message'][:160]}"
        )

    def ingest(probe: str, what: str, folder: Path, db: Path) -> None:
        fresh_store(db)
        cmd = [*calib, "ingest", str(folder), "--db", str(db), "-q", "--json"]
        run, stderr = _measure(cmd, out, quiet)
        note(_row(probe, what, cmd[len(calib) :], run, stderr))

    try:
        needs_store = {"replay", "report"} & set(probes)
        for megabytes in sorted(set(sizes) | ({store_size} if needs_store else set())):
            if "ingest" not in probes and megabytes != store_size:
                continue
            folder = out / f"long-{megabytes}" / "projects" / "-bench-long-session"
            built = build_long_session(src, folder / src.name, megabytes)
            db = out / f"long-{megabytes}.duckdb"
            what = f"one session, {built['bytes'] / MB:.0f} MB ({built['copies']} copies)"
            if "ingest" in probes and megabytes in sizes:
                ingest("ingest", what, folder, db)
            else:
                fresh_store(db)
                timed([*calib, "ingest", str(folder), "--db", str(db), "-q"], ok=range(-64, 256))
            shutil.rmtree(folder.parents[1])
            if megabytes == store_size:
                for name in ("replay", "report"):
                    if name not in probes:
                        continue
                    cmd = [*calib, name, "--db", str(db), "-e", "chars4", "-q"]
                    if name == "report":
                        cmd += ["--no-figures", "--out", str(out / "report")]
                    run, stderr = _measure(cmd, out, quiet)
                    note(_row(name, f"the {megabytes} MB one-session store", cmd[len(calib) :], run, stderr))
                    shutil.rmtree(out / "report", ignore_errors=True)
            if not keep:
                fresh_store(db)
        if "tool-output" in probes:
            folder = out / "tool-output" / "projects" / "-bench-tool-output"
            build_big_tool_output(src, folder / src.name, tool_output_mb)
            db = out / "tool-output.duckdb"
            ingest("tool-output", f"one {tool_output_mb} MB tool output", folder, db)
            if not keep:
                shutil.rmtree(folder.parents[1])
                fresh_store(db)
        if "nul-tail" in probes:
            folder = out / "nul-tail" / "projects" / "-bench-nul-tail"
            build_nul_tail(src, folder / src.name, nul_tail_mb * MB)
            db = out / "nul-tail.duckdb"
            ingest(
                "nul-tail", f"a {src.stat().st_size / MB:.1f} MB log + {nul_tail_mb} MB of NUL", folder, db
            )
            if not keep:
                shutil.rmtree(folder.parents[1])
                fresh_store(db)
    finally:
        if not keep:
            for path in out.glob("*"):
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                elif path.suffix != ".json" and path.suffix != ".md":
                    path.unlink(missing_ok=True)
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a Markdown table."""
    out = ["| probe | input | exit | wall s | peak MB (largest process) | peak MB (tree PSS) | message |"]
    out.append("|---|---|---|---|---|---|---|")
    for r in rows:
        message = r["message"].replace("|", "\\|")
        out.append(
            f"| {r['probe']} | {r['input']} | {r['exit']} | {r['s']} | {r['max_rss_mib']} | "
            f"{r['tree_peak_mib']} | {message} |"
        )
    return "\n".join(out) + "\n"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _names(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = set(names) - set(PROBES)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown probes {sorted(unknown)}; use some of {', '.join(PROBES)}")
    return names


def main(argv: list[str] | None = None) -> int:
    """`python tests/benchmarks/bench_extremes.py`: run the probes, print a JSON list and a table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=DEFAULT_LOG, help="the Claude Code log to repeat")
    parser.add_argument(
        "--probes", type=_names, default=list(PROBES), help=f"comma-separated: {','.join(PROBES)}"
    )
    parser.add_argument("--sizes", type=_ints, default=[100, 200, 500], help="MB of the one-session logs")
    parser.add_argument("--tool-output-mb", type=int, default=200, help="MB of the one big tool output")
    parser.add_argument("--nul-tail-mb", type=int, default=1024, help="MB of NUL bytes after the log")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="work folder (gitignored .bench/)")
    parser.add_argument("--keep", action="store_true", help="keep the inputs and stores")
    parser.add_argument("--no-settle", action="store_true", help="start each run without waiting for idle")
    args = parser.parse_args(argv)
    if not args.src.is_file():
        parser.error(f"no log at {args.src} (clone the project with ../shared beside it, or --src)")
    rows = run_probes(
        args.src,
        args.out.resolve(),
        probes=args.probes,
        sizes=args.sizes,
        tool_output_mb=args.tool_output_mb,
        nul_tail_mb=args.nul_tail_mb,
        quiet=None if args.no_settle else Quiet(max_load=0.5, timeout=20),
        keep=args.keep,
    )
    (args.out / "report.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "report.md").write_text(markdown(rows))
    print(json.dumps(rows, indent=2))
    print()
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
