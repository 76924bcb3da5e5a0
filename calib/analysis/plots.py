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
- `kinds`, `breaks`, `before_after`, and the `rows` of `model_error` and `position_error`: the
  `content_kinds`, `breaks`, `before_after`, `model_error` and `position_error` lists of a report's
  `summary.json`, as frames (`polars.DataFrame(summary["breaks"])`): every call, not a sample;
- `timeline`: the frame of `calib.analysis.replay.timeline` for one session.
"""

from __future__ import annotations

import math
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
    "model_error",
    "position_error",
    "predicted_vs_actual",
    "replay_timeline",
    "save_figure",
]

# Calls whose actual delta is below this many tokens are left out of ratio plots: one token of
# boundary noise on a 5-token delta is a 20% "error" that says nothing about the estimator.
MIN_DELTA = 50
# Estimate/actual ratios are drawn within this range (values beyond sit at its edges).
RATIO_RANGE = (0.2, 5.0)
# A provider/model, a band of context sizes or a content kind is drawn in colour when it has at least
# this many calls (calib.analysis.build.MIN_FIGURE_CALLS, which the report passes from its summary).
MIN_FIGURE_CALLS = 10
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


def _title(fig: Figure, title: str, note: str | None = None) -> None:
    """A title above the panels and, under it, which calls they show when not all of them (`note`)."""
    fig.suptitle(title + (f"\n{note}" if note else ""), fontsize=10)


def _percent(value: float) -> str:
    """A tick label for a value in percent: `−1%`, `0.01%`, `0`."""
    text = f"{abs(value):.6f}".rstrip("0").rstrip(".")
    if text == "0":
        return "0"
    return ("−" if value < 0 else "") + text + "%"


def _percent_axis(axis: Any) -> None:
    """Label an axis whose values are percentages as `1%`, not `10^0`."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _pos: _percent(value)))
    axis.set_minor_formatter(NullFormatter())


def _plain(text: str) -> str:
    """A tick label made from log data, its `$` escaped: matplotlib reads the text between two as math
    (and fails on one alone). Every other text of a figure is drawn as written (`_as_written`)."""
    return text.replace("$", r"\$")


def _group_label(provider: Any, model: Any, calls: int | None = None, what: str = "calls") -> str:
    """A provider/model as a two-line tick label: the model, then its provider and its calls."""
    if calls == 1:
        what = what.removesuffix("s")
    second = f"{provider or '?'}" + ("" if calls is None else f" · {calls:,} {what}")
    return _plain(f"{model or '?'}\n{second}")


def _group_order(rows: Sequence[dict[str, Any]], calls: str = "calls") -> list[dict[str, Any]]:
    """Provider/model rows by provider (alphabetical, unknown last), the busiest model first."""
    return sorted(
        rows,
        key=lambda r: (r["provider"] is None, r["provider"] or "", -(r.get(calls) or 0), r["model"] or ""),
    )


def _shade_rows(ax: Axes, rows: int) -> None:
    """Every other row on a light band, so that the markers of a row read as one group."""
    for i in range(0, rows, 2):
        ax.axhspan(i - 0.5, i + 0.5, color="#f0f0f0", zorder=0, linewidth=0)


def model_error(
    rows: pl.DataFrame,
    *,
    estimators: Sequence[str] | None = None,
    min_calls: int = MIN_FIGURE_CALLS,
) -> Figure:
    """Dot and whiskers per provider/model (a row, labelled with its scored calls) and estimator: the
    median of the signed error of the predicted context, (pred - ctx) / ctx, its middle half (thick bar)
    and p10-p90 (thin line), on a symmetric log axis in percent. Groups with fewer than `min_calls`
    scored calls are left out, and the axis label says how many.

    Expects the `model_error` list of a report's summary as a frame: `estimator`, `provider`, `model`,
    `calls` and the fractions `p10`, `p25`, `p50`, `p75`, `p90`."""

    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullLocator

    data = rows.to_dicts()
    names = _estimators(rows, estimators) if data else []
    colours = estimator_colours(names)
    calls: dict[tuple[Any, Any], int] = {}
    for r in data:
        key = (r["provider"], r["model"])
        calls[key] = max(calls.get(key, 0), int(r["calls"] or 0))
    groups = _group_order(
        [{"provider": p, "model": m, "calls": n} for (p, m), n in calls.items() if n >= min_calls]
    )
    left_out = sum(1 for n in calls.values() if 0 < n < min_calls)
    keyed = {(r["estimator"], r["provider"], r["model"]): r for r in data}
    with _style():
        fig = _figure(9, 1.6 + 0.5 * max(2, len(groups)))
        ax = fig.subplots()
        if not groups:
            _empty(ax, f"no provider/model with {min_calls} or more scored calls")
            return fig
        n = len(groups)
        _shade_rows(ax, n)
        step = 0.8 / max(1, len(names))
        medians = []
        for i, group in enumerate(groups):
            for j, name in enumerate(names):
                found = keyed.get((name, group["provider"], group["model"]))
                if found is None or found["p50"] is None:
                    continue
                y = n - 1 - i + ((len(names) - 1) / 2 - j) * step
                p10, p25, p50, p75, p90 = (100 * found[k] for k in ("p10", "p25", "p50", "p75", "p90"))
                ax.hlines(y, p10, p90, color=colours[name], linewidth=1.0, zorder=2)
                ax.hlines(y, p25, p75, color=colours[name], linewidth=4.0, zorder=3)
                ax.plot(
                    [p50],
                    [y],
                    "o",
                    color=colours[name],
                    markersize=5,
                    markeredgecolor="white",
                    markeredgewidth=0.8,
                    zorder=4,
                )
                medians.append(abs(p50))
        ax.axvline(0, color="#333333", linewidth=0.8, zorder=1)
        # linear within the decade of the typical median, logarithmic beyond it: a median of 0.05% and a
        # tail of -5% both read, and an unbiased estimator's medians sit on the zero line
        typical = float(np.median([m for m in medians if m > 0])) if any(medians) else 0.01
        ax.set_xscale("symlog", linthresh=10 ** math.floor(math.log10(typical)), linscale=0.6)
        _percent_axis(ax.xaxis)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yticks(
            np.arange(n)[::-1], [_group_label(g["provider"], g["model"], g["calls"]) for g in groups]
        )
        ax.tick_params(axis="y", length=0)
        ax.set_ylim(-0.6, n - 0.4)
        ax.grid(axis="y", visible=False)
        note = (
            f"\n{left_out} provider/model{'s' if left_out > 1 else ''} with fewer than {min_calls} scored "
            "calls not drawn"
            if left_out
            else ""
        )
        ax.set_xlabel(
            "(predicted − actual context) / actual context over the scored calls (symmetric log scale)\n"
            "← the agent shows less than the provider counted · the agent shows more →" + note
        )
        ax.set_title("Signed error of the predicted context per provider/model", loc="left")
        handles = [Line2D([], [], color=colours[nm], marker="o", linewidth=4, markersize=5) for nm in names]
        handles += [
            Line2D([], [], color="#777777", linewidth=4),
            Line2D([], [], color="#777777", linewidth=1),
        ]
        labels = [*names, "middle half of the calls", "p10–p90"]
        fig.legend(handles, labels, loc="outside upper center", ncols=min(4, len(labels)), frameon=False)
    return fig


def _size_label(tokens: float) -> str:
    """A context size as a tick label: 512, 4k, 128k, 1M."""
    if tokens >= 1 << 20:
        return f"{tokens / (1 << 20):g}M"
    if tokens >= 1 << 10:
        return f"{tokens / (1 << 10):g}k"
    return f"{tokens:g}"


def position_error(
    rows: pl.DataFrame,
    *,
    estimators: Sequence[str] | None = None,
    min_calls: int = MIN_FIGURE_CALLS,
    min_delta: int = MIN_DELTA,
) -> Figure:
    """The error as the context grows, per estimator, over bands of context size that double: left, the
    signed error of the predicted context, (pred - ctx) / ctx; right, estimated / actual appended tokens
    of the calls appending at least `min_delta` tokens (flat where the estimator's bias does not drift).
    A line is the median, its band the middle half of the calls; a band of sizes is drawn where it has
    `min_calls` calls.

    Expects the `position_error` list of a report's summary as a frame: `estimator`, `ctx_from`,
    `ctx_to`, `calls`, `p25`, `p50`, `p75`, `ratio_calls`, `ratio_p25`, `ratio_p50`, `ratio_p75`."""

    import polars as pl
    from matplotlib.ticker import FixedLocator, NullLocator

    names = _estimators(rows, estimators) if not rows.is_empty() else []
    colours = estimator_colours(names)
    with _style():
        fig = _figure(10, 4.2)
        left, right = fig.subplots(1, 2, sharex=True)
        edges: set[int] = set()
        for ax, count, prefix, scale in ((left, "calls", "", 100.0), (right, "ratio_calls", "ratio_", 1.0)):
            for name in names:
                sub = rows.filter((pl.col("estimator") == name) & (pl.col(count) >= min_calls))
                sub = sub.filter(pl.col(f"{prefix}p50").is_not_null()).sort("ctx_from")
                if sub.is_empty():
                    continue
                # each band drawn at its middle on the log axis
                x = (sub["ctx_from"].cast(pl.Float64) * math.sqrt(2)).to_numpy()
                mid, low, high = (
                    sub[f"{prefix}{q}"].cast(pl.Float64).to_numpy() * scale for q in ("p50", "p25", "p75")
                )
                ax.fill_between(x, low, high, color=colours[name], alpha=0.1, linewidth=0)
                for edge in (low, high):
                    ax.plot(x, edge, color=colours[name], linewidth=0.6, alpha=0.5)
                ax.plot(x, mid, color=colours[name], marker="o", markersize=3.5, linewidth=1.5, label=name)
                edges.update(sub["ctx_from"].to_list())
                edges.update(sub["ctx_to"].to_list())
        if not edges:
            _empty(left, f"no band of context sizes with {min_calls} or more scored calls")
            _empty(right, "")
            return fig
        ticks = sorted(edges)
        if len(ticks) > 8:
            ticks = ticks[:: -(-len(ticks) // 8)]
        left.set_xscale("log", base=2)
        left.xaxis.set_major_locator(FixedLocator(ticks))
        left.xaxis.set_minor_locator(NullLocator())
        left.set_xticklabels([_size_label(t) for t in ticks])
        left.set_xlim(min(edges) * 0.95, max(edges) * 1.05)
        left.axhline(0, color="#333333", linewidth=0.8)
        _percent_axis(left.yaxis)
        left.set_ylabel("(predicted − actual context) / actual context")
        left.set_title("Context prediction (0 = exact)")
        right.axhline(1, color="#333333", linewidth=0.8, linestyle="--")
        right.set_ylabel("estimated / actual appended tokens")
        right.set_title(f"Appended text, calls with delta ≥ {min_delta} (1 = exact)")
        right.tick_params(labelbottom=True)
        for ax in (left, right):
            ax.set_xlabel("context of the call, tokens (log scale; calls banded by doubling size)")
        handles, labels = left.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=min(5, len(labels)), frameon=False)
        _title(
            fig, "Error as the context grows: scored calls by context size (line: median; band: middle half)"
        )
    return fig


def error_distribution(
    scores: pl.DataFrame, *, min_delta: int = MIN_DELTA, note: str | None = None
) -> Figure:
    """Two ECDFs per estimator, both on log axes: |pred - ctx| / ctx of every scored call, and
    est_delta / delta of the calls that appended at least `min_delta` tokens; `note` says which calls
    they are when not all of them."""
    import polars as pl
    from matplotlib.ticker import FixedLocator, NullFormatter

    ok = _ok(scores)
    names = _estimators(scores)
    colours = estimator_colours(names)
    with _style():
        fig = _figure(10, 4.4)
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
            return fig
        left.set_xscale("log")
        _percent_axis(left.xaxis)
        left.set_xlabel("|predicted − actual context| / actual context (log scale; exact at the left edge)")
        left.set_ylabel("share of scored calls with at most this error")
        left.set_title("Context prediction: how far off")
        right.set_xscale("log")
        right.set_xlim(RATIO_RANGE[0] * 0.9, RATIO_RANGE[1] * 1.1)
        ticks = [0.25, 0.5, 1.0, 2.0, 4.0]
        right.xaxis.set_major_locator(FixedLocator(ticks))
        right.set_xticklabels([f"{t:g}×" for t in ticks])
        right.xaxis.set_minor_formatter(NullFormatter())
        right.axvline(1.0, color="#333333", linewidth=0.8, linestyle="--")
        right.set_xlabel(f"estimated / actual appended tokens, calls with delta ≥ {min_delta} (log scale)")
        right.set_ylabel("share of these calls with at most this ratio")
        right.set_title("Appended text: estimate / actual (clipped to 0.2–5×)")
        handles, labels = left.get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncols=min(5, len(labels)), frameon=False)
        _title(fig, "Distribution of the error over the scored calls", note)
    return fig


def predicted_vs_actual(scores: pl.DataFrame, *, max_panels: int = 6, note: str | None = None) -> Figure:
    """One panel per estimator: estimated versus actual appended tokens per scored call (log-log,
    coloured by provider; the per-model view is `model_error`), the dashed diagonal being a perfect
    estimate; each panel's title gives the sum of the estimates over the sum of the actual tokens, and
    `note` says which calls these are when not all of them."""
    import numpy as np
    import polars as pl

    ok = _ok(scores).filter((pl.col("delta") > 0) & (pl.col("est_delta") > 0))
    names = _estimators(scores)[:max_panels]
    providers = sorted({p or "?" for p in ok["provider"].to_list()})
    provider_colour = {p: _PALETTE[i % len(_PALETTE)] for i, p in enumerate(providers)}
    cols = min(3, max(1, len(names)))
    rows_n = max(1, -(-len(names) // cols))
    with _style():
        fig = _figure(3.2 * cols, 3.2 * rows_n + 0.9)
        axes = np.atleast_1d(fig.subplots(rows_n, cols, squeeze=False)).ravel()
        if ok.is_empty():
            lo, hi = 1.0, 10.0
        else:
            lo = float(ok.select(pl.min_horizontal(pl.col("delta").min(), pl.col("est_delta").min())).item())
            hi = float(ok.select(pl.max_horizontal(pl.col("delta").max(), pl.col("est_delta").max())).item())
        for ax, name in zip(axes, names, strict=False):
            rows = ok.filter(pl.col("estimator") == name).with_columns(pl.col("provider").fill_null("?"))
            if rows.is_empty():
                _empty(ax, f"{name}: no scored calls")
                continue
            for provider in providers:
                sub = rows.filter(pl.col("provider") == provider)
                if sub.is_empty():
                    continue
                ax.scatter(
                    sub["delta"].to_list(),
                    sub["est_delta"].to_list(),
                    s=6,
                    alpha=0.5,
                    color=provider_colour[provider],
                    label=provider,
                    linewidths=0,
                )
            ax.plot([lo, hi], [lo, hi], color="#333333", linewidth=0.8, linestyle="--")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo * 0.8, hi * 1.25)
            ax.set_ylim(lo * 0.8, hi * 1.25)
            bias = float(rows["est_delta"].sum()) / float(rows["delta"].sum())
            ax.set_title(f"{name}\nsum estimated / sum actual {bias:.2f}")
            ax.set_xlabel("actual appended tokens (log scale)")
            ax.set_ylabel("estimated (log scale)")
        for ax in axes[len(names) :]:
            ax.set_visible(False)
        if providers and not ok.is_empty():
            handles, labels = axes[0].get_legend_handles_labels()
            fig.legend(
                handles,
                labels,
                loc="outside lower center",
                ncols=min(6, len(providers)),
                markerscale=2.5,
                frameon=False,
                title="provider",
            )
        _title(
            fig, "Estimated versus actual appended tokens, one point per scored call (dashed: exact)", note
        )
    return fig


def content_kind_bias(
    kinds: pl.DataFrame,
    *,
    order: Sequence[str] | None = None,
    estimators: Sequence[str] | None = None,
    min_calls: int = MIN_FIGURE_CALLS,
) -> Figure:
    """A grid of content kinds (rows, labelled with their calls) by estimators (columns): estimated /
    actual appended tokens of the calls whose appended text is mostly of that kind, red where too few
    tokens were counted, blue where too many, white where exact. It reads `append_bias` over
    `append_calls` (the calls that only appended, the `content_kinds` list of a report's summary) where
    the frame has them, else `delta_bias` over `calls`; a kind with fewer than `min_calls` such calls is
    grey. Calls that appended nothing (kind `empty`) are left out."""

    import polars as pl
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    value = "append_bias" if "append_bias" in kinds.columns else "delta_bias"
    count = "append_calls" if "append_calls" in kinds.columns else "calls"
    kinds = kinds.filter(pl.col("content_kind") != "empty") if not kinds.is_empty() else kinds
    names = _estimators(kinds, estimators) if not kinds.is_empty() else []
    present = set(kinds["content_kind"].to_list()) if not kinds.is_empty() else set()
    kind_order = [k for k in (order or sorted(present)) if k in present]
    with _style():
        fig = _figure(max(6.0, 2.6 + 1.25 * len(names)), 1.6 + 0.55 * max(2, len(kind_order)))
        ax = fig.subplots()
        if not kind_order:
            _empty(ax, "no scored calls")
            return fig
        keyed = {(r["estimator"], r["content_kind"]): r for r in kinds.to_dicts()}
        counts = {
            k: max(int(keyed[(n, k)][count] or 0) for n in names if (n, k) in keyed) for k in kind_order
        }
        # colours on log2 of the ratio, saturating at 2.5x over or under
        limit = math.log2(2.5)
        norm = Normalize(-limit, limit)
        cmap = colormaps["RdBu"]
        for i, kind in enumerate(kind_order):
            few = counts[kind] < min_calls
            for j, name in enumerate(names):
                r = keyed.get((name, kind))
                v = None if r is None else r[value]
                face: Any
                if v is None or v <= 0:
                    text, ink, face = "–", "#555555", "#ffffff"
                else:
                    shade = float(norm(max(-limit, min(limit, math.log2(v)))))
                    text = f"{v:.2f}"
                    face = "#e6e6e6" if few else cmap(shade)
                    ink = "#777777" if few else ("white" if abs(shade - 0.5) > 0.32 else "black")
                ax.add_patch(Rectangle((j - 0.48, i - 0.46), 0.96, 0.92, facecolor=face, edgecolor="none"))
                ax.text(j, i, text, ha="center", va="center", fontsize=10, color=ink)
        ax.set_xlim(-0.5, len(names) - 0.5)
        ax.set_ylim(len(kind_order) - 0.5, -0.5)
        ax.set_xticks(range(len(names)), [_plain(n.replace(":", ":\n", 1)) for n in names])
        ax.xaxis.tick_top()
        labels = [
            f"{k}\n{counts[k]:,} calls" + (" (too few)" if counts[k] < min_calls else "") for k in kind_order
        ]
        ax.set_yticks(range(len(kind_order)), labels)
        ax.tick_params(length=0)
        ax.grid(False)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
        bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, fraction=0.05, pad=0.02)
        ticks = [0.4, 0.5, 0.7, 1.0, 1.4, 2.0, 2.5]
        bar.set_ticks([math.log2(t) for t in ticks], labels=[f"{t:g}×" for t in ticks])
        bar.set_label("estimated / actual appended tokens")
        ax.set_title(
            "Estimated / actual appended tokens by the content kind that dominates a call\n"
            "(1 = exact; red: counted too few tokens, blue: too many)",
            loc="left",
        )
    return fig


def _total_calls(row: dict[str, Any]) -> int:
    """All calls of a `breaks` row: scored, first calls and chain breaks."""
    keys = ("calls", "baselines", "subagent_baselines", "breaks")
    return int(sum(row.get(k) or 0 for k in keys))


def breaks_by_reason(breaks: pl.DataFrame, reasons: Sequence[str] | None = None) -> Figure:
    """Per provider/model (a row, labelled with its calls), the share of its calls that were not scored,
    stacked by why: a first call (of a session or a sub-agent) or a chain break by reason; each bar ends
    with the share it covers."""
    reasons = list(reasons or BREAK_REASONS)
    rows = _group_order([{**row, "_total": _total_calls(row)} for row in breaks.to_dicts()], calls="_total")
    used = [r for r in reasons if any(row.get(r) for row in rows)]
    with _style():
        fig = _figure(9, 1.5 + 0.45 * max(2, len(rows)))
        ax = fig.subplots()
        if not rows:
            _empty(ax, "no calls")
            return fig
        y = list(range(len(rows)))[::-1]
        left = [0.0] * len(rows)
        # first calls in light grey: every session has one, the breaks are what to look at
        series = [("first call", "#b8b8b8")] + [
            (r, _REASON_COLOURS[i % len(_REASON_COLOURS)]) for i, r in enumerate(used)
        ]
        for key, colour in series:
            if key == "first call":
                counts = [(row.get("baselines") or 0) + (row.get("subagent_baselines") or 0) for row in rows]
            else:
                counts = [row.get(key) or 0 for row in rows]
            values = [
                100.0 * c / row["_total"] if row["_total"] else 0.0
                for c, row in zip(counts, rows, strict=True)
            ]
            ax.barh(y, values, left=left, color=colour, label=key, height=0.65)
            left = [a + b for a, b in zip(left, values, strict=True)]
        for yi, share in zip(y, left, strict=True):
            ax.text(share, yi, f" {share:.1f}%", va="center", ha="left", fontsize=8, color="#333333")
        ax.set_xlim(0, max(max(left) * 1.15, 1.0))
        _percent_axis(ax.xaxis)
        ax.set_yticks(y, [_group_label(r["provider"], r["model"], r["_total"]) for r in rows])
        ax.tick_params(axis="y", length=0)
        ax.grid(axis="y", visible=False)
        ax.set_xlabel("share of the provider/model's calls that were not scored")
        ax.set_title(
            "Calls not scored, per provider/model: first calls and chain breaks by reason", loc="left"
        )
        fig.legend(loc="outside lower center", ncols=min(5, len(series)), frameon=False)
    return fig


def before_after(rows: pl.DataFrame, *, base: str | None = None, calibrated: str | None = None) -> Figure:
    """Paired bars per provider/model (a row, labelled with its held-out calls): delta MAE, scored
    context p90 error and end-to-end context p90 error of the base estimator (named `base`) and of its
    calibration (named `calibrated`) on held-out sessions."""
    import numpy as np

    data = _group_order([r for r in rows.to_dicts() if r.get("delta_mae_before") is not None])
    panels = [
        ("delta_mae", 1.0, "delta MAE (tokens)"),
        ("ctx_err_p90", 100.0, "scored context error p90"),
    ]
    if any(r.get("e2e_err_p90_before") is not None for r in data):
        panels.append(("e2e_err_p90", 100.0, "end-to-end context error p90"))
    with _style():
        fig = _figure(3.0 + 2.3 * len(panels), 1.4 + 0.5 * max(2, len(data)))
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
            ax.barh(y + h / 2, before, h, color="#7f7f7f", label=base or "base estimator")
            ax.barh(y - h / 2, after, h, color=_CALIBRATED_COLOUR, label=calibrated or "calibrated")
            values = [v for v in before + after if v > 0]
            if figure == "e2e_err_p90" and values and max(values) > 50 * min(values):
                # a plain estimator misses a whole system prompt where a calibration misses a few
                # tokens: on a linear axis the calibrated bars would vanish
                ax.set_xscale("log")
                title += ", log scale"
            if scale != 1.0:
                _percent_axis(ax.xaxis)
            ax.set_xlabel(title)
            ax.grid(axis="y", visible=False)
            ax.tick_params(axis="y", length=0)
        labels = [_group_label(r["provider"], r["model"], r.get("calls"), "held-out calls") for r in data]
        axes[0].set_yticks(y, labels)
        handles, names = axes[0].get_legend_handles_labels()
        fig.legend(handles, names, loc="outside lower center", ncols=2, frameon=False)
        _title(fig, "Held-out sessions: error before and after calibration (shorter is better)")
    return fig


# Each estimator's line in the replay timeline: its colour, and a dash and a marker of its own, so that
# lines a few tokens apart (or on top of the actual one) still read apart.
_TIMELINE_DASHES: tuple[Any, ...] = ((0, (5, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (3, 1)), (0, (8, 3)))
_TIMELINE_MARKERS = ("o", "s", "^", "D", "P", "X")
# Where the displayed context is a bare estimate or nothing (the first call, after a compaction): no
# count to build on, and no system prompt in calib's estimate, so it is far below and left off the lines.
_TIMELINE_BASES = ("chained", "actual")
# Black, apart from the estimators' palette (a calibrated estimator is red).
_THRESHOLD_COLOUR = "#000000"
_ANY = "(any estimator)"
_ANY_COLOUR = _PALETTE[0]


def _timeline_values(frame: pl.DataFrame, column: str) -> list[float]:

    return [math.nan if v is None else float(v) for v in frame[column].to_list()]


def _timeline_lines(timeline: pl.DataFrame, names: list[str]) -> dict[str, pl.DataFrame]:
    """Per estimator, its rows by call; one line `(any estimator)` when the rule shows the same count
    whatever the estimator (it reads the provider's last count, not an estimate)."""
    import polars as pl

    rows = {name: timeline.filter(pl.col("estimator") == name).sort("seq") for name in names}
    shown = [r["displayed"].to_list() for r in rows.values()]
    if len(names) > 1 and all(s == shown[0] for s in shown[1:]):
        return {_ANY: rows[names[0]]}
    return rows


def _timeline_clip(values: list[float]) -> float | None:
    """A limit for the error panel that keeps a few outliers from flattening the rest (None: none)."""

    known = sorted(abs(v) for v in values if not math.isnan(v))
    if not known:
        return None
    top = known[-1]
    p95 = known[min(len(known) - 1, int(0.95 * len(known)))]
    return 1.3 * p95 if p95 > 0 and top > 4 * p95 else None


def _timeline_level(
    ax: Axes, seqs: Sequence[float], levels: Sequence[float], name: str, colour: str, style: str, width: float
) -> None:
    """A level the timeline's context is read against (threshold, window), as steps between calls; its
    value is in the legend when it is the same on every call."""
    known = [v for v in levels if not math.isnan(v)]
    label = f"{name} ({max(known):,.0f})" if known and min(known) == max(known) else name
    ax.step(seqs, levels, where="post", color=colour, linestyle=style, linewidth=width, label=label, zorder=4)


def replay_timeline(
    timeline: pl.DataFrame, *, title: str | None = None, subtitle: str | None = None
) -> Figure:
    """One session over its calls under one rule. Top: the provider's count (the actual context), each
    estimator's displayed context in a colour, dash and marker of its own, drawn over the actual line,
    the compaction threshold (and the window when near), ▼ where each estimator would start compacting
    and ○ where the actual context reaches the threshold. Bottom: shown minus actual per estimator, on
    the calls whose chain holds (chain breaks and bare first estimates are left out, as in the summary).
    Chain breaks are dashed vertical lines on both panels.

    Expects the frame of `calib.analysis.replay.timeline`: one row per (call, estimator) with `seq`,
    `estimator`, `actual`, `displayed`, `threshold` and `compact`, and optionally `fires`, `should`,
    `window`, `status`, `basis` and `break`. When the rule shows the same count whatever the estimator,
    one line stands for all of them. A threshold far above the session is written on the chart instead
    of squashing the curves. `title` (the session) goes above the figure, `subtitle` (rule, window)
    above the panels.
    """

    import polars as pl

    values = _timeline_values
    with _style():
        fig = _figure(11, 6.5)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
        if title:
            fig.suptitle(title, fontsize=11)
        if timeline.is_empty():
            _empty(top, "no calls in this session")
            _empty(bottom, "")
            return fig
        names = _estimators(timeline)
        colours = estimator_colours(names)
        truth = timeline.filter(pl.col("estimator") == names[0]).sort("seq")
        seqs = truth["seq"].to_list()
        actual = values(truth, "actual")
        dense = len(seqs) > 150
        every = max(1, len(seqs) // 40) if dense else 1
        top.plot(
            seqs,
            actual,
            color="black",
            linewidth=3.0,
            alpha=0.55,
            label="actual (provider's count)",
            zorder=2,
        )
        lines = _timeline_lines(timeline, names)
        start = "fires" if "fires" in timeline.columns else "compact"
        usable = pl.lit(True)
        if "basis" in timeline.columns:
            usable = pl.col("basis").is_in(_TIMELINE_BASES).fill_null(False)
        scored = (
            usable & (pl.col("status") == "ok").fill_null(False) if "status" in timeline.columns else usable
        )
        errors_all: list[float] = []
        drawn_errors: list[tuple[str, list[int], list[float]]] = []
        bare = 0
        fired: list[tuple[int, float, str]] = []  # (call, shown, colour) where compaction would start
        for i, (name, rows) in enumerate(lines.items()):
            colour = colours.get(name, _ANY_COLOUR)
            style = {
                "color": colour,
                "linestyle": _TIMELINE_DASHES[i % len(_TIMELINE_DASHES)],
                "marker": _TIMELINE_MARKERS[i % len(_TIMELINE_MARKERS)],
                "markersize": 3.5,
                "markevery": every,
                "linewidth": 1.3,
            }
            kept = rows.with_columns(pl.when(usable).then(pl.col("displayed")).alias("_shown"))
            bare += kept.filter(pl.col("_shown").is_null() & pl.col("displayed").is_not_null()).height
            top.plot(
                kept["seq"].to_list(),
                values(kept, "_shown"),
                label="shown, any estimator (the last reported count)" if name == _ANY else f"{name}: shown",
                zorder=3 + i,
                **style,
            )
            errs = rows.with_columns(pl.when(scored).then(pl.col("displayed") - pl.col("actual")).alias("_e"))
            err = values(errs, "_e")
            errors_all += err
            drawn_errors.append((name, errs["seq"].to_list(), err))
            marks = rows.filter(pl.col(start).fill_null(False))
            fired += [
                (seq, value, colour)
                for seq, value in zip(marks["seq"].to_list(), values(marks, "displayed"), strict=True)
            ]
        if "should" in truth.columns:
            should = truth.with_columns(
                (pl.col("should").fill_null(False) & ~pl.col("should").shift(1).fill_null(False)).alias(
                    "_from"
                )
            ).filter(pl.col("_from"))
            if not should.is_empty():
                top.scatter(
                    should["seq"].to_list(),
                    values(should, "actual"),
                    marker="o",
                    s=110,
                    facecolors="none",
                    edgecolors=_THRESHOLD_COLOUR,
                    linewidths=1.6,
                    zorder=9,
                    label="actual reaches the threshold: should compact",
                )
        known = [v for v in actual if not math.isnan(v)]
        low, high = (min(known), max(known)) if known else (0.0, 1.0)
        limits = [v for v in values(truth, "threshold") if not math.isnan(v)]
        if limits and max(limits) <= 1.6 * high:
            _timeline_level(
                top, seqs, values(truth, "threshold"), "compaction threshold", _THRESHOLD_COLOUR, "--", 1.3
            )
            low, high = min(low, min(limits)), max(high, max(limits))
        elif limits:
            top.text(
                0.01,
                0.97,
                f"threshold {max(limits):,.0f} tokens: above the chart, nothing compacts",
                transform=top.transAxes,
                va="top",
                color=_THRESHOLD_COLOUR,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.9},
                zorder=11,
            )
        if "window" in truth.columns:
            windows = [v for v in values(truth, "window") if not math.isnan(v)]
            if windows and max(windows) <= 1.25 * high:
                _timeline_level(top, seqs, values(truth, "window"), "context window", "#555555", "-", 1.0)
                high = max(high, max(windows))
        span = max(high - low, 0.05 * high, 1.0)
        top.set_ylim(max(0.0, low - 0.12 * span), high + 0.08 * span)
        if fired:
            # ▼ where each estimator would start compacting; several on one call are stacked upwards
            from matplotlib.lines import Line2D

            stacked: dict[int, int] = {}
            for seq, value, colour in fired:
                level = stacked.get(seq, 0)
                stacked[seq] = level + 1
                top.scatter(
                    [seq],
                    [value + level * 0.045 * span],
                    marker="v",
                    s=70,
                    color=colour,
                    edgecolors="black",
                    linewidths=0.7,
                    zorder=10,
                    clip_on=False,
                )
            proxy = Line2D(
                [],
                [],
                linestyle="",
                marker="v",
                markersize=8,
                markerfacecolor="white",
                markeredgecolor="black",
                label="compaction would start (estimator's colour)",
            )
            legend_extra = [proxy]
        else:
            legend_extra = []
        # chain breaks as dashed vertical lines on both panels (fainter when there are many)
        breaks = truth.filter(pl.col("break").is_not_null()) if "break" in truth.columns else truth.clear()
        if not breaks.is_empty():
            alpha = 0.7 if breaks.height <= 20 else 0.35
            for j, seq in enumerate(breaks["seq"].to_list()):
                for ax in (top, bottom):
                    ax.axvline(
                        seq,
                        color="#777777",
                        linestyle=(0, (3, 3)),
                        linewidth=0.9,
                        alpha=alpha,
                        zorder=1,
                        label="chain break" if ax is top and j == 0 else None,
                    )
            if breaks.height <= 8:
                from matplotlib.transforms import blended_transform_factory

                along = blended_transform_factory(top.transData, top.transAxes)
                for seq, reason in breaks.select("seq", "break").iter_rows():
                    top.text(
                        seq,
                        0.98,
                        f"{reason} ",
                        transform=along,
                        rotation=90,
                        va="top",
                        ha="right",
                        fontsize=7,
                        color="#555555",
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.7, "pad": 1},
                        zorder=1,
                    )
        # the error panel: one line per estimator, clipped to its bulk when a few calls are far off
        clip = _timeline_clip(errors_all)
        for i, (name, xs, err) in enumerate(drawn_errors):
            style = {
                "color": colours.get(name, _ANY_COLOUR),
                "linestyle": _TIMELINE_DASHES[i % len(_TIMELINE_DASHES)],
                "marker": _TIMELINE_MARKERS[i % len(_TIMELINE_MARKERS)],
                "markersize": 3.5,
                "markevery": every,
                "linewidth": 1.2,
            }
            bottom.plot(xs, err, **style)
            if clip is not None:
                off = [
                    (x, math.copysign(clip + 0.04 * clip, e))
                    for x, e in zip(xs, err, strict=True)
                    if not math.isnan(e) and abs(e) > clip
                ]
                if off:
                    bottom.scatter(
                        [x for x, _ in off],
                        [y for _, y in off],
                        marker="|",
                        s=60,
                        color=style["color"],
                        clip_on=False,
                        zorder=5,
                    )
        if clip is not None:
            # clipped at the bulk's size, on the side(s) where the errors are
            known = [e for e in errors_all if not math.isnan(e)]
            lower = max(min([*known, 0.0]), -clip)
            upper = min(max([*known, 0.0]), clip)
            pad = 0.08 * max(upper - lower, 1.0)
            bottom.set_ylim(lower - pad, upper + pad)
        bottom.axhline(0, color="black", linewidth=0.8)
        bottom.set_ylabel("shown − actual (tokens)")
        bottom.set_xlabel("call")
        beyond = f" (beyond ±{clip:,.0f}: drawn at the edge)" if clip is not None else ""
        bottom.set_title(
            f"error of the shown context, calls whose chain holds{beyond}", loc="left", fontsize=9
        )
        top.set_ylabel("tokens in context")
        heading = subtitle or "context shown versus actual"
        if bare:
            heading += (
                "\nshown values with no reported count to build on (bare estimates, 0) are left off the lines"
            )
        top.set_title(heading, loc="left", fontsize=9)
        handles, _ = top.get_legend_handles_labels()
        top.legend(handles=[*handles, *legend_extra], loc="upper left", bbox_to_anchor=(1.0, 1.0))
        from matplotlib.ticker import MaxNLocator

        bottom.xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


# The colour of each kind of removal, marked on the removal timeline.
_REMOVAL_COLOURS = {"compaction": "#d62728", "pruned": "#9467bd", "reasoning": "#ff7f0e", "masked": "#7f7f7f"}


def removal_timeline(timeline: dict[str, Any]) -> Figure:
    """One session of an agent, call by call, as recorded and as it would have been without its
    removals (`calib.analysis.savings`' timeline): top, the prompt tokens; bottom, the input billed in
    dollars (cache reads and writes at their rates), or a note where the model has no price. Each
    removal is a vertical line in its kind's colour."""
    calls = timeline["calls"]
    with _style():
        fig = _figure(10, 5.5)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[1, 1])
        where = " · ".join(str(x) for x in (timeline.get("file"), timeline.get("model")) if x)
        fig.suptitle(
            f"{timeline['agent']}: input per call, as recorded and without its removals\n{where}", fontsize=10
        )
        if not calls:
            _empty(top, "no calls with usage")
            _empty(bottom, "")
            return fig
        x = [c["call"] for c in calls]
        top.plot(x, [c["input"] for c in calls], color="black", linewidth=1.6, label="as recorded")
        top.plot(x, [c["input_without"] for c in calls], color=_PALETTE[0], linestyle="--", linewidth=1.4,
                 label="without its removals")  # fmt: skip
        top.set_ylabel("prompt tokens")
        top.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")
        priced = all(c["usd_input"] is not None and c["usd_input_without"] is not None for c in calls)
        if priced:
            bottom.plot(x, [c["usd_input"] for c in calls], color="black", linewidth=1.6, label="as recorded")
            bottom.plot(x, [c["usd_input_without"] for c in calls], color=_PALETTE[0], linestyle="--",
                        linewidth=1.4, label="without its removals")  # fmt: skip
            bottom.set_ylabel("input billed, USD")
        else:
            _empty(bottom, "the price table has no price for this model: tokens only")
        seen: set[str] = set()
        for event in timeline["events"]:
            colour = _REMOVAL_COLOURS.get(event["kind"], "#7f7f7f")
            for ax in (top, bottom):
                ax.axvline(event["call"], color=colour, linestyle=":", linewidth=1.2,
                           label=event["kind"] if ax is top and event["kind"] not in seen else None)  # fmt: skip
            seen.add(event["kind"])
        bottom.set_xlabel("call")
        top.legend(loc="upper left", frameon=False, ncols=2)
    return fig


def _as_written(fig: Figure) -> None:
    """Draw every text of `fig` but its tick labels as written: titles, legends and notes hold model,
    session and estimator names, whose `$` would start matplotlib's math. Tick labels keep it, since the
    log axes' powers of ten are math; those made from log data are escaped instead (`_plain`)."""
    from matplotlib.text import Text

    ticks = {
        id(label)
        for ax in fig.axes
        for axis in (ax.xaxis, ax.yaxis)
        for label in axis.get_ticklabels(which="both")
    }
    for text in fig.findobj(Text):
        if id(text) not in ticks:
            text.set_parse_math(False)


def save_figure(fig: Figure, path: str | os.PathLike[str]) -> None:
    """Write a figure as PNG with no software tag or timestamp, so equal figures give equal bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    _as_written(fig)
    with _style():
        fig.savefig(os.fspath(path), format="png", metadata={"Software": None})
