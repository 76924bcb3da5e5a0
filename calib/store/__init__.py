"""The DuckDB store: schema through numbered migrations, writes of parsed rows, polars reads.

This package module names only where the store lives (standard library, so that `calib ingest` with
nothing to do can find it without loading DuckDB). The store itself is `calib.store.store.Store`;
rows are laid out for it by `calib.store.columns` and written by `calib.store.writes`.
"""

from __future__ import annotations

import os
from pathlib import Path

from calib.core.home import expand_home

# The environment variable that moves the store, and the store's path when it is not set.
DB_ENV = "CALIB_DB"
DEFAULT_DB = "calib.duckdb"


def default_db_path() -> Path:
    """The store path: `$CALIB_DB` if set, else `./calib.duckdb`."""
    return expand_home(os.environ.get(DB_ENV) or DEFAULT_DB)
