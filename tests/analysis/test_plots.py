from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from analysis.biased_sessions import biased_session
from analysis.sessions import kinds_session

from calib.analysis import plots
from calib.analysis.build import build_report
from calib.analysis.content import CONTENT_KINDS
from calib.core.records import ParsedSession
from calib.scoring.chain import BREAK_REASONS
from calib.store.store import Store


def _rows(with_e2e: bool) -> pl.DataFrame:
    row = {
        "provider": "google",
        "model": "gemini-2.5-pro",
        "calls": 40,
        "delta_mae_before": 80.0,
        "delta_mae_after": 30.0,
        "ctx_err_p90_before": 0.008,
        "ctx_err_p90_after": 0.003,
    }
    if with_e2e:
        row.update({"e2e_err_p90_before": 0.9, "e2e_err_p90_after": 0.01})
    return pl.DataFrame([row])


def test_before_after_draws_the_end_to_end_panel_beside_the_scored_ones() -> None:
    fig = plots.before_after(_rows(with_e2e=True), base="charclass", calibrated="calibrated:charclass")
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert labels == [
        "delta MAE (tokens)",
        "scored context error p90",
        "end-to-end context error p90, log scale",
    ]
    assert fig.axes[2].get_xscale() == "log"  # 90% against 1%: both bars must read
    # the bars carry the figures, in percent for the error panels, and the ticks say so
    widths = sorted(round(p.get_width(), 6) for p in fig.axes[2].patches)
    assert widths == [1.0, 90.0]
    assert fig.axes[2].xaxis.get_major_formatter()(10.0, 0) == "10%"
    # the rows name the model and its held-out calls; the legend the two estimators
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        "gemini-2.5-pro\ngoogle · 40 held-out calls"
    ]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["charclass", "calibrated:charclass"]


def test_before_after_without_end_to_end_figures_keeps_two_panels() -> None:
    fig = plots.before_after(_rows(with_e2e=False))
    assert [ax.get_xlabel() for ax in fig.axes] == ["delta MAE (tokens)", "scored context error p90"]


# -- the figures drawn from the summary (synthetic stores with known errors) -------------------------


def _summary(store: Store, sessions: list[ParsedSession]) -> dict[str, Any]:
    store.write(sessions)
    return build_report(store, estimators=["chars4"], replay=False).summary


def _rows_top_down(ax: Any) -> list[str]:
    """The y tick labels of a figure with one row per group, from the top row down."""
    ticks = zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels()), strict=True)
    return [label for _, label in sorted(ticks, reverse=True)]


def test_per_model_figure_has_a_row_per_model_with_its_calls_and_the_median_of_its_error(
    store: Store,
) -> None:
    summary = _summary(
        store,
        [
            biased_session("t:a", model="m1", calls=12, factor=2.0),  # 11 scored calls, under-predicted
            biased_session("t:b", model="m2", calls=16, factor=0.5),  # 15 scored calls, over-predicted
            biased_session("t:c", model="m3", calls=4),  # 3 scored calls: too few to draw
        ],
    )
    rows = pl.DataFrame(summary["model_error"])
    fig = plots.model_error(rows, estimators=["chars4"], min_calls=summary["min_figure_calls"])
    ax = fig.axes[0]
    # the busiest model of the provider on top, each labelled with its scored calls
    assert _rows_top_down(ax) == ["m2\nopenai · 15 calls", "m1\nopenai · 11 calls"]
    assert "1 provider/model with fewer than 10 scored calls not drawn" in ax.get_xlabel()
    assert ax.get_xscale() == "symlog" and "symmetric log scale" in ax.get_xlabel()
    # one median dot per row: m1 (bottom row) left of 0, m2 right of it, at the summary's medians
    dots = {
        round(float(line.get_ydata()[0])): float(line.get_xdata()[0])
        for line in ax.lines
        if line.get_marker() == "o"
    }
    medians = {r["model"]: r["p50"] * 100 for r in summary["model_error"]}
    assert dots == {0: pytest.approx(medians["m1"]), 1: pytest.approx(medians["m2"])}
    assert dots[0] < 0 < dots[1]
    # the axis reads in percent
    assert ax.xaxis.get_major_formatter()(-1.0, 0) == "−1%"


def test_per_model_figure_without_enough_calls_says_so(store: Store) -> None:
    summary = _summary(store, [biased_session("t:c", model="m3", calls=4)])
    fig = plots.model_error(pl.DataFrame(summary["model_error"]), min_calls=summary["min_figure_calls"])
    assert [t.get_text() for t in fig.axes[0].texts] == ["no provider/model with 10 or more scored calls"]
    empty = plots.model_error(pl.DataFrame())
    assert [t.get_text() for t in empty.axes[0].texts] == ["no provider/model with 10 or more scored calls"]


@pytest.mark.parametrize(("factor", "sign"), [(2.0, -1), (0.5, 1)])
def test_position_figure_median_has_the_sign_of_the_bias(store: Store, factor: float, sign: int) -> None:
    summary = _summary(store, [biased_session(f"t:{i}", calls=24, factor=factor) for i in range(3)])
    rows = pl.DataFrame(summary["position_error"])
    fig = plots.position_error(rows, estimators=["chars4"], min_calls=summary["min_figure_calls"])
    left, right = fig.axes[:2]
    median = next(line for line in left.lines if line.get_label() == "chars4")
    xs, ys = list(median.get_xdata()), list(median.get_ydata())
    assert len(ys) >= 2 and xs == sorted(xs)
    # chars4 counts 1/factor of what the provider counts: the predicted context errs in that direction
    assert all(sign * y > 0 for y in ys)
    drawn = rows.filter(pl.col("calls") >= summary["min_figure_calls"]).sort("ctx_from")
    assert ys == pytest.approx((drawn["p50"] * 100).to_list())
    ratio = next(line for line in right.lines if line.get_label() == "chars4")
    assert list(ratio.get_ydata()) == pytest.approx([1 / factor] * len(ratio.get_ydata()))
    assert "log scale" in left.get_xlabel()
    labels = [t.get_text() for t in left.get_xticklabels()]
    assert labels[:2] in (["2k", "4k"], ["4k", "8k"])


def test_content_kind_grid_shows_each_estimators_ratio_per_kind(store: Store) -> None:
    store.write([kinds_session()])
    summary = build_report(store, estimators=["chars4", "cjk"], replay=False).summary
    kinds = pl.DataFrame(summary["content_kinds"])
    fig = plots.content_kind_bias(kinds, order=CONTENT_KINDS, estimators=["chars4", "cjk"], min_calls=1)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["chars4", "cjk"]
    rows = [t.get_text().split("\n")[0] for t in ax.get_yticklabels()]
    assert rows == ["tool_output", "code", "json", "prose", "cjk"]  # `empty` is left out
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    by_kind = {(r["estimator"], r["content_kind"]): r for r in summary["content_kinds"]}
    for i, kind in enumerate(rows):
        for j, name in enumerate(["chars4", "cjk"]):
            assert cells[(i, j)] == f"{by_kind[(name, kind)]['append_bias']:.2f}"
    # chars4 counts a third of the CJK tokens: its cell is red (under), the exact log line is near white
    cjk = next(p for p in ax.patches if p.get_y() < rows.index("cjk") < p.get_y() + 1 and p.get_x() < 0)
    log = next(
        p for p in ax.patches if p.get_y() < rows.index("tool_output") < p.get_y() + 1 and p.get_x() < 0
    )
    red, green, blue, _ = cjk.get_facecolor()
    assert red > 2 * blue and red > 2 * green
    assert all(c > 0.9 for c in log.get_facecolor()[:3])
    # with too few calls to trust, every kind is grey and says so
    grey = plots.content_kind_bias(kinds, order=CONTENT_KINDS, estimators=["chars4"])
    assert all(t.get_text().endswith("(too few)") for t in grey.axes[0].get_yticklabels())


def test_content_kind_grid_reads_a_frame_with_delta_bias_only() -> None:
    # the notebook's frame: calls and delta_bias per estimator and kind
    kinds = pl.DataFrame(
        {
            "estimator": ["chars4", "chars4"],
            "content_kind": ["json", "prose"],
            "calls": [20, 30],
            "delta_bias": [0.75, 1.1],
        }
    )
    fig = plots.content_kind_bias(kinds, order=CONTENT_KINDS)
    assert sorted(t.get_text() for t in fig.axes[0].texts) == ["0.75", "1.10"]


def test_breaks_figure_shows_the_share_of_calls_not_scored_by_reason() -> None:
    row = dict.fromkeys(BREAK_REASONS, 0)
    breaks = pl.DataFrame(
        [
            {
                **row,
                "provider": "google",
                "model": "g",
                "calls": 90,
                "baselines": 4,
                "subagent_baselines": 1,
                "breaks": 5,
                "compaction": 3,
                "unrecorded": 2,
            },
            {
                **row,
                "provider": "google",
                "model": "h",
                "calls": 19,
                "baselines": 1,
                "subagent_baselines": 0,
                "breaks": 0,
            },
        ]
    )
    fig = plots.breaks_by_reason(breaks)
    ax = fig.axes[0]
    assert _rows_top_down(ax) == ["g\ngoogle · 100 calls", "h\ngoogle · 20 calls"]
    widths = {
        (round(p.get_y() + p.get_height() / 2), round(p.get_x(), 6)): round(p.get_width(), 6)
        for p in ax.patches
    }
    # g (top row): 5% first calls, then 3% compaction and 2% unrecorded after it
    assert widths[(1, 0.0)] == 5.0 and widths[(1, 5.0)] == 3.0 and widths[(1, 8.0)] == 2.0
    assert widths[(0, 0.0)] == 5.0  # h: one first call of 20
    assert [t.get_text() for t in ax.texts] == [" 10.0%", " 5.0%"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["first call", "compaction", "unrecorded"]


def test_error_distribution_and_scatter_say_their_scales(store: Store) -> None:
    store.write(
        [
            biased_session("t:a", provider="openai", model="m1"),
            biased_session("t:b", provider="google", model="g1"),
        ]
    )
    report = build_report(store, estimators=["chars4"], replay=False)
    dist = plots.error_distribution(report.scores)
    left, right = dist.axes[:2]
    assert "log scale" in left.get_xlabel() and "log scale" in right.get_xlabel()
    assert left.xaxis.get_major_formatter()(0.01, 0) == "0.01%"
    # chars4 counts half of each appended output: every ratio is 0.5
    ecdf = next(line for line in right.lines if line.get_label() == "chars4")
    assert set(ecdf.get_xdata()) == {0.5}
    scatter = plots.predicted_vs_actual(report.scores)
    assert [t.get_text() for t in scatter.legends[0].get_texts()] == ["google", "openai"]  # by provider
    assert "log scale" in scatter.axes[0].get_xlabel() and "log scale" in scatter.axes[0].get_ylabel()
    assert scatter.axes[0].get_title() == "chars4\nsum estimated / sum actual 0.50"
