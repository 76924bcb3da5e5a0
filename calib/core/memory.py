"""How much memory this process can still take, and the one-line error for a file that needs more.

`available_memory` is what the kernel says could be allocated without swapping (`MemAvailable` in
/proc/meminfo), lowered to what is left under the process's cgroup limit when it has one (a container
or a systemd slice: there the machine's figure is not what the process may use). A reader that knows
how much memory a file takes per byte checks it with `check_fits` before it reads the file, so that a
file too large fails alone, with its size and the bound, rather than the machine killing the command.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from pathlib import Path

from calib.core.errors import InputError

# A cgroup limit at or above this is "no limit" (cgroup v1 writes 2**63 rounded down to a page).
_NO_LIMIT = 1 << 60

# A file that needs less memory than this is read without asking how much is available: asking reads
# /proc/meminfo and the cgroup's files, which costs more than parsing a small session (a corpus holds
# thousands), and no machine calib runs on lacks this much.
CHECK_FROM = 32 << 20

HINT = "free some memory, or ingest this file on a machine with more; other files were still imported"


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _inactive_file(stat_path: str, key: str) -> int:
    """Reclaimable page cache that a cgroup's usage counts (`inactive_file` of its memory.stat)."""
    try:
        with open(stat_path) as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == key and value.strip().isdigit():
                    return int(value)
    except OSError:
        pass
    return 0


def _cgroup_room() -> int | None:
    """Bytes left under this process's cgroup memory limit (None: no limit, or no cgroup to read)."""
    # cgroup v2 (unified), then v1, as the process sees its own cgroup mounted
    for limit_file, usage_file, stat_file, key in (
        (
            "/sys/fs/cgroup/memory.max",
            "/sys/fs/cgroup/memory.current",
            "/sys/fs/cgroup/memory.stat",
            "inactive_file",
        ),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            "/sys/fs/cgroup/memory/memory.stat",
            "total_inactive_file",
        ),
    ):
        limit = _read_int(limit_file)
        if limit is None or limit >= _NO_LIMIT:
            continue
        usage = _read_int(usage_file) or 0
        return max(0, limit - max(0, usage - _inactive_file(stat_file, key)))
    return None


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping (None where the system does not say)."""
    found = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        found = None
    room = _cgroup_room()
    if room is not None:
        found = room if found is None else min(found, room)
    return found


def megabytes(nbytes: float) -> str:
    """`nbytes` for a reader: `212 MB`, `2.5 MB` or `340 KB` (of 1,024 bytes)."""
    mb = nbytes / (1 << 20)
    if mb >= 10:
        return f"{mb:,.0f} MB"
    if mb >= 1:
        return f"{mb:.1f} MB"
    return f"{nbytes / 1024:,.0f} KB"


def check_fits(path: Path, nbytes: int, factor: float) -> None:
    """Raise `InputError` when reading the `nbytes` of the file at `path`, which takes about `factor`
    times its size in memory, needs more than the memory available (asked only from `CHECK_FROM` on)."""
    need = nbytes * factor
    if need < CHECK_FROM:
        return
    available = available_memory()
    if available is not None and need > available:
        raise InputError(
            f"this file is {megabytes(nbytes)}, and reading it takes about {megabytes(need)} of memory; "
            f"{megabytes(available)} is available",
            path=str(path),
            hint=HINT,
        )


def memory_error(path: Path, nbytes: int) -> InputError:
    """The error for a file whose read ran out of memory (its size `nbytes`, 0 when unknown)."""
    size = f" ({megabytes(nbytes)})" if nbytes else ""
    return InputError(f"not enough memory to read this file{size}", path=str(path), hint=HINT)


def give_back() -> None:
    """Hand the heap's free pages back to the system (glibc's `malloc_trim`; nothing elsewhere).

    A library that parses a big file in native code (a Hugging Face tokenizer.json: 14 MB of JSON
    leaves about 300 MB of freed parse buffers) leaves the process holding memory it no longer uses,
    which every later phase then counts on top of."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return
    trim(0)
