"""The DuckDB store: schema through numbered migrations, writes of parsed rows, polars reads.

Above `calib.core` and `calib.importers`' records; below ingest, scoring and everything that reads.
"""

from calib.store.store import Store, default_db_path, open_store

__all__ = ["Store", "default_db_path", "open_store"]
