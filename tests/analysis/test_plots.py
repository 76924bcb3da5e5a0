from __future__ import annotations

import polars as pl

from calib.analysis import plots


def _rows(with_e2e: bool) -> pl.DataFrame:
    row = {
        "provider": "google",
        "model": "gemini-2.5-pro",
        "delta_mae_before": 80.0,
        "delta_mae_after": 30.0,
        "ctx_err_p90_before": 0.008,
        "ctx_err_p90_after": 0.003,
    }
    if with_e2e:
        row.update({"e2e_err_p90_before": 0.9, "e2e_err_p90_after": 0.01})
    return pl.DataFrame([row])


def test_before_after_draws_the_end_to_end_panel_beside_the_scored_ones() -> None:
    fig = plots.before_after(_rows(with_e2e=True))
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert labels == [
        "delta MAE (tokens)",
        "scored context error p90 (%)",
        "end-to-end context error p90 (%), log scale",
    ]
    assert fig.axes[2].get_xscale() == "log"  # 90% against 1%: both bars must read
    # the bars carry the figures, in percent for the error panels
    widths = sorted(round(p.get_width(), 6) for p in fig.axes[2].patches)
    assert widths == [1.0, 90.0]


def test_before_after_without_end_to_end_figures_keeps_two_panels() -> None:
    fig = plots.before_after(_rows(with_e2e=False))
    assert [ax.get_xlabel() for ax in fig.axes] == ["delta MAE (tokens)", "scored context error p90 (%)"]
