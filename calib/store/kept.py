"""The counts a store opened read-only keeps aside until it closes, and then writes into itself if it can.

The reading commands open the store read-only, so that they run on a medium that cannot be written and
beside other readers (DuckDB gives a read-only open a shared lock, a read-write one an exclusive lock).
The counts scoring makes (`calib.scoring.counts`) then cannot go into the store's `text_counts`: they go
into a `text_counts` of a database in memory attached to the store's connection (attached, not
temporary, so that every cursor of the store reads it: a temporary table is its own connection's; in
DuckDB's memory, which spills to disk beyond its limit). A temporary view named `text_counts` on the
store's connection reads the stored rows with the kept ones, leaving out the stored rows of a count
source whose version changed (a writable store deletes those); the store's views that read
`text_counts` (`part_estimates`) are made again as temporary views over it. Queries on other cursors
name the same rows with `KeptCounts.sql`.

Before the store closes, `detach` writes the kept counts to a Parquet file in the temporary folder;
once it is closed, `save` writes them into the store in one transaction on a short read-write open,
adding only the counts it still lacks (another reader may have saved the same ones first). Where that
open is refused (a read-only medium, another process holding the file) they are dropped, and the next
command on the store counts those texts again. The Parquet file is deleted either way.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

COUNTS = "text_counts"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class KeptCounts:
    """The counts added to a store open read-only on `con`, kept in memory until `detach` and `save`."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        row = con.execute("SELECT current_database()").fetchone()
        assert row is not None
        self.stored = f"{_ident(row[0])}.main.{COUNTS}"  # the store's own table, whatever shadows the name
        # attached databases are shared by every connection to one DuckDB database, which two stores of
        # one process may share: the counts each store keeps need a name of their own
        self.alias = f"calib_kept_{secrets.token_hex(4)}"
        self.table = f"{self.alias}.{COUNTS}"
        self.versions = f"{self.alias}.versions"
        self.changed = False
        self.folder: Path | None = None  # where `detach` writes the kept counts
        self._stale: list[tuple[str, str]] = []  # (source, version): the version its counts must have
        # (a read-only DuckDB database refuses a database in memory unless it is attached READ_WRITE)
        con.execute(f"ATTACH ':memory:' AS {self.alias} (READ_WRITE)")
        con.execute(f"CREATE TABLE {self.table} AS SELECT * FROM {self.stored} LIMIT 0")
        con.execute(f"CREATE TABLE {self.versions} (source VARCHAR PRIMARY KEY, version VARCHAR NOT NULL)")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {COUNTS} AS {self.sql}")
        views = con.execute(
            "SELECT sql FROM duckdb_views() WHERE database_name = current_database() AND NOT temporary "
            "AND NOT internal AND sql ILIKE $name",
            {"name": f"%{COUNTS}%"},
        ).fetchall()
        for (sql,) in views:
            con.execute(sql.replace("CREATE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))

    @property
    def sql(self) -> str:
        """A query of every count the store holds now: its stored rows (but those of a source whose
        version changed since) with the kept ones; it reads the same on any cursor of the store."""
        return (
            f"SELECT s.* FROM {self.stored} s WHERE NOT EXISTS (SELECT 1 FROM {self.versions} v "
            f"WHERE v.source = s.source AND v.version <> s.version) UNION ALL SELECT * FROM {self.table}"
        )

    def forget(self, con: duckdb.DuckDBPyConnection, sources: Sequence[str], version: str) -> None:
        """Leave out every count of `sources` made with a version other than `version`."""
        for source in sources:
            con.execute(f"INSERT OR REPLACE INTO {self.versions} VALUES (?, ?)", [source, version])
        con.execute(
            f"DELETE FROM {self.table} WHERE list_contains($sources, source) AND version <> $version",
            {"sources": list(sources), "version": version},
        )
        self.changed = True

    def add(self, con: duckdb.DuckDBPyConnection, relation: str) -> None:
        """Keep the counts the query or registered table `relation` holds (`text_counts`' columns)."""
        con.execute(f"INSERT INTO {self.table} BY NAME SELECT * FROM {relation}")
        self.changed = True

    def detach(self, con: duckdb.DuckDBPyConnection, *, keep: bool) -> None:
        """Release the kept counts from the store's connection (before it closes); with `keep`, first
        write them to a file in the temporary folder, for `save`."""
        import duckdb

        try:
            if keep and self.changed:
                self.folder = Path(tempfile.mkdtemp(prefix="calib-counts-"))
                target = _literal(str(self.folder / "counts.parquet"))
                con.execute(f"COPY {self.table} TO {target} (FORMAT PARQUET)")
                self._stale = [(s, v) for s, v in con.execute(f"SELECT * FROM {self.versions}").fetchall()]
        except (duckdb.Error, OSError):
            # (no room in the temporary folder) keeping counts is worth a recount next time, not a failure
            self.discard()
            self.folder = None
        finally:
            con.execute(f"DROP VIEW IF EXISTS temp.main.{COUNTS}")
            con.execute(f"DETACH {self.alias}")

    def save(self, con: duckdb.DuckDBPyConnection) -> None:
        """Write what `detach` kept into the store open read-write on `con`, in one transaction: the
        stale counts dropped, the counts it lacks added."""
        if self.folder is None:
            return
        kept = f"read_parquet({_literal(str(self.folder / 'counts.parquet'))})"
        con.execute("BEGIN TRANSACTION")
        try:
            for source, version in self._stale:
                con.execute(f"DELETE FROM {COUNTS} WHERE source = ? AND version <> ?", [source, version])
            con.execute(
                f"INSERT INTO {COUNTS} BY NAME SELECT k.* FROM {kept} k WHERE NOT EXISTS "
                f"(SELECT 1 FROM {COUNTS} t WHERE t.source = k.source AND t.text_hash = k.text_hash)"
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def discard(self) -> None:
        """Delete the file `detach` wrote."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
