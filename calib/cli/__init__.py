"""The `calib` console script: answers `calib ingest` at once when nothing changed, else runs the CLI.

An ingest with nothing to do must cost a small fraction of a real one, and loading the CLI framework
alone costs more than checking every file. So a plain `calib ingest PATH... [--db DB] [--json]
[-q]` is first checked here against what the last ingest recorded beside the store; anything else
(another command, any other option, something changed) goes to `calib.cli.app` unchanged.
"""

from __future__ import annotations

import os
import sys

# Options the quick check understands; any other argument sends the command line to the full CLI.
_FLAGS = {"--json": "json", "-q": "quiet", "--quiet": "quiet"}


def _quick_ingest(argv: list[str]) -> int | None:
    """Exit code of `calib ingest` when the quick check settles it, else None."""
    if not argv or argv[0] != "ingest":
        return None
    paths: list[str] = []
    db: str | None = None
    seen: set[str] = set()
    args = iter(argv[1:])
    for arg in args:
        if arg in _FLAGS:
            seen.add(_FLAGS[arg])
        elif arg == "--db":
            db = next(args, None)
            if db is None:
                return None
        elif arg.startswith("--db="):
            db = arg[len("--db=") :]
        elif arg == "--" or arg.startswith("-"):
            return None
        else:
            paths.append(arg)
    if not paths:
        return None  # the default folders need every importer loaded to be found
    from calib.ingest.cache import unchanged_since_last_ingest
    from calib.ingest.result import IngestResult

    store = db or os.environ.get("CALIB_DB") or "calib.duckdb"
    same = unchanged_since_last_ingest(paths, store)
    if same is None:
        return None
    result = IngestResult(**same)
    if "json" in seen:
        import json

        # The same rendering as `calib.cli.app.emit_json`.
        text = json.dumps(result.to_dict(), indent=2, sort_keys=True, ensure_ascii=False, default=str)
        sys.stdout.write(text + "\n")
    else:
        sys.stdout.write(result.summary() + "\n")
    return 0


def main() -> None:
    """Console-script entry point."""
    code = _quick_ingest(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    # numpy, which pyarrow loads, starts an OpenBLAS thread per core that spins for a while: an
    # ingest multiplies no matrices, and the least-squares fits of `calib fit` are too small to gain.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from calib.cli.app import main as cli_main

    cli_main()
