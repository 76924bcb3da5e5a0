"""The report as markdown: `render_markdown(summary)`, a pure function of a report's summary.

Every number in `report.md` is a figure of `summary.json` rounded for display, and a figure is linked
only when the summary lists its file (`figures`).

Text that comes from the logs or the user (provider, model, session and file names, estimator names,
which may hold a path) is written through `_text` or `_code`: control characters shown escaped
(`calib.core.printable`), so a newline cannot break a table row nor an escape sequence reach a terminal
that shows the file, and markdown in it (a link, emphasis, HTML, a backtick) shown as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from calib.analysis.content import CONTENT_KINDS, EMPTY_KIND
from calib.analysis.summary import FIGURES, savings_figure
from calib.core.printable import printable
from calib.scoring.chain import BREAK_REASONS, LOG_VISIBLE_REASONS

__all__ = ["render_markdown"]


def _num(value: Any, spec: str) -> str:
    return "–" if value is None else spec.format(value)


def _pct(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    text = f"{value * 100:.{digits}f}"
    return ("0." + "0" * digits if text == "-0." + "0" * digits else text) + "%"


def _text(value: Any) -> str:
    """Log or user text as plain markdown: control characters escaped, markup characters inert."""
    return printable(_MARKUP.sub(r"\\\g<0>", str(value)))


# What could start markup in plain text: a backslash escape, a code span, emphasis, a link or an image,
# HTML. (`_` inside a word, as in model and project names, is no emphasis: it is left alone.)
_MARKUP = re.compile(r"[\\`*\[<]")


def _code(value: Any) -> str:
    """Log or user text as a code span, control characters escaped: fenced with one backtick more than
    the longest run of backticks it holds, so none of them ends it."""
    text = printable(value)
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _group_name(provider: Any, model: Any) -> str:
    return f"{_text(provider or '?')} / {_text(model or '?')}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], align: str | None = None) -> list[str]:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    out = [
        "| " + " | ".join(cell.replace("|", "\\|") for cell in header) + " |",
        "| " + " | ".join(marks) + " |",
    ]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return out


def render_markdown(summary: dict[str, Any]) -> str:
    """The report as markdown, made from a summary only (so every number is traceable to it)."""
    lines: list[str] = ["# Token estimate report", ""]
    store = summary["store"]
    tools = ", ".join(f"{tool} {n}" for tool, n in sorted(store["sessions_by_tool"].items()))
    calibration = summary.get("calibration")
    lines += [
        f"Store: {store['sessions']} sessions{f' ({tools})' if tools else ''}, {store['calls']} calls, {store['parts']} parts. "
        f"Estimators: {', '.join(_code(n) for n in summary['estimators'])}.",
        "",
        "Every number below is a figure of `summary.json` beside this file, rounded for display. "
        "For call k, `delta` is what the provider counted for the text appended since call k-1 "
        "(`ctx[k] - ctx[k-1] - carry[k-1]`), the estimator predicts it from the appended parts (less any "
        "text the log shows leaving the context), and the predicted context is "
        "`ctx[k-1] + carry[k-1] + estimate`.",
        "",
        "Accuracy is shown two ways. *Scored* figures (`delta`, `ctx err`) keep the calls predicted from "
        "the previous call's usage where the chain holds; a call after a chain break (compaction, missing "
        "usage, ...) is left out, and `coverage` is the share of calls with a predecessor that were "
        "scored. *End-to-end* figures (`e2e`) keep every call with usage, as an agent would have to "
        "predict it, breaks included (not the calls after a turn the log did not record, "
        "`unlogged_turn`): the first call of a session, or a call after a compaction or a "
        "model change, is predicted in full from the whole prompt plus a fitted static overhead (system "
        "prompt and tool schemas). Plain estimators have no such overhead, so their end-to-end figures "
        "include that miss; a calibration fits it.",
        "",
    ]
    if calibration:
        source = (
            f"fitted on the {calibration['train_sessions']} training sessions of this store "
            f"({calibration['train_calls']} scored calls) and written as {_code(calibration['config'])}"
            if calibration["source"] == "fitted"
            else f"read from {_code(calibration['config'])}"
        )
        lines += [
            f"Calibration {_code(calibration['label'])} (base {_code(calibration['base'])}): {source}; "
            f"sha256 `{calibration['sha256'][:12]}`.",
            "",
        ]
    lines += _overall_section(summary)
    if summary.get("agent_estimates"):
        lines += _agent_estimates_section(summary)
    lines += _groups_section(summary)
    lines += _distribution_section(summary)
    lines += _position_section(summary)
    lines += _predicted_section(summary)
    lines += _kinds_section(summary)
    lines += _full_section(summary)
    lines += _breaks_section(summary)
    if summary.get("misses") is not None:
        lines += _misses_section(summary)
    if summary.get("before_after") is not None:
        lines += _before_after_section(summary)
    if summary.get("replay") is not None:
        lines += _replay_section(summary)
    if summary.get("savings") is not None:
        lines += _savings_section(summary)
    return "\n".join(lines).rstrip("\n") + "\n"


def _agent_estimates_section(summary: dict[str, Any]) -> list[str]:
    """The estimates the agents logged themselves beside the provider's count (`calib.scoring.agents`)."""
    lines = ["## The agents' own estimates", ""]
    lines += [
        "Some agents log the whole prompt they estimated before a call beside the count the provider "
        "reported for it (Dexto's `Context estimation accuracy` lines, llxprt-code's token-usage log). "
        "Each agent's pairs are scored as `agent:TOOL`, the error being the same context error as above; "
        "bias is the sum of the estimates over the sum of the counts (below 1: the agent counts too few).",
        "",
    ]
    table = [
        [
            _code(r["estimator"]),
            str(r["calls"]),
            _pct(r["ctx_err_p50"], 3),
            _pct(r["ctx_err_p90"], 3),
            _pct(r["ctx_err_p99"], 3),
            _pct(r["ctx_err_mean"], 3),
            _num(r["ctx_bias"], "{:.3f}"),
        ]
        for r in summary["agent_estimates"]
    ]
    headers = ["agent's estimator", "pairs", "err p50", "err p90", "err p99", "mean signed err", "bias"]
    lines += _table(headers, table)
    return [*lines, ""]


def _figure_link(summary: dict[str, Any], key: str, alt: str) -> list[str]:
    name = FIGURES[key]
    if name not in summary.get("figures", []):
        return []
    return [f"![{alt}]({name})", ""]


def _overall_section(summary: dict[str, Any]) -> list[str]:
    rows = summary["overall"]
    scored = [r for r in rows if r["delta_mae"] is not None]
    best = min(scored, key=lambda r: r["delta_mae"])["estimator"] if scored else None
    table = [
        [
            f"**{_code(r['estimator'])}**" if r["estimator"] == best else _code(r["estimator"]),
            str(r["calls"]),
            _pct(r.get("coverage"), 1),
            _num(r["delta_mae"], "{:.1f}"),
            _num(r["delta_bias"], "{:.3f}"),
            _pct(r["ctx_err_p50"], 3),
            _pct(r["ctx_err_p90"], 3),
            _pct(r["ctx_err_p99"], 3),
            _num(r.get("e2e_calls"), "{}"),
            _pct(r.get("e2e_err_p50"), 3),
            _pct(r.get("e2e_err_p90"), 3),
            _pct(r.get("e2e_err_p99"), 3),
        ]
        for r in rows
    ]
    lines = ["## Overall", ""]
    lines += _table(
        [
            "estimator",
            "scored calls",
            "coverage",
            "delta MAE",
            "delta bias",
            "ctx err p50",
            "ctx err p90",
            "ctx err p99",
            "e2e calls",
            "e2e err p50",
            "e2e err p90",
            "e2e err p99",
        ],
        table,
    )
    lines += [
        "",
        "delta MAE: mean |estimate - delta| in tokens. delta bias: sum of estimates / sum of actual "
        "deltas (1 is unbiased, 0.7 means 30% low). ctx err: |predicted - actual context| / actual "
        "context, percentiles over scored calls; coverage: scored calls / calls with usage that have a "
        "predecessor. e2e err: the same error over every call with usage (e2e calls), breaks and first "
        "calls included." + (" Lowest delta MAE in bold." if best else ""),
        "",
    ]
    if summary.get("calibration"):
        lines += [
            "The calibrated rows here and in the next tables include the sessions the calibration was "
            "fitted on; the held-out comparison is in *Calibration before and after*.",
            "",
        ]
    return lines


def _groups_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Error by estimator, provider and model", ""]
    lines += _models_figure(summary)
    rows = []
    by_group: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for r in summary["groups"]:
        by_group.setdefault((r["provider"], r["model"]), []).append(r)
    for (provider, model), group in sorted(by_group.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or "")):
        scored = [r for r in group if r["delta_mae"] is not None]
        best = min(scored, key=lambda r: r["delta_mae"])["estimator"] if scored else None
        for r in group:
            rows.append(
                [
                    _group_name(provider, model),
                    f"**{_code(r['estimator'])}**" if r["estimator"] == best else _code(r["estimator"]),
                    str(r["calls"]),
                    str(r["breaks"]),
                    _num(r["delta_mae"], "{:.1f}"),
                    _num(r["delta_bias"], "{:.3f}"),
                    _pct(r["ctx_err_p50"], 3),
                    _pct(r["ctx_err_p90"], 3),
                    _pct(r["ctx_err_p99"], 3),
                    _pct(r.get("e2e_err_p90"), 3),
                    _pct(r.get("e2e_err_p99"), 3),
                    _num(r["static_overhead_p50"], "{:,.0f}"),
                ]
            )
    lines += _table(
        [
            "provider / model",
            "estimator",
            "scored",
            "breaks",
            "delta MAE",
            "delta bias",
            "ctx p50",
            "ctx p90",
            "ctx p99",
            "e2e p90",
            "e2e p99",
            "static overhead p50",
        ],
        rows,
        "llrrrrrrrrrr",
    )
    lines += [
        "",
        "ctx: scored calls; e2e: every call with usage (end to end). static overhead: median of "
        "`ctx - estimate of every part sent`, i.e. the system prompt and tool schemas no agent stores, "
        "as this estimator counts the rest. Lowest delta MAE per group in bold.",
        "",
    ]
    return lines


def _models_figure(summary: dict[str, Any]) -> list[str]:
    """The per-model figure, what to read off it, and its largest median miss."""
    link = _figure_link(summary, "models", "signed error of the predicted context per provider and model")
    if not link:
        return []
    least = summary.get("min_figure_calls", 0)
    rows = [r for r in summary.get("model_error", []) if r["calls"] >= least and r["p50"] is not None]
    groups = {(r["provider"], r["model"]) for r in summary.get("model_error", [])}
    left_out = len(groups - {(r["provider"], r["model"]) for r in rows})
    lines = [
        *link,
        "Read it row by row: for each provider/model with at least "
        f"{least} scored calls, the dot is an estimator's median of (predicted - actual context) / actual "
        "context, the thick bar the middle half of the calls and the thin line p10-p90; left of 0 the "
        "agent shows less than the provider counted, so it compacts late."
        + (
            f" {left_out} provider/model{'s are' if left_out > 1 else ' is'} in the table only, with fewer calls."
            if left_out
            else ""
        ),
        "",
    ]
    raw = [r for r in rows if not r["estimator"].startswith("calibrated")]
    if raw:
        worst = max(raw, key=lambda r: (abs(r["p50"]), r["estimator"]))
        lines += [
            f"Largest median miss: {_code(worst['estimator'])} on {_group_name(worst['provider'], worst['model'])}, "
            f"{_pct(worst['p50'], 3)} over {worst['calls']} scored calls.",
            "",
        ]
    return lines


def _position_section(summary: dict[str, Any]) -> list[str]:
    """The error against the size of the context, and whether the appended-text bias drifts."""
    link = _figure_link(summary, "position", "signed error against the size of the context per estimator")
    if not link:
        return []
    lines = ["## Error as the context grows", "", *link]
    lines += [
        "Each line is an estimator's median over the scored calls in a band of context sizes (each band "
        "twice the size of the one before), the shaded area the middle half of those calls. Left, the "
        "error of the predicted context, which shrinks as each appended piece becomes a smaller share of "
        "the context; right, estimated / actual appended tokens, level where the estimator's bias does not "
        "drift as the session grows.",
        "",
    ]
    least = summary.get("min_figure_calls", 0)
    rows = [
        r
        for r in summary.get("position_error", [])
        if r["ratio_calls"] >= least and r["ratio_p50"] is not None
    ]
    ends = []
    for name in summary["estimators"]:
        bands = sorted((r for r in rows if r["estimator"] == name), key=lambda r: r["ctx_from"])
        if len(bands) >= 2:
            ends.append((name, bands[0], bands[-1]))
    if ends:
        spans = {(_band(first), _band(last)) for _, first, last in ends}
        if len(spans) == 1:
            ((small, large),) = spans
            cells = [
                f"{_code(name)} {first['ratio_p50']:.2f} → {last['ratio_p50']:.2f}"
                for name, first, last in ends
            ]
            what = f"at {small} and at {large} tokens"
        else:
            cells = [
                f"{_code(name)} {first['ratio_p50']:.2f} at {_band(first)} → {last['ratio_p50']:.2f} at {_band(last)}"
                for name, first, last in ends
            ]
            what = "in the smallest and the largest band drawn"
        lines += [f"Median estimate / actual of the appended text {what}: " + "; ".join(cells) + ".", ""]
    return lines


def _band(row: dict[str, Any]) -> str:
    """A band of context sizes as the figure's axis writes it: 8k-16k."""
    return f"{_tokens(row['ctx_from'])}-{_tokens(row['ctx_to'])}"


def _tokens(value: int) -> str:
    """A context size in tokens as it is written on the figure's axis: 512, 8k, 1M."""
    if value >= 1 << 20:
        return f"{value / (1 << 20):g}M"
    if value >= 1 << 10:
        return f"{value / (1 << 10):g}k"
    return str(value)


def _distribution_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Distribution of relative error", ""]
    lines += _figure_link(summary, "distribution", "ECDFs of relative context error and of estimate/actual")
    rows = []
    for name in summary["estimators"]:
        d = summary["distribution"][name]
        ctx, ratio = d["ctx_rel_error"], d["delta_ratio"]
        rows.append(
            [
                _code(name),
                str(d["calls"]),
                _pct(ctx["p01"], 3),
                _pct(ctx["p50"], 3),
                _pct(ctx["p99"], 3),
                _pct(d["under_share"], 0),
                str(d["delta_ratio_calls"]),
                _num(ratio["p10"], "{:.2f}"),
                _num(ratio["p50"], "{:.2f}"),
                _num(ratio["p90"], "{:.2f}"),
            ]
        )
    lines += _table(
        [
            "estimator",
            "calls",
            "(pred-ctx)/ctx p1",
            "p50",
            "p99",
            "under-predicted",
            f"calls with delta ≥ {summary['min_delta']}",
            "estimate/actual p10",
            "p50",
            "p90",
        ],
        rows,
    )
    lines += [
        "",
        "Signed context error (negative: the agent shows less than the provider counted, so it compacts "
        "late), and the per-call ratio of the estimate to the actual appended tokens.",
        "",
    ]
    return lines


def _predicted_section(summary: dict[str, Any]) -> list[str]:
    link = _figure_link(summary, "predicted", "estimated versus actual appended tokens per estimator")
    if not link:
        return []
    return [
        "## Predicted versus actual",
        "",
        *link,
        "Each point is a scored call, coloured by provider: the estimate of the appended text against what "
        "the provider counted (`delta`); on the dashed diagonal the predicted context equals the actual one, "
        "below it the estimator counted too few tokens.",
        "",
    ]


def _kinds_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Error by content kind", ""]
    chars = summary["content_chars"]
    total = sum(chars.values()) or 1
    lines += [
        "Each appended part is classified as CJK text, JSON, code, other tool output or prose "
        "(rules in `calib/analysis/content.py`); a call counts under the kind holding most of its appended "
        "characters. Appended characters of scored calls: "
        + ", ".join(f"{k} {chars[k]:,} ({chars[k] / total:.1%})" for k in CONTENT_KINDS)
        + ".",
        "",
    ]
    link = _figure_link(summary, "kinds", "estimate/actual by content kind and estimator")
    if link:
        lines += [
            *link,
            "Read across a row to see which estimator gets that kind of text wrong: each cell is the "
            "estimated / actual appended tokens of the calls of that kind that only appended (nothing left "
            "the context), red where the estimator counted too few tokens, blue where too many; a kind "
            f"with fewer than {summary.get('min_figure_calls', 0)} such calls is grey.",
            "",
        ]
    kinds = summary["content_kinds"]
    order = [k for k in (*CONTENT_KINDS, EMPTY_KIND) if any(r["content_kind"] == k for r in kinds)]
    names = summary["estimators"]
    keyed = {(r["estimator"], r["content_kind"]): r for r in kinds}
    # a summary written before `append_bias` has only the ratio of sums over every scored call
    bias = "append_bias" if all("append_bias" in r for r in kinds) else "delta_bias"
    rows = []
    for kind in order:
        first = next(keyed[(n, kind)] for n in names if (n, kind) in keyed)
        cells = [kind, str(first["calls"])]
        for name in names:
            r = keyed.get((name, kind))
            cells.append(
                "–"
                if r is None
                else f"{_num(r.get(bias, r['delta_bias']), '{:.2f}')} / {_num(r['delta_mae'], '{:.0f}')}"
            )
        rows.append(cells)
    lines += _table(["content kind", "scored calls", *(_code(n) for n in names)], rows)
    what = (
        "estimated / actual appended tokens of the calls of that kind that only appended"
        if bias == "append_bias"
        else "delta bias of the calls of that kind"
    )
    lines += ["", f"Cells: {what} / delta MAE (tokens) of all its scored calls.", ""]
    return lines


def _breaks_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Chain breaks by reason", ""]
    link = _figure_link(summary, "breaks", "share of calls not scored per provider and model, by reason")
    if link:
        lines += [
            *link,
            "Each bar is the share of a provider/model's calls that could not be scored, and why: a first "
            "call (grey) or a chain break by reason.",
            "",
        ]
    breaks = summary["breaks"]
    # a summary written before a reason existed has no column of it
    used = [r for r in BREAK_REASONS if any(row.get(r) for row in breaks)]
    rows = [
        [
            _group_name(row["provider"], row["model"]),
            str(row["calls"]),
            _pct(row.get("coverage"), 1),
            _num(row.get("removal_calls"), "{}"),
            str(row["baselines"] + row["subagent_baselines"]),
            str(row["breaks"]),
            *(str(row.get(r, 0)) for r in used),
        ]
        for row in breaks
    ]
    header = [r if r in LOG_VISIBLE_REASONS else f"{r} (count)" for r in used]
    lines += _table(
        ["provider / model", "scored", "coverage", "removal estimated", "first calls", "breaks", *header],
        rows,
    )
    visible = ", ".join(f"`{r}`" for r in LOG_VISIBLE_REASONS)
    hidden = ", ".join(f"`{r}`" for r in BREAK_REASONS if r not in LOG_VISIBLE_REASONS)
    lines += [
        "",
        "A break starts a new baseline (no delta is scored across it): `missing_usage` (no per-call usage), "
        "`compaction`, `pruned` and `masked` (the history was rewritten), `unlogged_turn` (nothing was "
        "logged between a call and the next, so what made the agent call again went unrecorded: a "
        "gemini-cli sub-agent's tool calls and results; such calls are left out of the end-to-end figures "
        "too), `unrecorded` (the log lost what was sent), `negative_delta` (the context shrank), "
        "`model_change`, `rewound`, `error`. First "
        "calls of sessions (and of sub-agents) have no predecessor. coverage: scored calls / calls with "
        "usage that have a predecessor. removal estimated: scored calls across which the log shows text "
        "or reasoning leaving the context (a pruned tool output, dropped reasoning), estimated instead "
        "of breaking the chain.",
        "",
        f"The log shows {visible}; {hidden} (marked *(count)*) are found only by comparing with the "
        "count the provider reported, so an agent cannot see them coming (see *Largest misses*).",
        "",
    ]
    placeholders = summary["store"].get("placeholder_calls", 0)
    if placeholders:
        after = sum(row.get("after_placeholder", 0) for row in breaks)
        lines += [
            f"{placeholders} calls recorded a streaming placeholder as their output count (Claude Code "
            "2.0.x-2.1.6x wrote 1 to about 30 and never the final count). The "
            f"{after} scored calls that follow one take that output from an estimate of its text, never "
            "from the placeholder.",
            "",
        ]
    return lines


def _full_section(summary: dict[str, Any]) -> list[str]:
    """The full family: calls predicted from the whole prompt (first calls, after a compaction)."""
    names = summary["estimators"]
    keyed = {(r["provider"], r["model"], r["estimator"]): r for r in summary["groups"]}
    by_group = sorted(
        {(r["provider"], r["model"]) for r in summary["groups"] if r.get("full_calls")},
        key=lambda k: (k[0] or "", k[1] or ""),
    )
    if not by_group:
        return []
    rows = []
    for provider, model in by_group:
        present = [keyed[(provider, model, n)] for n in names if (provider, model, n) in keyed]
        cells = [_group_name(provider, model), str(max(r.get("full_calls") or 0 for r in present))]
        for name in names:
            r = keyed.get((provider, model, name))
            cells.append(
                "–"
                if r is None or not r.get("full_calls")
                else f"{_pct(r.get('full_err_p50'), 2)} / {_pct(r.get('full_err_p90'), 2)}"
            )
        rows.append(cells)
    lines = ["## Whole-prompt estimates", ""]
    lines += [
        "Calls with no usable previous call (the first call of a session, a call after a compaction or a "
        "model change) are predicted from the estimate of the whole prompt plus the static overhead a "
        "calibration fitted for the agent; a plain estimator adds none, so it misses by the system prompt "
        "and tool schemas.",
        "",
    ]
    lines += _table(["provider / model", "whole-prompt calls", *(_code(n) for n in names)], rows)
    lines += ["", "Cells: |predicted - ctx| / ctx p50 / p90 over the whole-prompt calls of that group.", ""]
    return lines


def _short_path(path: Any) -> str:
    if not path:
        return "?"
    text = str(path)
    if len(text) <= _PATH_WIDTH:
        return text
    return "…/" + text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


# Source paths longer than this are shown by their file name in the markdown (summary.json keeps them).
_PATH_WIDTH = 48


def _misses_section(summary: dict[str, Any]) -> list[str]:
    misses = summary["misses"]
    by_reason = misses["by_reason"]
    lines = ["## Largest misses", ""]
    # in the order of BREAK_REASONS, whatever the order of the keys (summary.json sorts them)
    order = sorted(
        by_reason, key=lambda r: (BREAK_REASONS.index(r) if r in BREAK_REASONS else len(BREAK_REASONS), r)
    )
    counts = ", ".join(f"{by_reason[r]['calls']} `{r}` ({_pct(by_reason[r]['share'], 2)})" for r in order)
    lines += [
        f"Breaks found only from the provider's count, among the {misses['e2e_calls']} end-to-end calls "
        f"of {_code(misses['estimator'])}: {counts}.",
        "",
    ]
    if not misses["largest"]:
        return lines
    lines += [
        "These are misses an agent really makes: the log lost what was sent or what left the context, so "
        "no estimate of the logged text can see it. The context grows with nothing appended and nothing "
        "carried (`unrecorded`), or a compaction or pruning the log does not show makes it shrink "
        "(`negative_delta`). The largest, by relative error:",
        "",
    ]
    rows = [
        [
            _code(_short_path(m["file"])),
            str(m["call"]),
            m["reason"],
            _num(m["ctx"], "{:,.0f}"),
            _num(m["predicted"], "{:,.0f}"),
            _pct(
                None
                if m["rel_error"] is None or m["error"] is None
                else (m["rel_error"] if m["error"] >= 0 else -m["rel_error"]),
                2,
            ),
        ]
        for m in misses["largest"]
    ]
    lines += _table(["file", "call", "reason", "ctx", "predicted", "error"], rows, "lrlrrr")
    lines += [
        "",
        "error: (predicted - ctx) / ctx. call: the call's index in its session; `summary.json` gives each "
        "file's full path and session.",
        "",
    ]
    return lines


def _before_after_section(summary: dict[str, Any]) -> list[str]:
    cal = summary["calibration"]
    where = (
        f"the {cal['holdout_sessions']} held-out sessions ({cal['holdout_calls']} scored calls)"
        if cal["compared_on"] == "holdout"
        else "the training sessions (nothing is held out)"
    )
    lines = ["## Calibration before and after", ""]
    lines += [f"{_code(cal['base'])} as it is against {_code(cal['label'])} on {where}.", ""]
    lines += _figure_link(summary, "before_after", "delta MAE and p90 context error before and after")

    def pair(r: dict[str, Any], figure: str) -> str:
        return f"{_pct(r.get(figure + '_before'), 3)} → {_pct(r.get(figure + '_after'), 3)}"

    rows = [
        [
            _group_name(r["provider"], r["model"]),
            str(r["calls"]),
            _num(r.get("e2e_calls"), "{}"),
            r["level"],
            f"{_num(r['delta_mae_before'], '{:.1f}')} → {_num(r['delta_mae_after'], '{:.1f}')}",
            f"{_num(r['delta_bias_before'], '{:.3f}')} → {_num(r['delta_bias_after'], '{:.3f}')}",
            pair(r, "ctx_err_p90"),
            pair(r, "e2e_err_p50"),
            pair(r, "e2e_err_p90"),
            pair(r, "e2e_err_p99"),
            pair(r, "full_err_p90"),
        ]
        for r in summary["before_after"]
    ]
    lines += _table(
        [
            "provider / model",
            "scored calls",
            "e2e calls",
            "parameters from",
            "delta MAE",
            "delta bias",
            "ctx err p90",
            "e2e err p50",
            "e2e err p90",
            "e2e err p99",
            "whole-prompt err p90",
        ],
        rows,
        "lrrlrrrrrrr",
    )
    lines += [
        "",
        "`parameters from`: the level of the config that applies (model, provider or default). ctx err: "
        "scored calls; e2e err: every call with usage, breaks included; whole-prompt err: the calls "
        "predicted from the whole prompt, where the calibration adds its fitted static overhead.",
        "",
    ]
    return lines


def _replay_section(summary: dict[str, Any]) -> list[str]:
    replay = summary["replay"]
    lines = ["## Replay of the agents' compaction rules", ""]
    lines += [
        "Before every recorded call, what the agent's rule would have shown as the context "
        f"(policy `{replay['policy']}`: the agent's own count) and whether it would have compacted, "
        "against the count the provider reported for that call; each session under the rule of the agent "
        "that wrote it, for its version (rules and windows in `calib/analysis/rules.py` and "
        "`calib/analysis/windows.py`). Rules that read the provider's count of the previous call do not "
        "depend on the estimator and get one row.",
        "",
    ]
    if replay.get("windows"):
        lines += [printable(f"{replay['windows'][0].upper()}{replay['windows'][1:]}."), ""]
    elif replay.get("window") is not None:
        lines += [
            f"What-if: every model is given a context window of {replay['window']:,} tokens "
            "instead of its own, so the rules reach their thresholds on these sessions.",
            "",
        ]
    if replay.get("lines"):
        lines += [f"- {printable(line)}" for line in replay["lines"]]
        lines.append("")
    order = {name: i for i, name in enumerate(summary["estimators"])}
    rows = []
    seen: set[tuple[Any, ...]] = set()
    keyed = sorted(
        replay["rows"],
        key=lambda r: (r.get("agent") or "", r["rule"], order.get(r["estimator"], len(order))),
    )
    for r in keyed:
        if not r["uses_estimator"]:
            key = (r.get("agent"), r["rule"], r.get("window_kind"))
            if key in seen:
                continue
            seen.add(key)
        kind = r.get("window_kind") or "real"
        window = f"{r['window_max']:,}" if kind == "fixed" and r.get("window_max") else kind
        rows.append(
            [
                r.get("agent") or "–",
                r["rule"],
                _code(r["estimator"]) if r["uses_estimator"] else "any",
                window,
                str(r["calls"]),
                str(r["fires"]),
                str(r.get("early_fires", r["early"])),
                str(r.get("late_events", r["late"])),
                str(r.get("on_time", "–")),
                str(r.get("missed_events", r["missed"])),
                str(r.get("refused_events", r["refused"])),
                _num(r["err_p50"], "{:,.0f}"),
                _num(r["err_p90"], "{:,.0f}"),
                _pct(r["rel_err_p90"], 2),
                _num(r["err_mean"], "{:+,.0f}"),
            ]
        )
    lines += _table(
        [
            "agent",
            "rule",
            "estimator",
            "window",
            "decisions",
            "fires",
            "early",
            "late",
            "on time",
            "missed",
            "refused",
            "|shown - actual| p50",
            "p90",
            "relative p90",
            "mean shown - actual",
        ],
        rows,
        "llllrrrrrrrrrrr",
    )
    lines += [
        "",
        "decisions: calls with a provider count and a known window; fires: where compaction would start. "
        "early / late / on time / missed / refused count compactions, not calls: fired while the actual "
        "context was under the threshold; a request sent over the threshold before the rule compacted; "
        "fired on the first call over it; a request sent over the window; gemini-cli's guard refusing a "
        "request that fit. Error columns in tokens, over calls whose chain is unbroken.",
        "",
    ]
    if replay["unknown_models"]:
        lines += [f"Models with no known window: {', '.join(map(_text, replay['unknown_models']))}.", ""]
    if replay["timeline_session"] is not None:
        info = replay.get("timeline") or {}
        named = " · ".join(
            _text(info[k]) for k in ("agent", "project", "date", "model") if info.get(k) is not None
        )
        lines += [
            f"Session {_code(replay['timeline_session'])}"
            + (f" ({named})" if named else "")
            + f" under its own agent's `{replay['timeline_rule']}` rule, picked as the one whose timeline shows "
            "the most (it crosses the threshold, under a rule that shows an estimate, where the estimators "
            "decide differently if any session has them do so, then the longest):",
            "",
        ]
        lines += _figure_link(summary, "replay", "context shown by each estimator against the actual one")
    return lines


def _savings_section(summary: dict[str, Any]) -> list[str]:
    """What the removals the logs show saved, net of the prompt cache (`calib savings`)."""
    savings = summary["savings"]
    lines = [
        "## Removals: what they saved",
        "",
        "Every compaction, pruned tool output and dropped reasoning the logs show, against the same session "
        "without it: later calls, up to the next compaction, send the removed tokens too, read from the cache "
        "where the recorded call read its prefix, and the call right after the removal reads what the call "
        "before it had cached instead of writing it again. Net: what the removal saved (negative: what it "
        f"cost), input only, priced with {savings['prices']}; `calib savings` lists every removal.",
        "",
    ]
    rows = [
        [
            r["agent"],
            r["kind"],
            str(r["events"]),
            f"{_num(r['removed_estimated'], '{:,}')} / {_num(r['removed_observed'], '{:,}')}",
            _num(r["estimate_mae"], "{:,.0f}"),
            f"{r['paid_off']} / {r['never']}",
            _num(r["paid_off_after_p50"], "{:g}"),
            _num(r["net_tokens"], "{:,}"),
            _num(r["net_usd"], "{:,.4f}"),
        ]
        for r in [*savings["summary"], {"agent": "all", "kind": "all", **savings["total"]}]
    ]
    header = ["agent", "kind", "removals", "tokens removed, est. / obs.", "est. error", "paid off / never",
              "calls to pay off (p50)", "net tokens", "net USD"]  # fmt: skip
    lines += _table(header, rows, "llrrrrrrr")
    lines += [
        "",
        "est. error: mean |estimated - observed| tokens removed, where the call after the removal has usage. "
        "paid off / never: in dollars, within the calls up to the next compaction.",
        "",
    ]
    for key, title in (("largest_saving", "Largest net saving"), ("largest_loss", "Largest net loss")):
        listed = savings[key]
        if not listed:
            continue
        lines += [f"{title}:", ""]
        rows = [
            [
                _code(e["file"] or "?"),
                str(e["call"]),
                e["kind"],
                _code(e["model"] or "?"),
                _num(e["removed"], "{:,}"),
                "never" if e["paid_off_after"] is None else str(e["paid_off_after"]),
                _num(e["net_usd"], "{:,.4f}"),
            ]
            for e in listed
        ]
        lines += _table(
            ["file", "call", "kind", "model", "removed", "paid off after", "net USD"], rows, "lrllrrr"
        )
        lines.append("")
    for timeline in savings["timelines"]:
        name = savings_figure(timeline["agent"])
        if name in summary.get("figures", []):
            lines += [
                f"![{timeline['agent']}: input per call, as recorded and without its removals]({name})",
                "",
            ]
    return lines
