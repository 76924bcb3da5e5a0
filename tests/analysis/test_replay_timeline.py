"""The replay timeline figure (`calib.analysis.plots.replay_timeline`): what a reader must be able to see."""

from __future__ import annotations

import math

import polars as pl

from calib.analysis import plots
from calib.analysis.replay import TIMELINE_COLUMNS, timeline_caption

# 8 calls of a session under Dexto's rule, threshold 10,300: the actual context grows by 100 a call, a
# compaction before call 5 brings it back to 9,000. chars4 shows 60 under it, cjk 40 over it; the first
# call and the one after the compaction are shown from a bare estimate (basis `full`).
ACTUAL = [10_000.0, 10_100.0, 10_200.0, 10_300.0, 10_400.0, 9_000.0, 9_100.0, 9_200.0]
SHOWN = {"chars4": -60.0, "cjk": 40.0}
THRESHOLD = 10_250.0


def _timeline(same: bool = False) -> pl.DataFrame:
    rows = []
    for name, offset in SHOWN.items():
        shown = [a + (0.0 if same else offset) for a in ACTUAL]
        shown[0], shown[5] = 30.0, 25.0  # bare estimates: no count to build on
        for seq, (actual, display) in enumerate(zip(ACTUAL, shown, strict=True)):
            compact = display > THRESHOLD
            before = seq > 0 and shown[seq - 1] > THRESHOLD
            rows.append(
                {
                    "seq": seq,
                    "call_uid": f"c{seq}",
                    "estimator": name,
                    "actual": actual,
                    "displayed": display,
                    "threshold": THRESHOLD,
                    "window": 11_445,
                    "compact": compact,
                    "fires": compact and not before,
                    "refuse": False,
                    "should": actual > THRESHOLD,
                    "outcome": "ok",
                    "event": None,
                    "status": "break" if seq == 5 else ("baseline" if seq == 0 else "ok"),
                    "break": "compaction" if seq == 5 else None,
                    "basis": "full" if seq in (0, 5) else "chained",
                    "rule": "dexto",
                    "policy": "raw",
                    "tool": "dexto",
                    "model": "gpt-5",
                    "window_kind": "what-if",
                }
            )
    return pl.DataFrame(rows).select(TIMELINE_COLUMNS)


def _lines(ax, label: str):  # type: ignore[no-untyped-def]
    return [line for line in ax.lines if line.get_label() == label]


def test_each_estimator_has_a_line_of_its_own_over_the_actual_one() -> None:
    title, subtitle = timeline_caption(
        {
            "agent": "dexto",
            "project": "payment-kit",
            "date": "2026-03-02",
            "model": "gpt-5",
            "rule": "dexto",
            "window_kind": "what-if",
            "window": 11_445,
            "real_window": 400_000,
            "threshold": THRESHOLD,
        }
    )
    assert title == "dexto · payment-kit · 2026-03-02 · gpt-5"
    assert subtitle == "dexto rule on what-if window of 11,445 tokens (real: 400,000), threshold 10,250"
    fig = plots.replay_timeline(_timeline(), title=title, subtitle=subtitle)
    top = fig.axes[0]
    assert fig._suptitle is not None and fig._suptitle.get_text() == title
    assert top.get_title(loc="left").startswith(subtitle)
    (actual,) = _lines(top, "actual (provider's count)")
    (chars4,) = _lines(top, "chars4: shown")
    (cjk,) = _lines(top, "cjk: shown")
    # distinct colours, dashes and markers, drawn above the actual line
    assert chars4.get_color() != cjk.get_color()
    assert chars4._unscaled_dash_pattern != cjk._unscaled_dash_pattern  # type: ignore[attr-defined]
    assert chars4.get_marker() != cjk.get_marker()
    assert min(chars4.get_zorder(), cjk.get_zorder()) > actual.get_zorder()
    # bare estimates are left off the lines (they would drop to the bottom of the chart)
    ys = list(chars4.get_ydata())
    assert math.isnan(ys[0]) and math.isnan(ys[5]) and ys[1] == 10_040
    # the threshold is drawn, and where the actual context reaches it is marked
    assert _lines(top, "compaction threshold (10,250)")
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert "actual reaches the threshold: should compact" in legend
    assert "compaction would start (estimator's colour)" in legend
    # ▼ where each estimator would start: cjk at call 3 (10,340), chars4 at call 4 (10,340)
    marks = sorted((round(c.get_offsets()[0][0]), tuple(c.get_facecolor()[0])) for c in top.collections
                   if c.get_offsets().shape[0] == 1 and c.get_label().startswith("_"))  # fmt: skip
    assert [seq for seq, _ in marks] == [3, 4]


def test_the_error_panel_leaves_out_breaks_and_marks_them() -> None:
    fig = plots.replay_timeline(_timeline())
    top, bottom = fig.axes
    assert bottom.get_yscale() == "linear"
    errors = [line for line in bottom.lines if len(line.get_xdata()) == len(ACTUAL)]
    assert len(errors) == 2
    for line in errors:
        ys = list(line.get_ydata())
        # the first call and the call after the compaction: no error drawn, so no spike
        assert math.isnan(ys[0]) and math.isnan(ys[5])
        assert {round(y) for y in ys if not math.isnan(y)} in ({-60}, {40})
    # the compaction: a vertical line on both panels, named on the upper one
    for ax in (top, bottom):
        assert any(list(line.get_xdata()) == [5, 5] for line in ax.lines)
    assert "compaction" in [t.get_text().strip() for t in top.texts]
    low, high = bottom.get_ylim()
    assert low < -60 and high > 40 and high - low < 200


def test_a_rule_that_shows_the_last_count_gets_one_line_for_every_estimator() -> None:
    fig = plots.replay_timeline(_timeline(same=True))
    top = fig.axes[0]
    assert _lines(top, "shown, any estimator (the last reported count)")
    assert not _lines(top, "chars4: shown") and not _lines(top, "cjk: shown")


def test_a_threshold_far_above_the_session_is_written_not_drawn() -> None:
    far = _timeline().with_columns(pl.lit(900_000.0).alias("threshold"), pl.lit(1_000_000).alias("window"))
    top = plots.replay_timeline(far).axes[0]
    assert any("threshold 900,000 tokens: above the chart" in t.get_text() for t in top.texts)
    assert top.get_ylim()[1] < 20_000
