"""The report's figures: matplotlib `Figure` objects built from calib's polars frames.

Every function returns a `matplotlib.figure.Figure` made without pyplot (so it never touches the
global backend: the report renders with Agg, a notebook shows the figure inline), under matplotlib's
default style whatever the user's rc settings, so the same data draws the same picture. `save_figure`
writes a PNG without the software tag, which makes the bytes depend only on the figure and the
matplotlib version. matplotlib is imported inside the functions: `import calib` never loads it.

Inputs:

- `scores`: the per-call frame of `calib.score_calls` (columns `estimator`, `provider`, `model`,
  `status`, `ctx`, `delta`, `est_delta`, `error`), or some sessions' rows of it (the report draws the
  sample of `calib.analysis.build.Report.scores`, named by the figure's `note`);
- `kinds`, `breaks`, `before_after`: the `content_kinds`, `breaks` and `before_after` lists of a
  report's `summary.json`, as frames (`polars.DataFrame(summary["breaks"])`);
- `timeline`: the frame of `calib.analysis.replay.timeline` for one session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from calib.scoring.chain import BREAK_REASONS

if TYPE_CHECKING:
    import polars as pl
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "before_after",
    "breaks_by_reason",
    "content_kind_bias",
    "error_distribution",
    "predicted_vs_actual",
    "replay_timeline",
    "save_figure",
]

# Calls whose actual delta is below this many tokens are left out of ratio plots: one token of
# boundary noise on a 5-token delta is a 20% "error" that says nothing about the estimator.
MIN_DELTA = 50
# Estimate/actual ratios are drawn within this range (values beyond sit at its edges).
RATIO_RANGE = (0.2, 5.0)
DPI = 100
# rc settings on top of matplotlib's defaults (fonts, sizes) so figures read well at GitHub's width.
_RC: dict[Any, Any] = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
_PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
_CALIBRATED_COLOUR = "#d62728"
_REASON_COLOURS = (
    "#ff7f0e",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#2ca02c",
    "#7f7f7f",
)


@contextmanager
def _style() -> Iterator[None]:
    """matplotlib's default style plus `_RC`, restored on exit."""
    import matplotlib as mpl

    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update(_RC)
        yield


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def estimator_colours(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per estimator (calibrated ones in red), in the order given."""
    colours: dict[str, str] = {}
    raw = [n for n in names if not n.startswith("calibrated")]
    for i, name in enumerate(raw):
        colours[name] = _PALETTE[i % len(_PALETTE)]
    for name in names:
        if name.startswith("calibrated"):
            colours[name] = _CALIBRATED_COLOUR
    return colours


def _estimators(scores: pl.DataFrame, order: Sequence[str] | None = None) -> list[str]:
    # raw estimators first, in the given or first-seen order, then calibrated ones
    present = set(scores["estimator"].to_list())
    names = (
        [n for n in order if n in present] if order else list(dict.fromkeys(scores["estimator"].to_list()))
    )
    return [n for n in names if not n.startswith("calibrated")] + [
        n for n in names if n.startswith("calibrated")
    ]


def _ok(scores: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    return scores.filter((pl.col("status") == "ok") & pl.col("ctx").is_not_null() & (pl.col("ctx") > 0))


def _ecdf(ax: Axes, values: Sequence[float], **kwargs: Any) -> None:
    import numpy as np

    xs = np.sort(np.asarray(values, dtype=float))
    if xs.size == 0:
        return
    ys = np.arange(1, xs.size + 1) / xs.size
    ax.step(xs, ys, where="post", **kwargs)


def _empty(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _note(fig: Figure, note: str | None) -> None:
    """A line above the panels saying what they show (the sample of sessions drawn, say)."""
    if note:
        fig.suptitle(note, fontsize=8, color="#555555")


def error_distribution(
    scores: pl.DataFrame, *, min_delta: int = MIN_DELTA, note: str | None = None
) -> Figure:
    """Two ECDFs per estimator: |pred - ctx| / ctx of every scored call, and est_delta / delta of the
    calls that appended at least `min_delta` tokens; `note` is written above them."""
    import polars as pl
    from matplotlib.ticker import NullFormatter

    ok = _ok(scores)
    names = _estimators(scores)
    colours = estimator_colours(names)
    with _style():
        fig = _figure(10, 4)
        left, right = fig.subplots(1, 2)
        floor = 1e-4  # percent: exact predictions are drawn at the left edge of the log axis
        for name in names:
            rows = ok.filter(pl.col("estimator") == name)
            rel = (rows["error"].abs() / rows["ctx"] * 100).clip(lower_bound=floor).to_list()
            _ecdf(left, rel, color=colours[name], label=name, linewidth=1.4)
            big = rows.filter(pl.col("delta") >= min_delta)
            ratio = (big["est_delta"] / big["delta"]).clip(RATIO_RANGE[0], RATIO_RANGE[1]).to_list()
            _ecdf(right, ratio, color=colours[name], label=name, linewidth=1.4)
        if ok.is_empty():
            _empty(left, "no scored calls")
            _empty(right, "no scored calls")
        else:
            left.set_xscale("log")
            left.set_xlabel("|predicted - actual context| / actual context (%)")
            left.set_ylabel("share of scored calls")
            left.set_title("Relative error of the context prediction")
            left.legend(loc="lower right")
            right.set_xscale("log")
            right.set_xlim(RATIO_RANGE[0] * 0.9, RATIO_RANGE[1] * 1.1)
            ticks = [0.25, 0.5, 1.0, 2.0, 4.0]
            right.set_xticks(ticks, [f"{t:g}" for t in ticks])
            right.xaxis.set_minor_formatter(NullFormatter())
            right.axvline(1.0, color="#333333", linewidth=0.8, linestyle="--")
            right.set_xlabel(f"estimated / actual appended tokens (calls with delta ≥ {min_delta})")
            right.set_ylabel("share of calls")
            right.set_title("Estimate of the appended text (1 = exact; clipped to 0.2-5)")
        _note(fig, note)
    return fig


def predicted_vs_actual(scores: pl.DataFrame, *, max_panels: int = 6, note: str | None = None) -> Figure:
    """One panel per estimator: estimated versus actual appended tokens (log-log, coloured by
    provider/model), the diagonal being a perfect estimate; the title gives the overall bias, and `note`
    is written above the panels."""
    import numpy as np
    import polars as pl

    ok = _ok(scores).filter((pl.col("delta") > 0) & (pl.col("est_delta") > 0))
    names = _estimators(scores)[:max_panels]
    groups = sorted(
        {f"{p or '?'}/{m or '?'}" for p, m in ok.select("provider", "model").unique().iter_rows()}
    )
    group_colour = {g: _PALETTE[i % len(_PALETTE)] for i, g in enumerate(groups)}
    cols = min(3, max(1, len(names)))
    rows_n = max(1, -(-len(names) // cols))
    with _style():
        fig = _figure(3.4 * cols, 3.2 * rows_n + 0.4)
        axes = np.atleast_1d(fig.subplots(rows_n, cols, squeeze=False)).ravel()
        if ok.is_empty():
            lo, hi = 1.0, 10.0
        else:
            lo = float(ok.select(pl.min_horizontal(pl.col("delta").min(), pl.col("est_delta").min())).item())
            hi = float(ok.select(pl.max_horizontal(pl.col("delta").max(), pl.col("est_delta").max())).item())
        for ax, name in zip(axes, names, strict=False):
            rows = ok.filter(pl.col("estimator") == name).with_columns(
                pl.concat_str(
                    pl.col("provider").fill_null("?"), pl.lit("/"), pl.col("model").fill_null("?")
                ).alias("_group")
            )
            if rows.is_empty():
                _empty(ax, f"{name}: no scored calls")
                continue
            for group in groups:
                sub = rows.filter(pl.col("_group") == group)
                if sub.is_empty():
                    continue
                ax.scatter(
                    sub["delta"].to_list(),
                    sub["est_delta"].to_list(),
                    s=6,
                    alpha=0.5,
                    color=group_colour[group],
                    label=group,
                    linewidths=0,
                )
            ax.plot([lo, hi], [lo, hi], color="#333333", linewidth=0.8, linestyle="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo * 0.8, hi * 1.25)
            ax.set_ylim(lo * 0.8, hi * 1.25)
            bias = float(rows["est_delta"].sum()) / float(rows["delta"].sum())
            ax.set_title(f"{name}\nestimate/actual {bias:.2f}")
            ax.set_xlabel("actual appended tokens (delta)")
            ax.set_ylabel("estimated")
        for ax in axes[len(names) :]:
            ax.set_visible(False)
        if groups and not ok.is_empty():
            handles, labels = axes[0].get_legend_handles_labels()
            fig.legend(
                handles,
                labels,
                loc="outside lower center",
                ncols=min(4, len(groups)),
                markerscale=2.5,
                frameon=False,
            )
        _note(fig, note)
    return fig


def content_kind_bias(
    kinds: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    estimators: Sequence[str] | None = None,
) -> Figure:
    """Grouped bars: estimated / actual appended tokens per dominant content kind and estimator
    (calls that appended nothing, kind `empty`, have no ratio and are left out)."""
    import numpy as np
    import polars as pl

    kinds = kinds.filter(pl.col("content_kind") != "empty") if not kinds.is_empty() else kinds
    names = _estimators(kinds, estimators) if not kinds.is_empty() else []
    colours = estimator_colours(names)
    present = set(kinds["content_kind"].to_list()) if not kinds.is_empty() else set()
    kind_order = [k for k in (order or sorted(present)) if k in present]
    with _style():
        fig = _figure(max(6.0, 1.3 * len(kind_order) + 2), 3.8)
        ax = fig.subplots()
        if not kind_order:
            _empty(ax, "no scored calls")
            return fig
        width = 0.8 / max(1, len(names))
        x = np.arange(len(kind_order))
        for i, name in enumerate(names):
            rows = {r["content_kind"]: r for r in kinds.filter(pl.col("estimator") == name).to_dicts()}
            values = [
                rows[k]["delta_bias"] if k in rows and rows[k]["delta_bias"] is not None else np.nan
                for k in kind_order
            ]
            ax.bar(x + (i - (len(names) - 1) / 2) * width, values, width, color=colours[name], label=name)
        ax.axhline(1.0, color="#333333", linewidth=0.8, linestyle="--")
        calls = {
            r["content_kind"]: r["calls"] for r in kinds.filter(pl.col("estimator") == names[0]).to_dicts()
        }
        ax.set_xticks(x, [f"{k}\n({calls.get(k, 0)} calls)" for k in kind_order])
        ax.set_ylabel("estimated / actual appended tokens")
        ax.set_title("Bias by the dominant content kind of the appended text (1 = exact)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def breaks_by_reason(breaks: pl.DataFrame, reasons: Sequence[str] | None = None) -> Figure:
    """Horizontal stacked bars per provider/model: scored calls, then each chain-break reason."""
    reasons = list(reasons or BREAK_REASONS)
    rows = breaks.to_dicts()
    used = [r for r in reasons if any(row.get(r) for row in rows)]
    labels = [f"{row['provider'] or '?'}/{row['model'] or '?'}" for row in rows]
    with _style():
        fig = _figure(9, 1.0 + 0.35 * max(1, len(rows)))
        ax = fig.subplots()
        if not rows:
            _empty(ax, "no calls")
            return fig
        y = list(range(len(rows)))[::-1]
        left = [0.0] * len(rows)
        series = [("scored", "#a6c8e0"), ("first call", "#555555")] + [
            (r, _REASON_COLOURS[i % len(_REASON_COLOURS)]) for i, r in enumerate(used)
        ]
        for key, colour in series:
            if key == "scored":
                values = [float(row.get("calls") or 0) for row in rows]
            elif key == "first call":
                values = [
                    float((row.get("baselines") or 0) + (row.get("subagent_baselines") or 0)) for row in rows
                ]
            else:
                values = [float(row.get(key) or 0) for row in rows]
            ax.barh(y, values, left=left, color=colour, label=key, height=0.7)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.set_yticks(y, labels)
        ax.set_xlabel("calls")
        ax.set_title("Calls per provider/model: scored, first calls and chain breaks by reason")
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def before_after(rows: pl.DataFrame) -> Figure:
    """Paired bars per provider/model: delta MAE, scored context p90 error and end-to-end context p90
    error of the base estimator and of its calibration on held-out sessions."""
    import numpy as np

    data = [r for r in rows.to_dicts() if r.get("delta_mae_before") is not None]
    labels = [f"{r['provider'] or '?'}/{r['model'] or '?'}" for r in data]
    panels = [
        ("delta_mae", 1.0, "delta MAE (tokens)"),
        ("ctx_err_p90", 100.0, "scored context error p90 (%)"),
    ]
    if any(r.get("e2e_err_p90_before") is not None for r in data):
        panels.append(("e2e_err_p90", 100.0, "end-to-end context error p90 (%)"))
    with _style():
        fig = _figure(4.0 + 3.2 * len(panels), 0.9 + 0.4 * max(2, len(data)))
        axes = fig.subplots(1, len(panels), sharey=True)
        if not data:
            for ax in axes:
                _empty(ax, "no held-out calls")
            return fig
        y = np.arange(len(data))[::-1]
        h = 0.38
        for ax, (figure, scale, title) in zip(axes, panels, strict=True):
            before = [(r.get(f"{figure}_before") or 0.0) * scale for r in data]
            after = [(r.get(f"{figure}_after") or 0.0) * scale for r in data]
            ax.barh(y + h / 2, before, h, color="#7f7f7f", label="base estimator")
            ax.barh(y - h / 2, after, h, color=_CALIBRATED_COLOUR, label="calibrated")
            values = [v for v in before + after if v > 0]
            if figure == "e2e_err_p90" and values and max(values) > 50 * min(values):
                # a plain estimator misses a whole system prompt where a calibration misses a few
                # tokens: on a linear axis the calibrated bars would vanish
                ax.set_xscale("log")
                title += ", log scale"
            ax.set_xlabel(title)
        axes[0].set_yticks(y, labels)
        axes[0].set_title("Held-out sessions: before and after calibration", loc="left")
        axes[-1].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def replay_timeline(timeline: pl.DataFrame, *, title: str | None = None) -> Figure:
    """One session over its calls. Top: the true context, each estimator's displayed context, the
    compaction threshold and the calls where each estimator would start compacting. Bottom: shown
    minus actual per estimator (symmetric log scale, so a first call shown from a bare estimate and
    a few tokens of drift both read).

    Expects the frame of `calib.analysis.replay.timeline`: one row per (call, estimator) with `seq`,
    `estimator`, `actual`, `displayed`, `threshold`, `compact` and optionally `fires` (where
    compaction would start) and `break` (the chain-break reason where calib restarted the chain).
    A threshold far above the session is written on the chart instead of squashing the curves.
    """
    import math

    import polars as pl

    def values(frame: pl.DataFrame, column: str) -> list[float]:
        return [math.nan if v is None else float(v) for v in frame[column].to_list()]

    with _style():
        fig = _figure(10, 6)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
        if timeline.is_empty():
            _empty(top, "no calls in this session")
            _empty(bottom, "")
            return fig
        names = _estimators(timeline)
        colours = estimator_colours(names)
        truth = timeline.filter(pl.col("estimator") == names[0]).sort("seq")
        seqs = truth["seq"].to_list()
        actual = values(truth, "actual")
        top.plot(seqs, actual, color="black", linewidth=2.2, label="actual (provider)", zorder=3)
        start = "fires" if "fires" in timeline.columns else "compact"
        # long sessions: thinner lines and no point markers, or the curves turn into solid bands
        dense = len(seqs) > 150
        width = 0.7 if dense else 1.2
        for name in names:
            rows = timeline.filter(pl.col("estimator") == name).sort("seq")
            shown = values(rows, "displayed")
            top.plot(
                rows["seq"].to_list(), shown, color=colours[name], linewidth=width, label=f"{name} (shown)"
            )
            error = values(rows.with_columns((pl.col("displayed") - pl.col("actual")).alias("_e")), "_e")
            bottom.plot(
                rows["seq"].to_list(),
                error,
                color=colours[name],
                linewidth=width,
                alpha=0.8 if dense else 1.0,
                marker="" if dense else ".",
                markersize=4,
            )
            marks = rows.filter(pl.col(start).fill_null(False))
            if not marks.is_empty():
                top.scatter(
                    marks["seq"].to_list(),
                    values(marks, "displayed"),
                    marker="v",
                    s=60,
                    color=colours[name],
                    edgecolors="black",
                    linewidths=0.6,
                    zorder=4,
                )
        known = [v for v in actual if not math.isnan(v)]
        low, high = (min(known), max(known)) if known else (0.0, 1.0)
        limits = [v for v in values(truth, "threshold") if not math.isnan(v)]
        if limits and max(limits) <= 1.6 * high:
            top.step(
                seqs,
                values(truth, "threshold"),
                where="post",
                color="#d62728",
                linestyle=":",
                linewidth=1.4,
                label="compaction threshold",
            )
            low, high = min(low, min(limits)), max(high, max(limits))
        elif limits:
            top.text(
                0.01,
                0.97,
                f"threshold {max(limits):,.0f} tokens: above the chart, nothing compacts",
                transform=top.transAxes,
                va="top",
                color="#d62728",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.9},
                zorder=5,
            )
        # the actual context sets the scale; a displayed value far below it (a first call shown from
        # a bare estimate) leaves the chart and reads on the error panel
        span = max(high - low, 0.05 * high, 1.0)
        top.set_ylim(max(0.0, low - 0.15 * span), high + 0.1 * span)
        if "break" in truth.columns:
            from matplotlib.transforms import blended_transform_factory

            # chain restarts as a rug along the bottom of the context panel (there can be hundreds)
            breaks = truth.filter(pl.col("break").is_not_null())["seq"].to_list()
            if breaks:
                top.scatter(
                    breaks,
                    [0.0] * len(breaks),
                    transform=blended_transform_factory(top.transData, top.transAxes),
                    marker="|",
                    s=120,
                    color="#777777",
                    label="chain restarts",
                    clip_on=False,
                    zorder=2,
                )
        bottom.axhline(0, color="black", linewidth=0.8)
        bottom.set_yscale("symlog", linthresh=100)
        bottom.set_ylabel("shown - actual")
        bottom.set_xlabel("call")
        top.set_ylabel("tokens in context")
        top.set_title(title or "Context shown versus actual (▼ = compaction would start)")
        top.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def save_figure(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Write a figure as PNG with no software tag or timestamp, so equal figures give equal bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with _style():
        fig.savefig(os.fspath(path), format="png", metadata={"Software": None})
