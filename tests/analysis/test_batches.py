from __future__ import annotations

import polars as pl
import pytest

from calib.analysis.batches import BATCH_ROWS, SessionSample, batch_calls, compact, sample_key


def test_batch_calls_keeps_the_rows_of_a_batch_about_the_same() -> None:
    assert batch_calls(1) == BATCH_ROWS
    assert batch_calls(4) == BATCH_ROWS // 4
    assert batch_calls(3, rows=10) == 3
    assert batch_calls(50, rows=10) == 1  # never less than one call
    assert batch_calls(0, rows=10) == 10


def test_compact_keeps_the_rows_and_their_types() -> None:
    frame = pl.DataFrame({"s": ["a" * 40, "b" * 40, None], "n": [1, 2, 3]}).with_columns(
        pl.col("s").cast(pl.Categorical).alias("c")
    )
    kept = frame.filter(pl.col("n") > 1)
    assert compact(kept).equals(kept) and compact(kept).schema == kept.schema


def _calls(sessions: dict[str, int]) -> pl.DataFrame:
    uids = [uid for uid, n in sessions.items() for _ in range(n)]
    seqs = [k for n in sessions.values() for k in range(n)]
    return pl.DataFrame({"session_uid": uids, "seq": seqs})


SESSIONS = {f"s{i:02d}": 1 + (i * 7) % 5 for i in range(30)}


def _sampled(max_rows: int, batches: list[list[str]]) -> pl.DataFrame:
    sample = SessionSample(max_rows)
    for uids in batches:
        sample.add(_calls({uid: SESSIONS[uid] for uid in uids}))
    return sample.rows()


@pytest.mark.parametrize("max_rows", [0, 1, 5, 17, 40, 1000])
def test_session_sample_is_the_same_whatever_the_batches(max_rows: int) -> None:
    uids = list(SESSIONS)
    whole = _sampled(max_rows, [uids])
    one_by_one = _sampled(max_rows, [[uid] for uid in uids])
    backwards = _sampled(max_rows, [[uid] for uid in reversed(uids)])
    halves = _sampled(max_rows, [uids[15:], uids[:15]])
    for other in (one_by_one, backwards, halves):
        assert other.equals(whole)
    # the sessions of smallest key while fewer than max_rows rows come before each
    by_key = sorted(uids, key=sample_key)
    expected, before = [], 0
    for uid in by_key:
        if before >= max_rows:
            break
        expected.append(uid)
        before += SESSIONS[uid]
    kept = whole.get_column("session_uid").unique(maintain_order=True).to_list()
    assert kept == expected
    assert whole.height == sum(SESSIONS[uid] for uid in expected)
    # each session whole, its rows in the order offered
    for uid in expected:
        assert whole.filter(pl.col("session_uid") == uid)["seq"].to_list() == list(range(SESSIONS[uid]))


@pytest.mark.parametrize("max_rows", [0, 1, 5, 17, 40, 1000])
def test_session_sample_takes_a_session_in_pieces_as_a_whole_one(max_rows: int) -> None:
    # each session in two estimators' rows, offered whole or cut in two consecutive pieces
    def rows(uid: str, seqs: range) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "session_uid": [uid] * 2 * len(seqs),
                "seq": [*seqs, *seqs],
                "estimator": [0] * len(seqs) + [1] * len(seqs),
            }
        )

    whole, cut = SessionSample(max_rows, order="estimator"), SessionSample(max_rows, order="estimator")
    for uid, n in SESSIONS.items():
        whole.add(rows(uid, range(n)))
        half = n // 2
        cut.add(rows(uid, range(half)))
        cut.add(rows(uid, range(half, n)))
    assert cut.rows().equals(whole.rows())
    assert whole.rows().columns == ["session_uid", "seq"]


def test_session_sample_of_nothing() -> None:
    sample = SessionSample(10)
    assert sample.rows().is_empty() and sample.sessions() == 0
    sample.add(_calls({}))
    assert sample.rows().columns == ["session_uid", "seq"]


def test_sample_key_is_stable() -> None:
    # the sample must not change between runs or machines: a fixed hash, not Python's salted one
    assert sample_key("s00") == 14616923920222587432
    assert sample_key("a") != sample_key("b")
    assert 0 <= sample_key("x") < 2**64
