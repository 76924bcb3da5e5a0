"""The report as markdown: `render_markdown(summary)`, a pure function of a report's summary.

Every number in `report.md` is a figure of `summary.json` rounded for display, and a figure is linked
only when the summary lists its file (`figures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calib.analysis.content import CONTENT_KINDS, EMPTY_KIND
from calib.analysis.summary import FIGURES
from calib.scoring.chain import BREAK_REASONS

__all__ = ["render_markdown"]


def _num(value: Any, spec: str) -> str:
    return "–" if value is None else spec.format(value)


def _pct(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    text = f"{value * 100:.{digits}f}"
    return ("0." + "0" * digits if text == "-0." + "0" * digits else text) + "%"


def _group_name(provider: Any, model: Any) -> str:
    return f"{provider or '?'} / {model or '?'}"


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
        f"Estimators: {', '.join(f'`{n}`' for n in summary['estimators'])}.",
        "",
        "Every number below is a figure of `summary.json` beside this file, rounded for display. "
        "For call k, `delta` is what the provider counted for the text appended since call k-1 "
        "(`ctx[k] - ctx[k-1] - carry[k-1]`), the estimator predicts it from the appended parts, and the "
        "predicted context is `ctx[k-1] + carry[k-1] + estimate`. Calls after a chain break "
        "(compaction, pruning, missing usage, ...) are counted apart and never enter the error figures.",
        "",
    ]
    if calibration:
        source = (
            f"fitted on the {calibration['train_sessions']} training sessions of this store "
            f"({calibration['train_calls']} scored calls) and written as `{calibration['config']}`"
            if calibration["source"] == "fitted"
            else f"read from `{calibration['config']}`"
        )
        lines += [
            f"Calibration `{calibration['label']}` (base `{calibration['base']}`): {source}; "
            f"sha256 `{calibration['sha256'][:12]}`.",
            "",
        ]
    lines += _overall_section(summary)
    lines += _groups_section(summary)
    lines += _distribution_section(summary)
    lines += _predicted_section(summary)
    lines += _kinds_section(summary)
    lines += _breaks_section(summary)
    if summary.get("before_after") is not None:
        lines += _before_after_section(summary)
    if summary.get("replay") is not None:
        lines += _replay_section(summary)
    return "\n".join(lines).rstrip("\n") + "\n"


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
            f"**`{r['estimator']}`**" if r["estimator"] == best else f"`{r['estimator']}`",
            str(r["calls"]),
            _num(r["delta_mae"], "{:.1f}"),
            _num(r["delta_bias"], "{:.3f}"),
            _pct(r["ctx_err_p50"], 3),
            _pct(r["ctx_err_p90"], 3),
            _pct(r["ctx_err_p99"], 3),
        ]
        for r in rows
    ]
    lines = ["## Overall", ""]
    lines += _table(
        ["estimator", "scored calls", "delta MAE", "delta bias", "ctx err p50", "ctx err p90", "ctx err p99"],
        table,
    )
    lines += [
        "",
        "delta MAE: mean |estimate - delta| in tokens. delta bias: sum of estimates / sum of actual "
        "deltas (1 is unbiased, 0.7 means 30% low). ctx err: |predicted - actual context| / actual "
        "context, percentiles over scored calls." + (" Lowest delta MAE in bold." if best else ""),
        "",
    ]
    if summary.get("calibration"):
        lines += [
            "The calibrated rows here and in the next table include the sessions the calibration was "
            "fitted on; the held-out comparison is in *Calibration before and after*.",
            "",
        ]
    return lines


def _groups_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Error by estimator, provider and model", ""]
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
                    f"**`{r['estimator']}`**" if r["estimator"] == best else f"`{r['estimator']}`",
                    str(r["calls"]),
                    str(r["breaks"]),
                    _num(r["delta_mae"], "{:.1f}"),
                    _num(r["delta_bias"], "{:.3f}"),
                    _pct(r["ctx_err_p50"], 3),
                    _pct(r["ctx_err_p90"], 3),
                    _pct(r["ctx_err_p99"], 3),
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
            "static overhead p50",
        ],
        rows,
        "llrrrrrrrr",
    )
    lines += [
        "",
        "static overhead: median of `ctx - estimate of every part sent`, i.e. the system prompt and tool "
        "schemas no agent stores, as this estimator counts the rest. Lowest delta MAE per group in bold.",
        "",
    ]
    return lines


def _distribution_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Distribution of relative error", ""]
    lines += _figure_link(summary, "distribution", "ECDFs of relative context error and of estimate/actual")
    rows = []
    for name in summary["estimators"]:
        d = summary["distribution"][name]
        ctx, ratio = d["ctx_rel_error"], d["delta_ratio"]
        rows.append(
            [
                f"`{name}`",
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
        "Each point is a scored call: the estimate of the appended text against what the provider counted "
        "(`delta`); on the dashed diagonal the predicted context equals the actual one.",
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
    lines += _figure_link(summary, "kinds", "estimate/actual by content kind and estimator")
    kinds = summary["content_kinds"]
    order = [k for k in (*CONTENT_KINDS, EMPTY_KIND) if any(r["content_kind"] == k for r in kinds)]
    names = summary["estimators"]
    keyed = {(r["estimator"], r["content_kind"]): r for r in kinds}
    rows = []
    for kind in order:
        first = next(keyed[(n, kind)] for n in names if (n, kind) in keyed)
        cells = [kind, str(first["calls"])]
        for name in names:
            r = keyed.get((name, kind))
            cells.append(
                "–" if r is None else f"{_num(r['delta_bias'], '{:.2f}')} / {_num(r['delta_mae'], '{:.0f}')}"
            )
        rows.append(cells)
    lines += _table(["content kind", "scored calls", *(f"`{n}`" for n in names)], rows)
    lines += ["", "Cells: delta bias / delta MAE (tokens) of the calls of that kind.", ""]
    return lines


def _breaks_section(summary: dict[str, Any]) -> list[str]:
    lines = ["## Chain breaks by reason", ""]
    lines += _figure_link(summary, "breaks", "scored calls and chain breaks per provider and model")
    breaks = summary["breaks"]
    used = [r for r in BREAK_REASONS if any(row[r] for row in breaks)]
    rows = [
        [
            _group_name(row["provider"], row["model"]),
            str(row["calls"]),
            str(row["baselines"] + row["subagent_baselines"]),
            str(row["breaks"]),
            *(str(row[r]) for r in used),
        ]
        for row in breaks
    ]
    lines += _table(["provider / model", "scored", "first calls", "breaks", *used], rows)
    lines += [
        "",
        "A break starts a new baseline (no delta is scored across it): `missing_usage` (no per-call usage), "
        "`compaction`, `pruned` and `masked` (the history was rewritten), `unrecorded` (the log lost what "
        "was sent), `negative_delta` (the context shrank), `model_change`, `rewound`, `error`. First "
        "calls of sessions (and of sub-agents) have no predecessor.",
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


def _before_after_section(summary: dict[str, Any]) -> list[str]:
    cal = summary["calibration"]
    where = (
        f"the {cal['holdout_sessions']} held-out sessions ({cal['holdout_calls']} scored calls)"
        if cal["compared_on"] == "holdout"
        else "the training sessions (nothing is held out)"
    )
    lines = ["## Calibration before and after", ""]
    lines += [f"`{cal['base']}` as it is against `{cal['label']}` on {where}.", ""]
    lines += _figure_link(summary, "before_after", "delta MAE and p90 context error before and after")
    rows = [
        [
            _group_name(r["provider"], r["model"]),
            str(r["calls"]),
            r["level"],
            f"{_num(r['delta_mae_before'], '{:.1f}')} → {_num(r['delta_mae_after'], '{:.1f}')}",
            f"{_num(r['delta_bias_before'], '{:.3f}')} → {_num(r['delta_bias_after'], '{:.3f}')}",
            f"{_pct(r['ctx_err_p90_before'], 3)} → {_pct(r['ctx_err_p90_after'], 3)}",
        ]
        for r in summary["before_after"]
    ]
    lines += _table(
        ["provider / model", "calls", "parameters from", "delta MAE", "delta bias", "ctx err p90"],
        rows,
        "lrlrrr",
    )
    lines += ["", "`parameters from`: the level of the config that applies (model, provider or default).", ""]
    return lines


def _replay_section(summary: dict[str, Any]) -> list[str]:
    replay = summary["replay"]
    lines = ["## Replay of the agents' compaction rules", ""]
    lines += [
        "Before every recorded call, what each agent's rule would have shown as the context "
        f"(policy `{replay['policy']}`: the agent's own count) and whether it would have compacted, "
        "against the count the provider reported for that call (rules and windows in `calib/analysis/rules.py` "
        "and `calib/analysis/windows.py`). Rules that read the provider's count of the previous call do not "
        "depend on the estimator and get one row.",
        "",
    ]
    if replay.get("window") is not None:
        lines += [
            f"What-if: every model is given a context window of {replay['window']:,} tokens "
            "instead of its own, so the rules reach their thresholds on these sessions.",
            "",
        ]
    order = {name: i for i, name in enumerate(summary["estimators"])}
    rows = []
    seen_rules: set[str] = set()
    for r in sorted(replay["rows"], key=lambda r: (r["rule"], order.get(r["estimator"], len(order)))):
        if not r["uses_estimator"]:
            if r["rule"] in seen_rules:
                continue
            seen_rules.add(r["rule"])
        rows.append(
            [
                r["rule"],
                f"`{r['estimator']}`" if r["uses_estimator"] else "any",
                str(r["calls"]),
                str(r["fires"]),
                str(r["should"]),
                str(r["early"]),
                str(r["late"]),
                str(r["missed"]),
                str(r["refused"]),
                _num(r["err_p50"], "{:,.0f}"),
                _num(r["err_p90"], "{:,.0f}"),
                _pct(r["rel_err_p90"], 2),
                _num(r["err_mean"], "{:+,.0f}"),
            ]
        )
    lines += _table(
        [
            "rule",
            "estimator",
            "decisions",
            "fires",
            "should compact",
            "early",
            "late",
            "missed",
            "refused",
            "|shown - actual| p50",
            "p90",
            "relative p90",
            "mean shown - actual",
        ],
        rows,
        "llrrrrrrrrrrr",
    )
    lines += [
        "",
        "decisions: calls with a provider count and a known window; fires: where compaction would start; "
        "should compact: calls over the rule's threshold in truth; early / late / missed / refused: "
        "compacted under the threshold, did not compact over it, sent a request over the window, or "
        "refused one that fit. Error columns in tokens, over calls whose chain is unbroken.",
        "",
    ]
    if replay["unknown_models"]:
        lines += [f"Models with no known window: {', '.join(replay['unknown_models'])}.", ""]
    if replay["timeline_session"] is not None:
        lines += [
            f"Session `{replay['timeline_session']}` under the `{replay['timeline_rule']}` rule, the one "
            "that comes closest to its threshold:",
            "",
        ]
        lines += _figure_link(summary, "replay", "context shown by each estimator against the actual one")
    return lines
