from __future__ import annotations

import gc

import polars as pl

from calib.core.spool import Spool


def _frame(start: int, n: int, key: str = "a") -> pl.DataFrame:
    return pl.DataFrame({"key": [key] * n, "v": [float(x) for x in range(start, start + n)]})


def test_spool_reads_a_key_back_in_the_order_appended() -> None:
    with Spool() as spool:
        spool.append("a", _frame(0, 3))
        spool.append("b", _frame(100, 2, "b"))
        spool.append("a", _frame(3, 4))
        spool.append("a", _frame(7, 0))  # no rows: nothing to keep
        assert spool.read("a")["v"].to_list() == [float(x) for x in range(7)]
        assert spool.read("b")["v"].to_list() == [100.0, 101.0]
        assert spool.read("a", columns=["v"]).columns == ["v"]
        assert spool.read("a", columns=["key"]).height == 7
        assert spool.keys() == ["a", "b"]
        folder = spool._dir
        assert len(list(folder.iterdir())) == 3  # the rows are on disk, not in memory
    assert not folder.exists()


def test_a_spool_left_open_removes_its_files_when_dropped() -> None:
    spool = Spool()
    spool.append("a", _frame(0, 3))
    folder = spool._dir
    assert folder.exists()
    del spool
    gc.collect()
    assert not folder.exists()


def test_spool_reads_an_empty_key_with_its_schema() -> None:
    with Spool() as spool:
        spool.append("empty", pl.DataFrame(schema={"v": pl.Float64, "n": pl.Int64}))
        assert spool.read("empty").schema == pl.Schema({"v": pl.Float64, "n": pl.Int64})
        assert spool.read("never", {"v": pl.Float64}).schema == pl.Schema({"v": pl.Float64})
        assert spool.read("never").is_empty()
        assert spool.read("empty", columns=["n"]).schema == pl.Schema({"n": pl.Int64})
