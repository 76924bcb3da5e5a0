"""What the developer benchmarks share: the gemini-cli corpus, finding ccusage, timing whole processes.

The corpus is the real gemini-cli recordings under `../shared/fixtures/gemini` (or any folder of
them) copied `copies` times, each copy under a project folder of its own and with its own session ids,
laid out as gemini-cli lays them out: `HOME/.gemini/tmp/<hash>/chats/session-<time>-<id8>.json`.

Every command is timed the way a user waits for it: as a fresh process (started by a small helper
process, `spawner.py`, as a shell would, so that its ru_maxrss is its own), on a machine with nothing
else running. Before each run `settle` flushes dirty pages to disk (`os.sync`) and waits until
the other processes of the machine use less than `Quiet.max_load` cores; each `Run` records how busy
the rest of the machine was while it ran (`others_load`), so a run that shared its cores shows as such.
Memory is measured two ways: `ru_maxrss` from `os.wait4` (the largest single process: the command or
any child it waited for) and the peak of the proportional set size (PSS) summed over the whole process
tree, sampled from /proc every `SAMPLE_INTERVAL` seconds (forked workers included: what the machine
pays; a page the processes share after a fork counts once in all, where summed RSS would count it once
per process). Reading `smaps_rollup` walks the process's page tables under its memory lock: sampled
every 20 ms it made a first `calib score` of the 1x corpus 13-20% slower (8.7-9.1 s against 7.6-7.7 s
unsampled, 2026-11-28); every 100 ms the difference was within the runs' own spread (8.0-8.3 s against
8.1-8.2 s).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# -- the corpus --------------------------------------------------------------------------------------

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


def gemini_sources(src: Path) -> list[Path]:
    """The gemini-cli recordings under `src`: JSON files with a top-level sessionId and messages."""
    found = []
    for path in sorted(src.rglob("*.json")):
        data = path.read_bytes()
        if _SESSION_ID.search(data[:4096]) and b'"messages"' in data:
            found.append(path)
    return found


def project_hash(copy: int) -> str:
    """The `tmp/<hash>` folder name of copy `copy` (sha256, as gemini-cli names project folders)."""
    return hashlib.sha256(f"/bench/project-{copy:03d}".encode()).hexdigest()


def new_session_id(old: str, copy: int) -> str:
    """The session id that `old` gets in copy `copy` (a UUID, the same on every run)."""
    return str(uuid.uuid5(_NAMESPACE, f"{old}:{copy}"))


# Every JSON string, matched from the start of a document (outside strings JSON has no quote).
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
# A string of at least 80 characters is a text: longer than any id, hash, timestamp or model name.
_TEXT_MIN = 80


def _text_ends(data: bytes) -> list[int]:
    """Where the closing quote of every long JSON string of `data` is."""
    return [m.end() - 1 for m in _STRING.finditer(data) if m.end() - m.start() - 2 >= _TEXT_MIN]


def _tag_texts(data: bytes, ends: list[int], copy: int) -> bytes:
    """`data` with ` #<copy>` at the end of each long string (ends: `_text_ends(data)`)."""
    tag = f" #{copy:04d}".encode()
    pieces, start = [], 0
    for end in ends:
        pieces += [data[start:end], tag]
        start = end
    pieces.append(data[start:])
    return b"".join(pieces)


def build_gemini_corpus(
    src: Path, home: Path, copies: int = 20, *, distinct_texts: bool = False
) -> CorpusInfo:
    """Write `copies` copies of the recordings under `src` into `home/.gemini/tmp/<hash>/chats/`.

    Every original sessionId maps, per copy, to a new UUID derived from it and the copy number (so a
    sub-agent still shares its parent's id within a copy, as gemini-cli wrote it); the file name takes
    the new id's first 8 characters. The output is byte-for-byte the same on every run.

    The copies repeat the recordings' texts, so whatever calib keeps per distinct text (the count
    cache) is the same at any number of copies. With `distinct_texts`, every copy after the first
    ends each long string (80 characters or more: the messages' texts, thoughts, tool arguments and
    results) with ` #<copy>`, so that each copy's texts are its own, as a bigger corpus' would be.
    """
    sources = [(path, path.read_bytes()) for path in gemini_sources(src)]
    if not sources:
        raise FileNotFoundError(f"no gemini-cli recordings under {src}")
    ends = [_text_ends(data) if distinct_texts else [] for _, data in sources]
    tmp = home / ".gemini" / "tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    total = files = 0
    for copy in range(copies):
        chats = tmp / project_hash(copy) / "chats"
        chats.mkdir(parents=True)
        for (_, original), text_ends in zip(sources, ends, strict=True):
            if text_ends and copy:
                original = _tag_texts(original, text_ends, copy)
            match = _SESSION_ID.search(original)
            assert match is not None
            old = match.group(1)
            new = new_session_id(old.decode(), copy).encode()
            data = original.replace(old, new)  # same length: a UUID for a UUID
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


# -- the tools ---------------------------------------------------------------------------------------


# Where `make test` installs the pinned ccusage (tests/peers/package.json), when npm is on PATH.
PEERS = Path(__file__).resolve().parents[1] / "peers" / "node_modules"


def find_ccusage(explicit: str | None = None) -> str | None:
    """The ccusage executable: `explicit`, `$CALIB_CCUSAGE`, `ccusage` on PATH, or the pinned one
    `make test` installs under tests/peers (its native binary for this platform, when npm found one).

    When that is npm's JavaScript launcher, the native binary it would start is used instead, so
    that node's own start-up is not counted against ccusage.
    """
    found = explicit or os.environ.get("CALIB_CCUSAGE") or shutil.which("ccusage")
    if not found:
        pinned = sorted(PEERS.glob("@ccusage/ccusage-*/bin/ccusage"))
        return _runnable(pinned[0]) if pinned else None
    path = Path(found).resolve()
    if path.suffix in (".js", ".mjs") or path.read_bytes()[:2] == b"#!":
        for parent in path.parents:
            native = sorted(parent.glob("node_modules/@ccusage/ccusage-*/bin/ccusage"))
            native += sorted(parent.glob("@ccusage/ccusage-*/bin/ccusage"))
            if native:
                return _runnable(native[0])
    return str(path)


def _runnable(native: Path) -> str:
    """`native`, made executable if npm left it without the bit (ccusage's launcher sets it on its
    first run, which the binary started directly never had)."""
    if not os.access(native, os.X_OK):
        native.chmod(native.stat().st_mode | 0o111)
    return str(native)


def find_ccusage_command(explicit: str | None = None) -> str | None:
    """The `ccusage` command as a user types it, when it is npm's node launcher (else None).

    Timed beside the native binary: what a user of the npm package waits for includes node.
    """
    found = explicit or os.environ.get("CALIB_CCUSAGE") or shutil.which("ccusage")
    if not found:
        return None
    native = find_ccusage(found)
    return None if native is None or Path(native) == Path(found).resolve() else found


def ccusage_args(executable: str) -> list[str]:
    """ccusage's report of the gemini-cli sessions under `$HOME/.gemini`, as JSON, with no network."""
    return [executable, "gemini", "session", "--json", "--offline"]


def calib_cmd() -> list[str]:
    """How to start the `calib` CLI of this interpreter."""
    exe = Path(sys.executable).with_name("calib")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "calib"]


STORE_SUFFIXES = ("", ".wal", ".ingest.json")


def fresh_store(db: Path) -> None:
    """Remove the store `db` and what calib keeps beside it (write-ahead log, ingest record)."""
    for suffix in STORE_SUFFIXES:
        Path(str(db) + suffix).unlink(missing_ok=True)


def copy_store(src: Path, dst: Path) -> None:
    """Copy the store `src` (and what calib keeps beside it) to `dst`, replacing whatever was there."""
    fresh_store(dst)
    for suffix in STORE_SUFFIXES:
        if Path(str(src) + suffix).exists():
            shutil.copyfile(str(src) + suffix, str(dst) + suffix)


def move_store(src: Path, dst: Path) -> None:
    """Move the store `src` (and what calib keeps beside it) to `dst`, replacing whatever was there."""
    fresh_store(dst)
    for suffix in STORE_SUFFIXES:
        if Path(str(src) + suffix).exists():
            os.replace(str(src) + suffix, str(dst) + suffix)


def median(values: Sequence[float]) -> float:
    """The median, NaN for no values."""
    return statistics.median(values) if values else float("nan")


# -- the machine -------------------------------------------------------------------------------------

_CLOCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE_KIB = (os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096) // 1024
# Seconds between two samples of a process tree's PSS (see the module docstring for why not less).
SAMPLE_INTERVAL = 0.1


def busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (every core), None without /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / _CLOCK


@dataclass(frozen=True)
class Quiet:
    """How `settle` waits for an idle machine before a timed run.

    `max_load`: cores the rest of the machine may keep busy; `window`: seconds over which that is
    measured; `timeout`: seconds to wait at most (then the run starts anyway, and its `others_load`
    shows how busy the machine was).
    """

    max_load: float = 0.15
    window: float = 0.5
    timeout: float = 30.0


def settle(quiet: Quiet) -> float | None:
    """Flush dirty pages to disk and wait until the rest of the machine is idle (or `quiet.timeout`).

    Returns the load (cores busy) of the last window, None where /proc/stat is absent.
    """
    os.sync()  # the writeback of what the last run (or the corpus build) wrote must not share the run
    deadline = time.monotonic() + quiet.timeout
    while True:
        before, own = busy_seconds(), time.process_time()
        time.sleep(quiet.window)
        after = busy_seconds()
        if before is None or after is None:
            return None
        load = max(0.0, after - before - (time.process_time() - own)) / quiet.window
        if load <= quiet.max_load or time.monotonic() >= deadline:
            return load


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (of every thread of it)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def _pss_kib(pid: int) -> int:
    """The proportional set size of `pid` (its RSS where the kernel gives no PSS; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE_KIB
    except (OSError, ValueError, IndexError):
        return 0


def tree_pss_kib(pid: int) -> int:
    """PSS of `pid` and all of its descendants, summed (KiB; 0 when it is gone)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _pss_kib(p)
        todo += _children(p)
    return total


class TreePeak:
    """Samples the summed PSS of a process tree every `interval` seconds in a thread; keeps the peak."""

    def __init__(self, pid: int, interval: float = SAMPLE_INTERVAL) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tree-pss-{pid}", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak_kib = max(self.peak_kib, tree_pss_kib(self.pid))
            self.samples += 1
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Run:
    """One timed process.

    `seconds`: wall time from start to exit; `cpu_seconds`: its user + system time (and its waited-for
    children's); `max_rss_kib`: ru_maxrss (the largest single process); `tree_peak_kib`: peak of the
    summed PSS of its process tree; `samples`: how many times it was sampled;
    `others_load`: cores the rest of the machine kept busy meanwhile
    (None without /proc); `settle_load`: the same just before it started.
    """

    seconds: float
    cpu_seconds: float
    max_rss_kib: int
    tree_peak_kib: int
    others_load: float | None
    settle_load: float | None
    returncode: int
    stdout: bytes = field(repr=False)
    samples: int = 0

    def figures(self) -> dict[str, float | int | None]:
        """The measurements, for a JSON report (MiB for memory)."""
        return {
            "s": self.seconds,
            "cpu_s": self.cpu_seconds,
            "max_rss_mib": self.max_rss_kib / 1024,
            "tree_peak_mib": self.tree_peak_kib / 1024,
            "others_load": self.others_load,
            "settle_load": self.settle_load,
        }


class Spawner:
    """The small process (`spawner.py`) that starts the timed commands, so that their ru_maxrss is
    their own rather than at least this process's peak (see there). Started on first use."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None

    def _started(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            script = Path(__file__).with_name("spawner.py")
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        return self._proc

    def start(self, argv: list[str], env: dict[str, str], out: str, err: str) -> int:
        """Start `argv`; its pid."""
        proc = self._started()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"argv": argv, "env": env, "out": out, "err": err}) + "\n")
        answer = self._answer()
        if "error" in answer:
            raise FileNotFoundError(answer["error"])
        return int(answer["pid"])

    def wait(self) -> dict[str, Any]:
        """Wait for the command started last: {status, seconds, utime, stime, maxrss (KiB)}."""
        return self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the benchmark's spawner process exited")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Let the spawner process end."""
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait()
            if self._proc.stdout is not None:
                self._proc.stdout.close()
            self._proc = None


SPAWNER = Spawner()
atexit.register(SPAWNER.close)


def _executable(name: str, env: dict[str, str]) -> str:
    if os.sep in name:
        return name
    found = shutil.which(name, path=env.get("PATH"))
    if found is None:
        raise FileNotFoundError(f"{name} not found on PATH")
    return found


def timed(
    cmd: list[str],
    env: dict[str, str] | None = None,
    *,
    quiet: Quiet | None = None,
    interval: float = SAMPLE_INTERVAL,
    ok: Sequence[int] = (0,),
) -> Run:
    """Run `cmd` as a fresh process and measure it (after `settle(quiet)`, unless `quiet` is None).

    It is started by `SPAWNER` (a small process, as a shell would start it); its stdout goes to a
    temporary file (kept in `Run.stdout`), stderr to another (quoted when the exit code is not in `ok`).
    """
    settle_load = settle(quiet) if quiet is not None else None
    env = dict(os.environ if env is None else env)
    argv = [_executable(cmd[0], env), *cmd[1:]]
    with tempfile.TemporaryDirectory(prefix="calib-bench-") as tmp:
        out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        busy, own = busy_seconds(), time.process_time()
        pid = SPAWNER.start(argv, env, out, err)
        with TreePeak(pid, interval) as tree:
            done = SPAWNER.wait()
        seconds = float(done["seconds"])
        cpu = float(done["utime"]) + float(done["stime"])
        after = busy_seconds()
        others = None
        if busy is not None and after is not None:
            others = max(0.0, after - busy - cpu - (time.process_time() - own)) / seconds
        returncode = os.waitstatus_to_exitcode(int(done["status"]))
        data = Path(out).read_bytes()
        if returncode not in ok:
            tail = Path(err).read_bytes()[-2000:].decode(errors="replace")
            raise RuntimeError(f"{' '.join(cmd)} exited {returncode}:\n{tail}")
    max_rss = int(done["maxrss"])
    return Run(
        seconds=seconds,
        cpu_seconds=cpu,
        max_rss_kib=max_rss,
        # The sum is never less than its largest process: a run shorter than a sampling interval
        # (or a peak between two samples) still counts its ru_maxrss.
        tree_peak_kib=max(tree.peak_kib, max_rss),
        others_load=others,
        settle_load=settle_load,
        returncode=returncode,
        stdout=data,
        samples=tree.samples,
    )
