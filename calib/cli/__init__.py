"""The `calib` command line: typer, one small module per command group.

Each command parses its options, calls one public library function and renders the result
(`calib.cli.app` registers them; `calib.cli.common` holds what they share). Imports inside functions
in this package have one reason, start-up time: a command imports the library it calls in its
body, and rich and the typer app itself load only when needed, so that `calib --help` and
`calib ingest` start fast.

`main`, the console script, first tries the quick paths. `calib` alone (where to start) and `calib
--version` need nothing of the framework (`calib.cli.start`). An ingest with nothing to do must cost
a small fraction of a real one, and loading the CLI framework alone costs more than checking every
file. So a plain `calib ingest PATH... [--db DB] [--json] [-q]` is checked against what the last
ingest recorded beside the store (`calib.ingest.cache`) and answered here, with the option spellings
of `calib.cli.flags` and the rendering of `calib.cli.output` that the full command uses too; anything
else (another command, any other option, something changed) goes to the typer app, which answers
`calib` and `--version` the same way.
"""

from __future__ import annotations

import os
import sys

from calib.cli import flags
from calib.cli.output import emit_ingest
from calib.cli.start import START, version_line
from calib.core.errors import CalibError
from calib.store import default_db_path

_SWITCHES = {**dict.fromkeys(flags.JSON, "json"), **dict.fromkeys(flags.QUIET, "quiet")}


def _quick_answer(argv: list[str]) -> int | None:
    """Exit code of `calib` alone or `calib --version`, answered without the framework, else None."""
    if not argv:
        print(START)
        return 0
    if len(argv) == 1 and argv[0] in flags.VERSION:
        print(version_line())
        return 0
    return None


def _quick_ingest(argv: list[str]) -> int | None:
    """Exit code of `calib ingest` when the quick check settles it, else None."""
    if not argv or argv[0] != "ingest":
        return None
    paths: list[str] = []
    db: str | None = None
    seen: set[str] = set()
    args = iter(argv[1:])
    for arg in args:
        name, equals, value = arg.partition("=")
        if arg in _SWITCHES:
            seen.add(_SWITCHES[arg])
        elif arg in flags.DB:
            db = next(args, None)
            if db is None:
                return None
        elif equals and name.startswith("--") and name in flags.DB:
            db = value
        elif arg.startswith("-"):  # any other option, and `--`: the full command decides
            return None
        else:
            paths.append(arg)
    if not paths or "" in paths:
        # The default folders need every importer loaded to be found; an empty path is the full
        # command's usage error.
        return None
    from calib.ingest.cache import unchanged_since_last_ingest
    from calib.ingest.result import IngestResult

    try:
        store = db or default_db_path()
    except CalibError:  # `$CALIB_DB` under a `~user` that does not exist: the full command says so
        return None
    same = unchanged_since_last_ingest(paths, store)
    if same is None:
        return None
    emit_ingest(IngestResult(**same), "json" in seen)
    return 0


def _tune_malloc() -> None:
    """Ask glibc's malloc to give freed memory back: DuckDB's and Arrow's worker threads otherwise
    leave it spread over one arena per thread, and a long `calib score` grew by tens of MB per batch
    of sessions that it no longer held (peak RSS on a 4x corpus: 891 MB, 696 MB with this)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return
    m_trim_threshold, m_arena_max = -1, -8
    mallopt(m_arena_max, 1)
    mallopt(m_trim_threshold, 0)


def main() -> None:
    """Console-script entry point."""
    code = _quick_answer(sys.argv[1:])
    if code is None:
        code = _quick_ingest(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    _tune_malloc()
    # polars' own allocator (jemalloc) keeps freed pages for seconds, while DuckDB builds the next batch
    # of sessions: returned at once, the peak of `calib report` on a 3 GB store is 510 MB, not 590 MB.
    # (Read when polars loads, which no command has done yet.)
    os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
    # numpy, which pyarrow loads, starts an OpenBLAS thread per core that spins for a while: an
    # ingest multiplies no matrices, and the least-squares fits of `calib fit` are too small to gain.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from calib.cli.app import main as cli_main

    cli_main()
