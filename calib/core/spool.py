"""Frames kept on disk until read back: how every command that reads the store a batch of sessions
at a time (`calib.scoring.chain.FeatureTable`) keeps the rows a later step needs all of, without
holding them in memory meanwhile.

A figure that needs every value of a group (a percentile, a median) reads that one group back,
computed exactly as if the whole frame had been in memory; a fit that needs its parameters before it
can price a row reads its rows back a batch at a time.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Hashable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import polars as pl

__all__ = ["Spool"]


class Spool:
    """Frames appended under a key, kept in files of a temporary folder until read back.

    `append(key, frame)` writes the frame to a file of its own (Arrow IPC), so that it holds no
    memory once written; `read(key)` returns the key's rows in the order they were appended, so
    whatever a figure computes on them it computes on the same rows as on the frame they were cut
    from. The folder is removed by `close` (or on leaving a `with` block).
    """

    def __init__(self, prefix: str = "calib-spool-") -> None:
        self._dir = Path(tempfile.mkdtemp(prefix=prefix))
        # the folder goes with the spool even when nobody closes it
        self._remove = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._files: dict[Hashable, list[Path]] = {}
        self._schemas: dict[Hashable, pl.Schema] = {}
        self._count = 0

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Remove the files."""
        self._remove()
        self._files.clear()

    def keys(self) -> list[Hashable]:
        """The keys appended to, in the order first appended."""
        return list(self._schemas)

    def append(self, key: Hashable, frame: pl.DataFrame) -> None:
        """Keep `frame`'s rows under `key` (a frame without rows keeps only its schema)."""
        self._schemas.setdefault(key, frame.schema)
        if frame.is_empty():
            return
        path = self._dir / f"{self._count}.arrow"
        self._count += 1
        frame.write_ipc(path, compression="uncompressed")
        self._files.setdefault(key, []).append(path)

    def read(
        self,
        key: Hashable,
        schema: pl.Schema | dict[str, Any] | None = None,
        *,
        columns: Sequence[str] | None = None,
    ) -> pl.DataFrame:
        """The rows appended under `key`, in order (only `columns`, if given); an empty frame of the
        key's schema (else `schema`) when none were."""
        picked = list(columns) if columns is not None else None
        frames = [pl.read_ipc(path, columns=picked, memory_map=False) for path in self._files.get(key, [])]
        if not frames:
            known = self._schemas.get(key, schema)
            if known is None:
                return pl.DataFrame()
            empty = pl.DataFrame(schema=known)
            return empty.select(picked) if picked is not None else empty
        return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical", rechunk=True)
