from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from calib.analysis.replay import REPLAY_COLUMNS, replay
from calib.analysis.sweep import ANY_ESTIMATOR, SWEEP_COLUMNS, ThresholdSweep, parse_thresholds
from calib.core.errors import UsageError
from calib.ingest.pipeline import ingest
from calib.store.store import Store

SHARES = [0.5, 0.7, 0.85, 0.95]
_BOOLEANS = {"is_subagent", "compact", "refuse", "fires", "should", "over_window", "own"}
_INTS = {"seq", "window", "max_output", "ctx"}
_FLOATS = {"threshold", "displayed", "guard", "truth", "margin", "error"}


def _dtype(column: str) -> Any:
    if column in _BOOLEANS:
        return pl.Boolean
    if column in _INTS:
        return pl.Int64
    return pl.Float64 if column in _FLOATS else pl.String


def _calls(
    uid: str,
    displayed: list[float | None],
    truth: list[float | None] | None = None,
    *,
    over: list[bool] | None = None,
    tool: str = "gemini-cli",
    rule: str | None = None,
    estimator: str = "chars4",
    window: int | None = 1000,
    start: int = 0,
    policy: str = "raw",
    own: bool = True,
) -> list[dict[str, Any]]:
    """Replay rows of consecutive calls of one session (seq from `start`); truth defaults to displayed."""
    truth = list(displayed) if truth is None else truth
    over = over or [False] * len(displayed)
    return [
        {
            "rule": rule or tool,
            "estimator": estimator,
            "policy": policy,
            "session_uid": uid,
            "seq": start + k,
            "tool": tool,
            "own": own,
            "window_kind": "fixed",
            "window": window,
            "displayed": d,
            "truth": t,
            "over_window": None if t is None else o,
        }
        for k, (d, t, o) in enumerate(zip(displayed, truth, over, strict=True))
    ]


def _frame(*calls: list[dict[str, Any]]) -> pl.DataFrame:
    rows = [row for group in calls for row in group]
    schema = {c: _dtype(c) for c in REPLAY_COLUMNS}
    return pl.DataFrame([{c: r.get(c) for c in REPLAY_COLUMNS} for r in rows], schema=schema)


def _swept(*frames: pl.DataFrame, shares: list[float] = SHARES) -> ThresholdSweep:
    sweep = ThresholdSweep(shares)
    for frame in frames:
        sweep.add(frame)
    return sweep


def _by(rows: list[dict[str, Any]]) -> dict[tuple[str, str, float], dict[str, Any]]:
    return {(r["agent"], r["estimator"], r["threshold"]): r for r in rows}


# -- hand-built sessions --------------------------------------------------------------------------


def test_a_session_crossing_each_threshold_once_fires_once_at_each() -> None:
    calls = _calls(
        "s1", [100, 300, 600, 700, 900], [110, 310, 480, 700, 905], over=[False, False, False, False, True]
    )
    sweep = _swept(_frame(calls))
    rows = sweep.rows()
    assert [r["threshold"] for r in rows] == SHARES
    assert all(list(r) == list(SWEEP_COLUMNS) for r in rows)
    got = {r["threshold"]: (r["fires"], r["early"], r["over_window"], r["headroom_min"]) for r in rows}
    # 0.5: fires at 600 (truth 480: under 500, early), 0.7 at 700 (exactly at the limit: compacts, and
    # not early), 0.85 at 900, 0.95 never; the last call is over the window and goes out uncompacted
    # only at 0.95
    assert got == {0.5: (1, 1, 0, 520.0), 0.7: (1, 0, 0, 300.0), 0.85: (1, 0, 0, 95.0), 0.95: (0, 0, 1, None)}
    assert {(r["sessions"], r["calls"]) for r in rows} == {(1, 5)}
    assert rows[-1]["headroom_p50"] is None and rows[-1]["headroom_max"] is None
    # gemini-cli's rule depends on the estimator (its guard): one estimator replayed keeps its name
    assert {r["estimator"] for r in rows} == {"chars4"}
    assert sweep.lines()[0] == (
        "gemini-cli (chars4) at 0.50: 1 compaction over 1 session (1 early), 0 calls over the window, "
        "headroom at firing 520 tokens"
    )
    assert (
        sweep.lines()[-1]
        == "gemini-cli (chars4) at 0.95: 0 compactions over 1 session, 1 call over the window"
    )


def test_an_oscillating_session_fires_each_time_it_comes_back_over() -> None:
    calls = _calls("s1", [600, 400, 600, 400, 600], [610, 390, 620, 410, 700], tool="opencode")
    rows = _by(_swept(_frame(calls)).rows())
    low = rows[("opencode", ANY_ESTIMATOR, 0.5)]
    assert (low["fires"], low["early"]) == (3, 0)
    assert (low["headroom_min"], low["headroom_p50"], low["headroom_max"]) == (300.0, 380.0, 390.0)
    assert rows[("opencode", ANY_ESTIMATOR, 0.7)]["fires"] == 0
    line = _swept(_frame(calls), shares=[0.5]).lines()[0]
    assert line == (
        "opencode at 0.50: 3 compactions over 1 session (0 early), 0 calls over the window, "
        "headroom at firing 300-390 tokens (median 380)"
    )


def test_a_session_split_across_frames_goes_on_from_its_last_decision() -> None:
    whole = _calls("s1", [100, 600, 700, 800, 300, 600])
    first, second = whole[:3], whole[3:]
    # between the two pieces: the session's rows under other rules and policies, and a session of
    # another rule; none of them ends the piece's session
    noise = _frame(
        _calls("s1", [900, 900, 900], rule="dexto", own=False),
        _calls("s1", [900, 100, 900], policy="include"),
        _calls("s0", [700, 100], tool="opencode"),
    )
    split = _swept(_frame(first), noise, _frame(second)).rows()
    assert split == _swept(_frame(whole), _frame(_calls("s0", [700, 100], tool="opencode"))).rows()
    row = _by(split)[("gemini-cli", "chars4", 0.5)]
    # fires at 600 and again at the last 600; not at 800, the first call of the second piece
    assert (row["sessions"], row["calls"], row["fires"]) == (1, 6, 2)
    assert (row["headroom_min"], row["headroom_max"]) == (400.0, 400.0)
    # cut inside a run over the threshold: a fresh sweep would fire again at 800
    alone = _by(_swept(_frame(second)).rows())[("gemini-cli", "chars4", 0.5)]
    assert alone["fires"] == 2


def test_a_session_whose_first_piece_decides_nothing_is_counted_once() -> None:
    first = _calls("s1", [600, 600], window=None)
    second = _calls("s1", [600, 700], start=2)
    row = _by(_swept(_frame(first), _frame(second)).rows())[("gemini-cli", "chars4", 0.5)]
    assert (row["sessions"], row["calls"], row["fires"]) == (1, 2, 1)


def test_a_session_absent_from_the_next_frame_of_its_rule_has_ended() -> None:
    # s1 is not in the second frame of its rule, so s1 coming back later starts afresh
    sweep = _swept(
        _frame(_calls("s1", [600])),
        _frame(_calls("s2", [100])),
        _frame(_calls("s1", [700], start=1)),
        shares=[0.5],
    )
    row = sweep.rows()[0]
    assert (row["sessions"], row["calls"], row["fires"]) == (3, 3, 2)


def test_a_call_over_the_window_counts_only_where_nothing_compacts() -> None:
    calls = _calls("s1", [200, 450, 560], [210, 1010, 1100], over=[False, True, True], tool="opencode")
    sweep = _swept(_frame(calls), shares=[0.5, 0.7])
    rows = _by(sweep.rows())
    half, more = rows[("opencode", ANY_ESTIMATOR, 0.5)], rows[("opencode", ANY_ESTIMATOR, 0.7)]
    # at 0.5 the last call compacts (560 >= 500), already over the window: negative headroom
    assert (half["fires"], half["over_window"], half["headroom_min"]) == (1, 1, -100.0)
    assert (more["fires"], more["over_window"], more["headroom_min"]) == (0, 2, None)
    assert sweep.lines()[0].endswith("1 call over the window, headroom at firing -100 tokens")
    # firings both over and under the window: a range that reads as one
    both = _calls("s2", [600, 100, 700], [1100, 100, 700], tool="opencode")
    line = _swept(_frame(both), shares=[0.5]).lines()[0]
    assert line.endswith("headroom at firing -100 to 300 tokens")


def test_calls_without_a_window_or_a_truth_are_skipped() -> None:
    nothing = _frame(_calls("s1", [600, 900], window=None), _calls("s2", [600, 900], [None, None]))
    sweep = _swept(nothing)
    assert sweep.rows() == [] and sweep.lines() == []
    # the decided call before the last is 300 (600 has no truth): the last one fires
    gap = _calls("s3", [300, 600, 600], [300, None, 650])
    row = _by(_swept(_frame(gap)).rows())[("gemini-cli", "chars4", 0.5)]
    assert (row["calls"], row["fires"], row["headroom_min"]) == (2, 1, 350.0)


def test_rows_of_other_rules_and_policies_are_not_read() -> None:
    own = _calls("s1", [100, 600])
    others = _frame(
        _calls("s1", [600, 100], rule="dexto", own=False),
        _calls("s1", [600, 100], policy="strip-all"),
    )
    assert _swept(_frame(own), others).rows() == _swept(_frame(own)).rows()
    assert _swept(others).rows() == []


def test_estimators_merge_where_they_give_the_same_figures() -> None:
    frame = _frame(
        # OpenCode reads the provider's count: any estimator
        _calls("o1", [100, 600], tool="opencode", estimator="chars4"),
        _calls("o1", [100, 600], tool="opencode", estimator="cjk"),
        # Dexto's estimate differs: 0.5 fires under chars4 only
        _calls("d1", [100, 600], [100, 600], tool="dexto", estimator="chars4"),
        _calls("d1", [100, 450], [100, 600], tool="dexto", estimator="cjk"),
        # gemini-cli: another display at one call, the same figures
        _calls("g1", [100, 600], tool="gemini-cli", estimator="chars4"),
        _calls("g1", [120, 600], tool="gemini-cli", estimator="cjk"),
    )
    rows = _swept(frame, shares=[0.5]).rows()
    assert [(r["agent"], r["estimator"], r["fires"]) for r in rows] == [
        ("dexto", "chars4", 1),
        ("dexto", "cjk", 0),
        ("gemini-cli", ANY_ESTIMATOR, 1),
        ("opencode", ANY_ESTIMATOR, 1),
    ]
    # one estimator: named where the rule uses it, `(any)` where it does not
    single = _frame(_calls("d1", [100, 600], tool="dexto"), _calls("o1", [100, 600], tool="opencode"))
    labels = [(r["agent"], r["estimator"]) for r in _swept(single, shares=[0.5]).rows()]
    assert labels == [("dexto", "chars4"), ("opencode", ANY_ESTIMATOR)]


def test_to_dict_is_json_of_the_rows() -> None:
    sweep = _swept(_frame(_calls("s1", [100, 600, 700])), shares=[0.95, 0.5])
    document = json.loads(json.dumps(sweep.to_dict()))
    assert document["thresholds"] == [0.5, 0.95]
    assert document["rows"] == sweep.rows()


# -- thresholds -----------------------------------------------------------------------------------


def test_parse_thresholds_reads_shares_in_the_order_given() -> None:
    assert parse_thresholds("0.5,0.7,0.85,0.95") == [0.5, 0.7, 0.85, 0.95]
    assert parse_thresholds(" 0.9 , 1 ,0.25") == [0.9, 1.0, 0.25]


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("", "no threshold"),
        ("  ", "no threshold"),
        ("0.5,,0.7", "empty threshold"),
        ("0.5,", "empty threshold"),
        ("seventy", "not a number"),
        ("0", "not a share"),
        ("-0.2", "not a share"),
        ("1.5", "not a share"),
        ("70", "not a share"),
        ("nan", "not a share"),
        ("inf", "not a share"),
        ("0.7,0.70", "given twice"),
    ],
)
def test_parse_thresholds_rejects_bad_input_with_a_hint(text: str, what: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_thresholds(text)
    assert what in caught.value.what and caught.value.hint
    assert "\n" not in str(caught.value)


def test_a_sweep_checks_its_thresholds() -> None:
    assert ThresholdSweep([0.95, 0.5]).thresholds == [0.5, 0.95]
    for bad in ([], [0.0], [1.2], [0.5, 0.5]):
        with pytest.raises(UsageError):
            ThresholdSweep(bad)


# -- the sample, end to end -----------------------------------------------------------------------


def _direct(frame: pl.DataFrame, shares: list[float]) -> dict[tuple[str, str, float], tuple[Any, ...]]:
    """The figures recomputed call by call: (sessions, calls, fires, early, over, sorted headrooms)."""
    decided = frame.filter(
        pl.col("own")
        & (pl.col("policy") == "raw")
        & pl.col("window").is_not_null()
        & pl.col("truth").is_not_null()
    ).sort("session_uid", "estimator", "seq")
    out: dict[tuple[str, str, float], list[Any]] = {}
    for (tool, estimator, _uid), group in decided.group_by(
        "tool", "estimator", "session_uid", maintain_order=True
    ):
        calls = group.select("displayed", "window", "truth", "over_window").rows()
        for t in shares:
            figures = out.setdefault((str(tool), str(estimator), t), [0, 0, 0, 0, 0, []])
            figures[0] += 1
            before = False
            for displayed, window, truth, over in calls:
                compacts = displayed is not None and displayed >= t * window
                figures[1] += 1
                if compacts and not before:
                    figures[2] += 1
                    figures[3] += truth < t * window
                    figures[5].append(window - truth)
                figures[4] += bool(over) and not compacts
                before = compacts
    return {key: (*f[:5], sorted(f[5])) for key, f in out.items()}


def _pieces(frame: pl.DataFrame, size: int) -> list[pl.DataFrame]:
    """The frame in sessions' order cut every `size` rows: long sessions go on across pieces."""
    ordered = frame.sort("session_uid", "seq", maintain_order=True)
    return [ordered.slice(start, size) for start in range(0, ordered.height, size)]


@pytest.fixture(scope="module")
def sample_frame(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    from helpers import ROOT

    sample = ROOT / "datasets" / "sample"
    if not sample.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {sample} (run `make sample`)")
    db = Path(tmp_path_factory.mktemp("sweep")) / "sample.duckdb"
    with Store(db) as s:
        ingest([sample], store=s)
        # every rule and policy (the sweep reads each session's own rule, raw), on what-if windows so
        # that the sample's small sessions reach the thresholds
        return replay(s, ["chars4", "cjk"], window="what-if")


def test_the_sample_swept_matches_a_direct_count(sample_frame: pl.DataFrame) -> None:
    shares = [0.3, *SHARES, 1.0]
    sweep = _swept(sample_frame, shares=shares)
    rows = sweep.rows()
    direct = _direct(sample_frame, shares)
    agents = {r["agent"] for r in rows}
    assert agents == {
        "claude-code",
        "codex",
        "dexto",
        "gemini-cli",
        "opencode",
        "qwen-code",
        "llxprt",
        "cline",
        "roo-code",
    }
    for r in rows:
        key = (r["agent"], r["estimator"], r["threshold"])
        heads = [] if not r["fires"] else [r["headroom_min"], r["headroom_p50"], r["headroom_max"]]
        estimators = ["chars4", "cjk"] if r["estimator"] == ANY_ESTIMATOR else [r["estimator"]]
        for estimator in estimators:
            sessions, calls, fires, early, over, found = direct[(r["agent"], estimator, r["threshold"])]
            assert (r["sessions"], r["calls"], r["fires"], r["early"], r["over_window"]) == (
                sessions,
                calls,
                fires,
                early,
                over,
            ), key
            if found:
                assert heads == [found[0], pytest.approx(float(pl.Series(found).median())), found[-1]], key
            else:
                assert r["headroom_min"] is None and r["headroom_p50"] is None, key
    # the rules that read only the provider's count merge their estimators; Dexto's differ on the sample
    merged = {r["agent"] for r in rows if r["estimator"] == ANY_ESTIMATOR}
    assert {"claude-code", "codex", "opencode"} <= merged
    dexto_differs = any(direct[("dexto", "chars4", t)] != direct[("dexto", "cjk", t)] for t in shares)
    assert ("dexto" not in merged) == dexto_differs
    # something happens: compactions fire, and some calls go over the window at the highest share
    assert sum(r["fires"] for r in rows) > 0
    assert sum(r["over_window"] for r in rows if r["threshold"] == 1.0) > 0


def test_the_sample_swept_in_pieces_gives_the_same_rows(sample_frame: pl.DataFrame) -> None:
    whole = _swept(sample_frame).rows()
    for size in (997, 4_000):
        pieces = _pieces(sample_frame, size)
        assert len(pieces) > 5
        assert _swept(*pieces).rows() == whole, size


def test_the_sample_swept_keeps_its_invariants(sample_frame: pl.DataFrame) -> None:
    rows = _swept(sample_frame, shares=[0.1, 0.3, *SHARES, 1.0]).rows()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["agent"], r["estimator"]), []).append(r)
    # (a call of a model without a known window, such as Qwen's own, is not swept)
    own = sample_frame.filter(
        pl.col("own")
        & (pl.col("policy") == "raw")
        & pl.col("truth").is_not_null()
        & pl.col("window").is_not_null()
    )
    for (agent, _), group in groups.items():
        assert [r["threshold"] for r in group] == [0.1, 0.3, *SHARES, 1.0]
        # the sessions and calls read do not depend on the threshold
        assert len({(r["sessions"], r["calls"]) for r in group}) == 1
        assert group[0]["sessions"] == own.filter(pl.col("tool") == agent)["session_uid"].n_unique()
        # a higher threshold compacts on fewer calls, so more of those over the window go out
        overs = [r["over_window"] for r in group]
        assert overs == sorted(overs), agent
        for r in group:
            assert 0 <= r["early"] <= r["fires"] <= r["calls"]
            # a session fires at most once per run of calls over the threshold: never twice in a row
            assert r["fires"] <= (r["calls"] + r["sessions"]) // 2
            if r["fires"]:
                assert r["headroom_min"] <= r["headroom_p50"] <= r["headroom_max"]
            else:
                assert (r["headroom_min"], r["headroom_p50"], r["headroom_max"]) == (None, None, None)


def test_gemini_cli_at_its_own_share_fires_where_the_replay_does(sample_frame: pl.DataFrame) -> None:
    # gemini-cli compresses at 0.5 of the window with `>=`, as the sweep does: on its sessions where
    # every call was decided, the replay's own firings are the sweep's at 0.5
    gemini = sample_frame.filter(
        (pl.col("rule") == "gemini-cli") & pl.col("own") & (pl.col("policy") == "raw")
    )
    undecided = gemini.filter(pl.col("outcome").is_in(["unknown", "no_window"]))["session_uid"].unique()
    whole = gemini.filter(~pl.col("session_uid").is_in(undecided.implode()))
    assert whole.height > 0
    rows = _swept(whole, shares=[0.5]).rows()
    for r in rows:
        replayed = (
            whole if r["estimator"] == ANY_ESTIMATOR else whole.filter(pl.col("estimator") == r["estimator"])
        )
        one = replayed.filter(pl.col("estimator") == replayed["estimator"].min())
        assert r["fires"] == one["fires"].sum() > 0
        assert r["over_window"] == one.filter(pl.col("over_window") & ~pl.col("compact")).height


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers import ROOT

    sample = ROOT / "datasets" / "sample"
    if not sample.is_dir():
        pytest.skip(f"the bundled sample is not generated yet: {sample} (run `make sample`)")
    db = Path(tmp_path_factory.mktemp("sweep-run")) / "sample.duckdb"
    with Store(db) as s:
        ingest([sample], store=s)
    return db


def test_calib_replay_threshold_sweeps_what_it_replays(sample_db: Path, sample_frame: pl.DataFrame) -> None:
    from calib.analysis.replay import run_replay

    report = run_replay(sample_db, ["chars4", "cjk"], window="what-if", thresholds="0.5,0.95")
    assert report.sweep is not None
    document = report.to_dict()
    assert document["thresholds"] == report.sweep.to_dict()
    # the run fed the sweep the rows it replayed: the same figures as sweeping `replay`'s frame
    assert report.sweep.rows() == _swept(sample_frame, shares=[0.5, 0.95]).rows()
    assert report.sweep.lines() and all(
        " at 0.50: " in line or " at 0.95: " in line for line in report.sweep.lines()
    )


def test_calib_replay_threshold_needs_the_raw_policy(sample_db: Path) -> None:
    from calib.analysis.replay import run_replay

    with pytest.raises(UsageError) as raised:
        run_replay(sample_db, ["chars4"], policies=["include"], thresholds="0.7")
    assert str(raised.value) == "--threshold sweeps the agents' own count, the raw policy; add --policy raw"
    with pytest.raises(UsageError):
        run_replay(sample_db, ["chars4"], thresholds="0.7,1.5")
