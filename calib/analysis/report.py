"""`calib report`: a markdown report with PNG figures, and `summary.json`, the figures it is made of.

`build_report` scores the estimators on every call of a store (`calib.scoring.score`), adds a calibration
when one is given or fitted, and gathers everything into one JSON-ready `summary` dict; the markdown
is `render_markdown(summary)`, a pure function of that dict, so every number in `report.md` is a
figure of `summary.json` rounded for display. The summary is deterministic for the same store and
options: keys sorted, lists in a fixed order, floats rounded to 6 significant digits, no timestamps
and no paths (a config is named by its file name and content hash).

Content kinds. Each part appended between two calls is classified by `content_kind`, in this order:

1. `cjk`: Chinese, Japanese or Korean characters (Han, kana, Hangul, CJK punctuation and full-width
   forms) are at least 10% of its non-space characters;
2. `json`: the text, stripped, starts with `{` or `[` and parses as JSON;
3. `code`: at least 3 non-blank lines, and at least 40% of them look like source code (start with a
   common keyword such as `def`, `import`, `func`, `const`, a comment marker or a line number of a
   file listing, or end with `{`, `}`, `;`, `)` or `:`);
4. `tool_output`: any other tool result or attached file (logs, listings, test runs, messages);
5. `prose`: anything else (user messages, summaries, model text).

A call's content kind is the kind holding the most characters among its appended parts (`empty` when
nothing was appended), and the error figures per kind are over the scored calls of that kind: this
measures what the provider counted, per call, rather than pretending to split a delta among parts.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.scoring.score import BREAK_REASONS, HOLDOUT_FRACTION

if TYPE_CHECKING:
    import polars as pl

    from calib.analysis.gate import GateResult
    from calib.store.store import Store

__all__ = [
    "CONTENT_KINDS",
    "REPORT_ESTIMATORS",
    "SUMMARY_FORMAT",
    "Report",
    "ReportResult",
    "appended_content",
    "build_report",
    "content_kind",
    "render_markdown",
    "report_estimators",
    "run_report",
    "write_report",
]

SUMMARY_FORMAT = "calib-report/1"
# The estimators a report scores when none is named (those usable here).
REPORT_ESTIMATORS: tuple[str, ...] = ("chars4", "cjk", "tiktoken:o200k_base", "charclass")
CONTENT_KINDS: tuple[str, ...] = ("tool_output", "code", "json", "prose", "cjk")
EMPTY_KIND = "empty"
SIGNIFICANT_DIGITS = 6
# Ratio figures use calls appending at least this many tokens (see calib.analysis.plots.MIN_DELTA).
MIN_DELTA = 50

SUMMARY_FILE = "summary.json"
MARKDOWN_FILE = "report.md"
CONFIG_FILE = "calibration.json"
FIGURES = {
    "distribution": "error_distribution.png",
    "predicted": "predicted_vs_actual.png",
    "kinds": "content_kinds.png",
    "breaks": "breaks.png",
    "before_after": "before_after.png",
    "replay": "replay_timeline.png",
}

# -- content kinds ------------------------------------------------------------------------------------

_CJK = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]")
_SPACE = re.compile(r"\s")
_CODE_LINE = re.compile(
    r"""^\s*(?:
        (?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|async|await|
           func|fn|let|const|var|function|package|pub|use|struct|impl|interface|type|export|enum|
           public|private|protected|static|switch|case|match|raise|throw|yield|select|insert|update|
           create|alter|drop)\b
      | (?:\#include|\#!|//|/\*|\*/|--\s|@\w)
      | (?:\d{1,6}[:|]\s?)            # a numbered line of a file listing or grep output
    )
    | [{};):]\s*$
    | ^\s*[}\])]
    """,
    re.VERBOSE | re.IGNORECASE,
)
_TOOL_KINDS = frozenset({"tool_result", "file"})


def content_kind(text: str, part_kind: str = "user_text") -> str:
    """The content kind of one appended part (see the module docstring for the rules)."""
    if not text:
        return "tool_output" if part_kind in _TOOL_KINDS else "prose"
    visible = len(text) - len(_SPACE.findall(text))
    if visible and len(_CJK.findall(text)) >= 0.1 * visible:
        return "cjk"
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            return "json"
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 3 and sum(1 for line in lines if _CODE_LINE.search(line)) >= 0.4 * len(lines):
        return "code"
    return "tool_output" if part_kind in _TOOL_KINDS else "prose"


# The parts appended between call k-1 and call k, as `calib.scoring.score` defines them, with the text each
# was sent as at call k's time.
_APPENDED_TEXT_SQL = """
WITH c AS (
    SELECT call_uid, session_uid, ts, prompt_end,
           lag(prompt_end) OVER w AS prev_end, lag(call_uid) OVER w AS prev_uid
    FROM calls WINDOW w AS (PARTITION BY session_uid ORDER BY seq)
)
SELECT c.call_uid, p.part_uid, p.kind AS part_kind,
       CASE WHEN p.pruned_at IS NOT NULL AND c.ts IS NOT NULL AND p.pruned_at <= c.ts
            THEN coalesce(p.pruned_text, '') ELSE p.text END AS text
FROM c JOIN parts p
  ON p.session_uid = c.session_uid AND p.seq >= c.prev_end AND p.seq < c.prompt_end
WHERE c.prev_uid IS NOT NULL AND p.resent AND p.call_uid IS DISTINCT FROM c.prev_uid
ORDER BY c.call_uid, p.seq
"""


def appended_content(store: Store) -> pl.DataFrame:
    """One row per call with a predecessor: `content_kind` (the kind with most appended characters,
    `empty` when none) and the appended characters of each kind (`chars_<kind>`)."""
    import polars as pl

    rows = store.con.execute(_APPENDED_TEXT_SQL).fetchall()
    totals: dict[str, dict[str, int]] = {}
    for call_uid, _part_uid, part_kind, text in rows:
        kind = content_kind(text or "", part_kind)
        per_call = totals.setdefault(call_uid, dict.fromkeys(CONTENT_KINDS, 0))
        per_call[kind] += len(text or "")
    calls = store.con.execute(
        "SELECT call_uid FROM (SELECT call_uid, lag(call_uid) OVER "
        "(PARTITION BY session_uid ORDER BY seq) AS prev FROM calls) WHERE prev IS NOT NULL ORDER BY call_uid"
    ).fetchall()
    data: dict[str, list[Any]] = {"call_uid": [], "content_kind": []}
    data.update({f"chars_{k}": [] for k in CONTENT_KINDS})
    for (call_uid,) in calls:
        per_call = totals.get(call_uid, dict.fromkeys(CONTENT_KINDS, 0))
        best = max(CONTENT_KINDS, key=lambda k: (per_call[k], -CONTENT_KINDS.index(k)))
        data["call_uid"].append(call_uid)
        data["content_kind"].append(best if per_call[best] else EMPTY_KIND)
        for k in CONTENT_KINDS:
            data[f"chars_{k}"].append(per_call[k])
    schema: dict[str, Any] = {"call_uid": pl.String, "content_kind": pl.String}
    schema.update(dict.fromkeys((f"chars_{k}" for k in CONTENT_KINDS), pl.Int64))
    return pl.DataFrame(data, schema=schema)


# -- rounding -----------------------------------------------------------------------------------------


def _round(value: Any) -> Any:
    """Floats to SIGNIFICANT_DIGITS significant digits (NaN and inf as None), containers recursively."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, dict):
        return {str(k): _round(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round(v) for v in value]
    return value


def dumps_summary(summary: dict[str, Any]) -> str:
    """The canonical text of a summary: sorted keys, two-space indent, UTF-8, final newline."""
    return json.dumps(_round(summary), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


# -- building ---------------------------------------------------------------------------------------


def report_estimators() -> list[str]:
    """The default estimators of a report that can be used here."""
    from calib.estimators import list_estimators

    available = {info.name for info in list_estimators() if info.available}
    return [name for name in REPORT_ESTIMATORS if name in available]


@dataclass
class Report:
    """A built report: the JSON summary, plus the per-call frames the figures are drawn from."""

    summary: dict[str, Any]
    scores: pl.DataFrame  # per (estimator, call), with `content_kind`
    config: dict[str, Any] | None = None  # the calibration scored, if any
    timeline: pl.DataFrame | None = None  # the replayed session, if any

    @property
    def markdown(self) -> str:
        """The report as markdown (a function of `summary` only)."""
        return render_markdown(self.summary)


_GROUP_FIGURES = (
    "calls",
    "breaks",
    "baselines",
    "subagent_baselines",
    "delta_mae",
    "delta_bias",
    "ctx_err_p50",
    "ctx_err_p90",
    "ctx_err_p99",
    "ctx_err_mean",
    "static_overhead_p50",
)


def _groups(summary: pl.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in summary.to_dicts():
        item = {k: row[k] for k in ("estimator", "provider", "model", *_GROUP_FIGURES)}
        item["breaks_by_reason"] = {r: int(row["breaks_by_reason"][r] or 0) for r in BREAK_REASONS}
        out.append(item)
    return out


def _quantiles(values: pl.Series, qs: Sequence[float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for q in qs:
        key = f"p{round(q * 100):02d}"
        out[key] = None if values.is_empty() else values.quantile(q, "linear")
    return out


def _distribution(scores: pl.DataFrame, names: Sequence[str]) -> dict[str, Any]:
    import polars as pl

    out: dict[str, Any] = {}
    ok = scores.filter(pl.col("status") == "ok")
    for name in names:
        rows = ok.filter(pl.col("estimator") == name)
        signed = (rows["error"] / rows["ctx"]).drop_nulls()
        big = rows.filter(pl.col("delta") >= MIN_DELTA)
        ratio = (big["est_delta"] / big["delta"]).drop_nulls()
        out[name] = {
            "calls": rows.height,
            "ctx_rel_error": _quantiles(signed, (0.01, 0.1, 0.5, 0.9, 0.99)),
            "under_share": None if rows.is_empty() else rows.select((pl.col("error") < 0).mean()).item(),
            "delta_ratio_calls": big.height,
            "delta_ratio": _quantiles(ratio, (0.1, 0.25, 0.5, 0.75, 0.9)),
        }
    return out


def _kinds(scores: pl.DataFrame) -> list[dict[str, Any]]:
    import polars as pl

    ok = scores.filter(pl.col("status") == "ok")
    big = (pl.col("delta") >= MIN_DELTA) & (pl.col("delta") > 0)
    table = (
        ok.group_by("estimator", "content_kind")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            (pl.col("est_delta") - pl.col("delta")).abs().mean().alias("delta_mae"),
            (pl.col("est_delta").sum() / pl.col("delta").sum()).alias("delta_bias"),
            (pl.col("est_delta") / pl.col("delta")).filter(big).median().alias("delta_ratio_p50"),
            pl.col("rel_error").quantile(0.9, "linear").alias("ctx_err_p90"),
            pl.col("delta").sum().alias("delta_tokens"),
        )
        .sort("estimator", "content_kind")
    )
    return table.to_dicts()


def _kind_chars(scores: pl.DataFrame) -> dict[str, int]:
    import polars as pl

    if scores.is_empty():
        return dict.fromkeys(CONTENT_KINDS, 0)
    first = scores["estimator"][0]
    ok = scores.filter((pl.col("status") == "ok") & (pl.col("estimator") == first))
    return {k: int(ok[f"chars_{k}"].sum() or 0) for k in CONTENT_KINDS}


def _breaks(summary: pl.DataFrame) -> list[dict[str, Any]]:
    import polars as pl

    if summary.is_empty():
        return []
    first = summary["estimator"][0]
    out = []
    for row in summary.filter(pl.col("estimator") == first).to_dicts():
        item = {
            "provider": row["provider"],
            "model": row["model"],
            "calls": row["calls"],
            "breaks": row["breaks"],
            "baselines": row["baselines"],
            "subagent_baselines": row["subagent_baselines"],
        }
        item.update({r: int(row["breaks_by_reason"][r] or 0) for r in BREAK_REASONS})
        out.append(item)
    return out


def _store_facts(store: Store) -> dict[str, Any]:
    counts = store.counts()
    tools = store.con.execute("SELECT tool, count(*) FROM sessions GROUP BY tool ORDER BY tool").fetchall()
    return {
        "sessions": counts["sessions"],
        "calls": counts["calls"],
        "parts": counts["parts"],
        "sessions_by_tool": {str(tool): int(n) for tool, n in tools},
    }


def build_report(
    store: Store,
    *,
    estimators: Sequence[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    fit: bool = False,
    base: str | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
    replay: bool = True,
    replay_window: int | None = None,
    progress: Progress | None = None,
) -> Report:
    """Score `estimators` (default: `report_estimators()`) on a store, plus a calibration read from
    `config` or, with `fit`, fitted on the training sessions; gather the report's figures. `replay`
    adds the replay of the agents' compaction rules, with each model's own context window or, given
    `replay_window`, that many tokens for every model."""
    import polars as pl

    from calib.calibration.fit import DEFAULT_BASE, Calibrator
    from calib.scoring.score import features, score_frame, summarise

    if config is not None and fit:
        raise UsageError("--config and --fit both name a calibration", hint="give one of them")
    if not 0 <= holdout_fraction < 1:
        raise UsageError(f"holdout fraction must be in [0, 1), got {holdout_fraction}")
    if replay_window is not None and replay_window <= 0:
        raise UsageError(f"replay window of {replay_window} tokens", hint="pass a positive token count")
    names = list(dict.fromkeys(estimators or report_estimators()))
    if not names:
        raise UsageError("no estimator to report on", hint="pass --estimator NAME (see `calib estimators`)")
    if any(n.startswith("calibrated:") for n in names):
        raise UsageError("calibrated estimators are given with --config", hint="use --config PATH")

    grouped: Any = None
    calibration: dict[str, Any] | None = None
    doc: dict[str, Any] | None = None
    if config is not None:
        from calib.estimators.calibrated import CalibratedEstimator

        grouped = CalibratedEstimator.from_path(config)
        doc = grouped.doc
        holdout_fraction = float(doc.get("fit", {}).get("holdout_fraction", holdout_fraction))
        calibration = {"source": "config", "config": Path(config).name}
    elif fit:
        grouped = Calibrator(base or DEFAULT_BASE, holdout_fraction=holdout_fraction)
        calibration = {"source": "fitted", "config": CONFIG_FILE}
    before: str = grouped.base if grouped is not None else ""
    label = f"calibrated:{before}"
    sources = set(names)
    if grouped is not None:
        sources.update(grouped.sources)
        sources.add(before)
    frame = features(store, sorted(sources), progress=progress, holdout_fraction=holdout_fraction)
    ok = pl.col("status") == "ok"
    train = frame.filter(~pl.col("holdout"))
    held = frame.filter(pl.col("holdout"))
    if isinstance(grouped, Calibrator):
        if train.filter(ok).is_empty():
            raise UsageError(
                "no scorable calls to fit on (every call is a baseline, a chain break or held out)",
                hint="ingest more sessions, or drop --fit",
            )
        grouped.fit(train)
        doc = grouped.to_config()

    content = appended_content(store)
    scored = [score_frame(frame, name) for name in names]
    if grouped is not None:
        scored.append(score_frame(frame, label, grouped))
    scores = pl.concat(scored, how="vertical_relaxed")
    scores = scores.join(content, on="call_uid", how="left").with_columns(
        pl.col("content_kind").fill_null(EMPTY_KIND),
        *(pl.col(f"chars_{k}").fill_null(0) for k in CONTENT_KINDS),
    )
    by_group = summarise(scores)
    overall = summarise(
        scores.with_columns(pl.lit(None, pl.String).alias("provider"), pl.lit(None, pl.String).alias("model"))
    )
    all_names = [*names, *([label] if grouped is not None else [])]

    summary: dict[str, Any] = {
        "format": SUMMARY_FORMAT,
        "store": _store_facts(store),
        "estimators": all_names,
        "min_delta": MIN_DELTA,
        "groups": _groups(by_group),
        "overall": [{k: row[k] for k in ("estimator", *_GROUP_FIGURES)} for row in overall.to_dicts()],
        "distribution": _distribution(scores, all_names),
        "content_kinds": _kinds(scores),
        "content_chars": _kind_chars(scores),
        "breaks": _breaks(by_group),
        "calibration": None,
        "before_after": None,
        "replay": None,
    }
    if grouped is not None and doc is not None and calibration is not None:
        from calib.core.config import dumps as dumps_config

        check = held if holdout_fraction > 0 and not held.filter(ok).is_empty() else train
        compared = summarise(
            pl.concat(
                [score_frame(check, before), score_frame(check, label, grouped)], how="vertical_relaxed"
            )
        )
        calibration.update(
            {
                "label": label,
                "base": before,
                "sha256": hashlib.sha256(dumps_config(doc).encode("utf-8")).hexdigest(),
                "holdout_fraction": holdout_fraction,
                "compared_on": "holdout" if check is held else "train",
                "train_sessions": train.select("session_uid").n_unique(),
                "holdout_sessions": held.select("session_uid").n_unique(),
                "train_calls": train.filter(ok).height,
                "holdout_calls": held.filter(ok).height,
            }
        )
        summary["calibration"] = calibration
        summary["before_after"] = _before_after(compared, before, label, grouped)
    report = Report(summary=summary, scores=scores, config=doc)
    if replay:
        _add_replay(report, store, names, label if grouped is not None else None, doc, config, replay_window)
    summary.update(_round({k: summary[k] for k in summary}))
    return report


def _before_after(compared: pl.DataFrame, before: str, label: str, grouped: Any) -> list[dict[str, Any]]:
    keyed = {(r["estimator"], r["provider"], r["model"]): r for r in compared.to_dicts()}
    groups = sorted({(p, m) for _, p, m in keyed}, key=lambda k: (k[0] or "", k[1] or ""))
    rows = []
    for provider, model in groups:
        b = keyed.get((before, provider, model), {})
        a = keyed.get((label, provider, model), {})
        row: dict[str, Any] = {
            "provider": provider,
            "model": model,
            "calls": a.get("calls", 0),
            "level": grouped.for_group(provider, model).level,
        }
        for figure in ("delta_mae", "delta_bias", "ctx_err_p50", "ctx_err_p90"):
            row[f"{figure}_before"] = b.get(figure)
            row[f"{figure}_after"] = a.get(figure)
        rows.append(row)
    return rows


# The replay section uses each agent's own count (policy `raw`) and draws the session under the
# Dexto rule, the one whose displayed context is the estimator's.
REPLAY_POLICY = "raw"
TIMELINE_RULE = "dexto"
_REPLAY_API = ("replay", "summarise_replay", "timeline", "pick_session")


def _add_replay(
    report: Report,
    store: Store,
    names: Sequence[str],
    label: str | None,
    doc: dict[str, Any] | None,
    config: str | os.PathLike[str] | None,
    window: int | None = None,
) -> None:
    """Replay the agents' compaction rules with the report's estimators (`calib.analysis.replay`) and add the
    summary rows, the session drawn and its timeline to the report; `window` gives every model that
    context window instead of its own (a what-if)."""
    import importlib
    import importlib.util
    import tempfile

    import polars as pl

    if importlib.util.find_spec("calib.analysis.replay") is None:
        return
    module = importlib.import_module("calib.analysis.replay")
    if not all(hasattr(module, name) for name in _REPLAY_API):
        return  # a build whose replay module lacks the data API
    with tempfile.TemporaryDirectory(prefix="calib-report-") as tmp:
        estimators = list(names)
        calibrated = None
        if label is not None and doc is not None:
            # the replay takes estimators by name: a fitted calibration goes through a file
            path = Path(config) if config is not None else Path(tmp) / CONFIG_FILE
            if config is None:
                from calib.core.config import dumps as dumps_config

                path.write_text(dumps_config(doc), encoding="utf-8")
            calibrated = f"calibrated:{path}"
            estimators.append(calibrated)
        windows = None
        if window is not None:
            from calib.analysis.windows import fixed_windows

            windows = fixed_windows(window)
        frame = module.replay(store, estimators, policies=[REPLAY_POLICY], windows=windows)
    if calibrated is not None and label is not None:
        frame = frame.with_columns(pl.col("estimator").replace(calibrated, label))
    rows = module.summarise_replay(frame).sort("rule", "estimator", "policy").to_dicts()
    session = module.pick_session(frame, rule=TIMELINE_RULE, policy=REPLAY_POLICY)
    unknown = module.unknown_models(frame) if hasattr(module, "unknown_models") else []
    report.summary["replay"] = {
        "window": window,
        "policy": REPLAY_POLICY,
        "rows": rows,
        "timeline_rule": TIMELINE_RULE,
        "timeline_session": session,
        "unknown_models": unknown,
    }
    if session is not None:
        report.timeline = module.timeline(frame, session, rule=TIMELINE_RULE, policy=REPLAY_POLICY)


# -- markdown ---------------------------------------------------------------------------------------


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
        "(rules in `calib/report.py`); a call counts under the kind holding most of its appended "
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
        "against the count the provider reported for that call (rules and windows in `calib/replay.py` "
        "and `calib/windows.py`). Rules that read the provider's count of the previous call do not "
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


# -- writing ----------------------------------------------------------------------------------------


def write_report(report: Report, out: str | os.PathLike[str], *, figures: bool = True) -> list[str]:
    """Write `summary.json`, `report.md`, the PNG figures and (for a fitted calibration)
    `calibration.json` into `out`; returns the file names written, in order."""
    import polars as pl

    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    summary = report.summary
    names: list[str] = []
    if figures:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError(
                "figures need matplotlib, which is not installed",
                hint="pip install 'calib[report]', or pass --no-figures",
            ) from None
        from calib.analysis import plots

        drawn = {
            "distribution": lambda: plots.error_distribution(report.scores, min_delta=summary["min_delta"]),
            "predicted": lambda: plots.predicted_vs_actual(report.scores),
            "kinds": lambda: plots.content_kind_bias(
                pl.DataFrame(summary["content_kinds"]),
                order=CONTENT_KINDS,
                estimators=summary["estimators"],
            ),
            "breaks": lambda: plots.breaks_by_reason(pl.DataFrame(summary["breaks"])),
        }
        if summary.get("before_after") is not None:
            drawn["before_after"] = lambda: plots.before_after(pl.DataFrame(summary["before_after"]))
        if report.timeline is not None:
            timeline = report.timeline
            session = summary["replay"]["timeline_session"]
            rule = summary["replay"]["timeline_rule"]
            drawn["replay"] = lambda: plots.replay_timeline(
                timeline, title=f"{_short(session)} under the {rule} rule (▼ = compaction would start)"
            )
        for key, draw in drawn.items():
            fig = draw()
            plots.save_figure(fig, target / FIGURES[key])
            names.append(FIGURES[key])
    summary["figures"] = names
    if report.config is not None and (summary.get("calibration") or {}).get("source") == "fitted":
        from calib.core.config import dumps as dumps_config

        (target / CONFIG_FILE).write_text(dumps_config(report.config), encoding="utf-8")
        written.append(CONFIG_FILE)
    _write_text(target / SUMMARY_FILE, dumps_summary(summary))
    _write_text(target / MARKDOWN_FILE, render_markdown(summary))
    return [SUMMARY_FILE, MARKDOWN_FILE, *written, *names]


def _short(text: str, limit: int = 48) -> str:
    """A long session uid cut in the middle, for a figure title."""
    return text if len(text) <= limit else text[: limit // 2 - 1] + "…" + text[-(limit // 2) :]


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.replace(tmp, path)


# -- the command ----------------------------------------------------------------------------------


@dataclass
class ReportResult:
    """What `calib report` did: where it wrote, and the gate's verdict when a baseline was given."""

    out: str
    files: list[str]
    summary: dict[str, Any]
    gate: GateResult | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the gate found a regression (exit code 1)."""
        return self.gate is not None and not self.gate.passed

    def to_dict(self) -> dict[str, Any]:
        """The `calib report --json` document."""
        return {
            "out": self.out,
            "files": self.files,
            "gate": self.gate.to_dict() if self.gate is not None else None,
            "summary": _round(self.summary),
        }


def run_report(
    db: str | os.PathLike[str] | None = None,
    *,
    out: str | os.PathLike[str] = "report",
    estimators: Sequence[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    fit: bool = False,
    base: str | None = None,
    figures: bool = True,
    replay_window: int | None = None,
    baseline: str | os.PathLike[str] | None = None,
    max_regression: float | None = None,
    fail_on_new_group: bool = False,
    progress: Progress | None = None,
) -> ReportResult:
    """`calib report`: build the report of a store, write it to `out`, and with `baseline` (an earlier
    `summary.json`) compare the two with `calib.analysis.gate.compare`."""
    from calib.analysis.gate import DEFAULT_MAX_REGRESSION, compare, load_summary
    from calib.store.store import open_store

    reference = load_summary(baseline) if baseline is not None else None  # fail early on a bad file
    with open_store(db) as store:
        report = build_report(
            store,
            estimators=estimators,
            config=config,
            fit=fit,
            base=base,
            replay_window=replay_window,
            progress=progress,
        )
    files = write_report(report, out, figures=figures)
    gate = None
    if reference is not None:
        gate = compare(
            report.summary,
            reference,
            max_regression=DEFAULT_MAX_REGRESSION if max_regression is None else max_regression,
            fail_on_new_group=fail_on_new_group,
        )
    return ReportResult(out=str(out), files=files, summary=report.summary, gate=gate)
