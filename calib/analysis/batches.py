"""Bounded memory for the report and the replay, which read the store a batch of whole sessions at a
time, a session longer than a batch in pieces of consecutive calls (`calib.scoring.chain.FeatureTable`):
per-group rows kept on disk until a figure needs them, and a sample of sessions of fixed size for the
figures.

- `batch_calls`: how many calls a batch holds, so that its rows over the estimators stay about the same
  (a longer session is cut into batches of that many calls).
- `compact` copies the rows a frame keeps of a batch into buffers of their own.
- `Spool` (`calib.core.spool`, where the scoring and the fit use it too) appends frames under a key to
  files in a temporary folder and reads a key's rows back in the order they were appended: a figure
  that needs every value of a group (a percentile) reads that one group, computed exactly as if the
  whole frame had been in memory.
- `SessionSample` keeps the rows of the sessions with the smallest hash of their uid, up to a number of
  rows: the same sessions whatever the batches, so a figure drawn from it is deterministic.
"""

from __future__ import annotations

import hashlib
import io

import polars as pl

from calib.core.spool import Spool

__all__ = ["BATCH_ROWS", "SessionSample", "Spool", "batch_calls", "compact", "sample_key"]

# Rows (calls × estimators) per batch: what one batch's frames hold at a time, however long a session.
BATCH_ROWS = 40_000


def batch_calls(estimators: int, rows: int = BATCH_ROWS) -> int:
    """Calls per batch when each call has a row per estimator (a session longer than this is read in
    pieces of this many calls)."""
    return max(1, rows // max(1, estimators))


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` in buffers of its own. The rows a filter, a slice or a join keeps of a frame share its
    string buffers (polars' string views), so a few rows kept from each batch would otherwise hold
    every batch's strings in memory."""
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="uncompressed")
    buffer.seek(0)
    return pl.read_ipc(buffer, memory_map=False)


def sample_key(session_uid: str) -> int:
    """A session's place in the figures' sample: a stable hash of its uid (the same on every machine)."""
    digest = hashlib.blake2b(session_uid.encode("utf-8"), digest_size=8, person=b"calib-figs").digest()
    return int.from_bytes(digest, "big")


class SessionSample:
    """The rows of the sessions whose `sample_key` is smallest, taken while the rows of the sessions
    before each one add up to less than `max_rows`: whatever the batches and their order, the same
    sessions (those of the whole store that pass this test), at most `max_rows` rows plus one session.

    A long session may come in pieces, in consecutive calls: a session left out when a piece came has
    at least `max_rows` rows before it, so its later pieces are left out too, and one kept is judged
    again with each piece. With `order`, a session's rows are given back sorted by that column (then
    as offered): the order of a session offered whole, when its pieces each hold several groups."""

    def __init__(self, max_rows: int, *, key: str = "session_uid", order: str | None = None) -> None:
        self.max_rows = max_rows
        self.key = key
        self.order = order
        self._rows: pl.DataFrame | None = None
        self._schema: pl.Schema | None = None

    def add(self, frame: pl.DataFrame) -> None:
        """Offer the rows of some sessions (each session's rows in one call, or in consecutive calls)."""
        self._schema = self._schema or frame.schema
        if frame.is_empty() or self.max_rows <= 0:
            return
        keys = {uid: sample_key(uid) for uid in frame.get_column(self.key).unique().to_list()}
        frame = frame.with_columns(
            pl.col(self.key).replace_strict(keys, return_dtype=pl.UInt64).alias("_sample_key")
        )
        if self._rows is not None and self._rows.height >= self.max_rows:
            # full: a session after the last one kept has at least as many rows before it
            frame = frame.filter(pl.col("_sample_key") <= self._rows.get_column("_sample_key").max())
            if frame.is_empty():
                return
        rows = frame if self._rows is None else pl.concat([self._rows, frame], how="vertical")
        sizes = (
            rows.group_by("_sample_key", self.key)
            .len()
            .sort("_sample_key", self.key)
            .with_columns((pl.col("len").cum_sum() - pl.col("len")).alias("_before"))
        )
        kept = sizes.filter(pl.col("_before") < self.max_rows).get_column(self.key).to_list()
        self._rows = compact(rows.filter(pl.col(self.key).is_in(kept)))

    def rows(self) -> pl.DataFrame:
        """The sample's rows, in session-sample order (then `order`) then as offered."""
        drop = [c for c in (self.order,) if c is not None]
        if self._rows is None:
            if self._schema is None:
                return pl.DataFrame()
            return pl.DataFrame(schema=self._schema).drop(drop)
        return self._rows.sort(["_sample_key", *drop], maintain_order=True).drop(["_sample_key", *drop])

    def sessions(self) -> int:
        """How many sessions the sample holds."""
        return 0 if self._rows is None else self._rows.get_column(self.key).n_unique()
