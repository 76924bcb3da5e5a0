"""Scoring token estimators against the usage providers reported, call by call.

For call `k` of a session (the per-call frame of `calib.scoring.chain`), the prediction an agent makes
from what the log shows before the call, by the call's `family`:

- `incremental` (the previous call's usage is there to build on): `delta[k] = ctx[k] - ctx[k-1] -
  carry[k-1]` is what the provider counted for the change between the two calls (the store's
  `call_chain` view), and `est_delta[k]` the estimator's count of it: the appended parts (the store's
  `appended_parts` view: parts with `prompt_end[k-1] <= seq < prompt_end[k]` that are sent and that call
  `k-1` did not produce itself, its output being already in `carry[k-1]`; a part pruned by call `k`'s
  time counts as its `pruned_text`) minus the text that left (`r|` counts, the removed text net of its
  placeholder) minus the reasoning tokens that left (`removed_known`). `pred[k] = ctx[k-1] + carry[k-1]
  + est_delta[k]` (Dexto's `/context` formula, with removals);
- `full` (nothing to build on: the first call, after a compaction or a model change): `est_full[k]`,
  the estimate of every part sent in call `k`, plus the static overhead (system prompt and tool
  schemas, which no agent but Codex stores) that a calibration fitted for the (provider, model, tool);
  a plain estimator has none. `ctx[k] - est_full[k]` is kept as `static_residual`.

Two views of the same rows: the *scored* figures keep the incremental calls whose chain holds
(`status == "ok"`); the *end-to-end* figures keep every call with usage (a `family`), breaks included,
because an agent has to show a figure for those too; only a call after an `unlogged_turn` (the input
that led to it is not in the log) has no family, since no estimate from the log can be judged there.
A calibrated estimator (one with `for_group`) is applied per (provider, model) to the counts of its
sources, plus its framing overhead per message.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import polars as pl

from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.home import expand_home
from calib.core.outputs import OutputKind, check_output, output_file
from calib.core.progress import Progress
from calib.core.records import RATIO_KEYS
from calib.core.spool import Spool
from calib.estimators import (
    ALL_ESTIMATORS,
    DEFAULT_SCORE_SET,
    grouped_estimator,
    list_estimators,
    why_missing,
)
from calib.importers import sniff_file
from calib.scoring.agents import agent_estimate_summary
from calib.scoring.chain import (
    BATCH_CALLS,
    BREAK_REASONS,
    CHAIN_COLUMNS,
    HOLDOUT_FRACTION,
    FeatureTable,
    agent_key,
    feature_column,
    features,
)
from calib.store import default_db_path
from calib.store.store import Store, open_store

Sessions = Literal["all", "train", "holdout"]

# The phase `score_store` reports to its progress once the texts are counted.
SCORING = "scoring"

SCORE_COLUMNS = (
    "estimator",
    *CHAIN_COLUMNS,
    "est_delta",
    "est_full",
    "static",
    "pred",
    "error",
    "rel_error",
    "static_residual",
)

# The per-call frame an analyst starts from (`call_frame`, `calib score --calls`): public names for
# the columns of SCORE_COLUMNS, in this order; `session` is the store's session uid, `call` the
# call's index in its session, `file` the session's source file.
CALL_FRAME_COLUMNS: dict[str, str] = {
    "tool": "tool",
    "agent": "agent",
    "session_uid": "session",
    "seq": "call",
    "file": "file",
    "provider": "provider",
    "model": "model",
    "estimator": "estimator",
    "family": "family",
    "status": "status",
    "reason": "reason",
    "removal": "removal",
    "holdout": "holdout",
    "ctx": "ctx",
    "prev_ctx": "previous_ctx",
    "prev_carry": "previous_carry",
    "pred": "predicted_ctx",
    "error": "error",
    "rel_error": "rel_error",
    "delta": "delta",
    "est_delta": "estimated_delta",
    "est_full": "estimated_full",
    "static": "static_overhead",
    "after_placeholder": "after_placeholder",
}

# Stands for a missing provider or model in join keys (polars joins never match nulls by default).
_NULL_KEY = "\x00"


@dataclass(slots=True)
class _Plan:
    """How one estimator's counts are made from the per-call count columns."""

    name: str
    sources: list[str]
    grouped: Any | None = None  # an estimator with `for_group` (calibrated), else None


def _plan(name: str) -> _Plan:
    estimator: Any = grouped_estimator(name)
    if estimator is not None:
        return _Plan(name, list(estimator.sources), estimator)
    return _Plan(name, [name])


def _removed(source: str, group: str) -> pl.Expr:
    """A source's removed count of one kind group (`_with_removal_columns` adds it where missing)."""
    return pl.col(feature_column("r", source, group))


def estimate_frame(frame: pl.DataFrame, name: str, grouped: Any | None = None) -> pl.DataFrame:
    """A `features` frame with one estimator's counts of each call (see `score_frame` for `name` and
    `grouped`): `est_appended` (the appended parts, with their framing), `est_removed` (the text that
    left net of its placeholder, plus the reasoning tokens known to have left), `est_delta` (the first
    minus the second), `est_full` (every part sent) and `static` (the full family's overhead)."""
    return _apply(_Plan(name, list(grouped.sources) if grouped is not None else [name], grouped), frame)


def _apply(plan: _Plan, frame: pl.DataFrame) -> pl.DataFrame:
    """Add `est_appended`, `est_removed`, `est_delta`, `est_full` and `static` (the full family's
    overhead) for one estimator."""
    frame = _with_removal_columns(frame, plan.sources)
    if plan.grouped is None:
        source = plan.sources[0]
        return frame.with_columns(
            pl.sum_horizontal(feature_column("a", source, g) for g in RATIO_KEYS).alias("est_appended"),
            (pl.sum_horizontal(_removed(source, g) for g in RATIO_KEYS) + pl.col("removed_known")).alias(
                "est_removed"
            ),
            pl.sum_horizontal(feature_column("f", source, g) for g in RATIO_KEYS).alias("est_full"),
            pl.lit(0.0).alias("static"),
        ).with_columns((pl.col("est_appended") - pl.col("est_removed")).alias("est_delta"))
    # A calibrated estimator: per (provider, model), each part counts ratio[kind group] times the
    # weighted sum of its sources' counts, and each message adds the framing overhead; per
    # (provider, model, agent) the full family adds the static overhead fitted for that agent.
    frame = frame.with_columns(agent_key(frame.columns).alias("_agent_key"))
    keys = frame.select("provider", "model", "_agent_key").unique()
    coef_names = [f"k|{s}|{g}" for s in plan.sources for g in RATIO_KEYS]
    rows: dict[str, list[Any]] = {
        name: [] for name in ["_p", "_m", "_t", *coef_names, "k|messages", "k|static"]
    }
    for provider, model, tool in keys.iter_rows():
        params = plan.grouped.for_group(provider, model)
        rows["_p"].append(_NULL_KEY if provider is None else provider)
        rows["_m"].append(_NULL_KEY if model is None else model)
        rows["_t"].append(_NULL_KEY if tool is None else tool)
        weights: Mapping[str, float] = params.source_weights
        for source in plan.sources:
            for g in RATIO_KEYS:
                rows[f"k|{source}|{g}"].append(params.ratios[g] * weights.get(source, 0.0))
        rows["k|messages"].append(params.message_overhead)
        rows["k|static"].append(params.static_for(tool) or 0.0)
    numeric = [*coef_names, "k|messages", "k|static"]
    coefs = pl.DataFrame(
        rows,
        schema={"_p": pl.String, "_m": pl.String, "_t": pl.String, **dict.fromkeys(numeric, pl.Float64)},
    )
    joined = (
        frame.with_row_index("_row")
        .with_columns(
            pl.col("provider").fill_null(_NULL_KEY).alias("_p"),
            pl.col("model").fill_null(_NULL_KEY).alias("_m"),
            pl.col("_agent_key").fill_null(_NULL_KEY).alias("_t"),
        )
        .join(coefs, on=["_p", "_m", "_t"], how="left")
        .sort("_row")
    )

    def combo(scope: Literal["a", "f", "r"]) -> pl.Expr:
        return pl.sum_horizontal(
            pl.col(feature_column(scope, s, g)) * pl.col(f"k|{s}|{g}")
            for s in plan.sources
            for g in RATIO_KEYS
        )

    return (
        joined.with_columns(
            (combo("a") + pl.col("messages") * pl.col("k|messages")).alias("est_appended"),
            (combo("r") + pl.col("removed_known")).alias("est_removed"),
            (combo("f") + pl.col("full_messages") * pl.col("k|messages")).alias("est_full"),
            pl.col("k|static").alias("static"),
        )
        .with_columns((pl.col("est_appended") - pl.col("est_removed")).alias("est_delta"))
        .drop(["_row", "_p", "_m", "_t", "_agent_key", *numeric])
    )


def _with_removal_columns(frame: pl.DataFrame, sources: Sequence[str]) -> pl.DataFrame:
    """The frame with every `r|SOURCE|GROUP` column (0 where absent: frames built before removals)."""
    missing = [feature_column("r", s, g) for s in sources for g in RATIO_KEYS]
    missing = [c for c in missing if c not in frame.columns]
    return frame.with_columns(pl.lit(0.0).alias(c) for c in missing) if missing else frame


def _select_sessions(frame: pl.DataFrame, sessions: Sessions) -> pl.DataFrame:
    if sessions == "all":
        return frame
    if sessions not in ("train", "holdout"):
        raise UsageError(f"unknown session split {sessions!r}", hint="use all, train or holdout")
    return frame.filter(pl.col("holdout") == (sessions == "holdout"))


def score(
    store: Store,
    estimators: Sequence[str],
    *,
    sessions: Sessions = "all",
    holdout_fraction: float = HOLDOUT_FRACTION,
    progress: Progress | None = None,
) -> pl.DataFrame:
    """Score each estimator on every call: one row per (estimator, call) with `est_delta`, `pred`,
    `error` (pred - ctx), `rel_error` (|error| / ctx) and the full-prompt estimate; chain breaks keep
    their `reason` and carry no error."""
    if not estimators:
        raise UsageError("no estimator to score", hint="pass --estimator NAME (see `calib estimators`)")
    plans = [_plan(name) for name in dict.fromkeys(estimators)]
    sources = sorted({s for plan in plans for s in plan.sources})
    frame = features(store, sources, progress=progress, holdout_fraction=holdout_fraction)
    frame = _select_sessions(frame, sessions)
    out = [score_frame(frame, plan.name, plan.grouped) for plan in plans]
    return pl.concat(out, how="vertical_relaxed")


def score_frame(frame: pl.DataFrame, name: str, grouped: Any | None = None) -> pl.DataFrame:
    """Score one estimator on a `features` frame: its counts are the columns of the source `name`, or,
    for a grouped (calibrated) estimator, `grouped.for_group(...)` applied to `grouped.sources`.
    Every call with usage gets `pred` by its family; `error` is `pred - ctx`, `rel_error` its size
    over `ctx`."""
    if "agent_version" not in frame.columns:  # a frame built before agents' versions were read
        frame = frame.with_columns(pl.lit(None, pl.String).alias("agent_version"))
    scored = estimate_frame(frame, name, grouped)
    family = pl.col("family")
    scored = scored.with_columns(
        pl.when(family == "incremental")
        .then(pl.col("prev_ctx") + pl.col("prev_carry") + pl.col("est_delta"))
        .when(family == "full")
        .then(pl.col("static") + pl.col("est_full"))
        .otherwise(None)
        .alias("pred"),
        pl.lit(name).alias("estimator"),
    ).with_columns(
        (pl.col("pred") - pl.col("ctx")).alias("error"),
        ((pl.col("pred") - pl.col("ctx")).abs() / pl.col("ctx")).alias("rel_error"),
        pl.when(family.is_not_null())
        .then(pl.col("ctx") - pl.col("est_full"))
        .otherwise(None)
        .alias("static_residual"),
    )
    return scored.select(SCORE_COLUMNS)


def call_frame(scores: pl.DataFrame) -> pl.DataFrame:
    """The per-call frame under its public column names (`CALL_FRAME_COLUMNS`): one row per estimator
    and call, `family` null for a call without usage, `reason` null where the chain holds."""
    return scores.select(pl.col(old).alias(new) for old, new in CALL_FRAME_COLUMNS.items())


def summarise(scores: pl.DataFrame) -> pl.DataFrame:
    """Per estimator × provider × model, two headline views of the same calls:

    - *scored* (the incremental calls whose chain holds): `calls`, `delta_mae` (and `delta_err_p50`,
      the median |estimate - delta|), `delta_bias` (sum of
      estimates over sum of actual deltas), `ctx_err_p50/p90/p99` (|pred - ctx| / ctx, as fractions),
      `ctx_err_mean` (signed); `removal_calls` of them had text or reasoning leave the context, and
      `after_placeholder` followed a streaming-placeholder output; `coverage` is `calls` over the calls
      with usage that have a previous call;
    - *end-to-end* (every call with usage, each predicted by its family, breaks included):
      `e2e_calls`, `e2e_err_p50/p90/p99`, `e2e_err_mean`; of them the full-prompt family: `full_calls`,
      `full_err_p50/p90`, `full_err_mean`.

    Also the breaks (in all and by reason), the baselines, and the median static overhead (`ctx -
    est_full` over calls with usage)."""
    keys = ["estimator", "provider", "model"]
    ok = pl.col("status") == "ok"
    has_usage = pl.col("family").is_not_null()
    full = pl.col("family") == "full"
    signed = pl.col("error") / pl.col("ctx")
    reasons = [(pl.col("reason") == reason).sum().cast(pl.Int64).alias(reason) for reason in BREAK_REASONS]
    out = (
        scores.group_by(keys)
        .agg(
            ok.sum().cast(pl.Int64).alias("calls"),
            (pl.col("status") == "break").sum().cast(pl.Int64).alias("breaks"),
            ((pl.col("status") == "baseline") & ~pl.col("is_subagent"))
            .sum()
            .cast(pl.Int64)
            .alias("baselines"),
            ((pl.col("status") == "baseline") & pl.col("is_subagent"))
            .sum()
            .cast(pl.Int64)
            .alias("subagent_baselines"),
            (ok & pl.col("after_placeholder")).sum().cast(pl.Int64).alias("after_placeholder"),
            (ok & pl.col("removal").is_not_null()).sum().cast(pl.Int64).alias("removal_calls"),
            (ok.sum() / (has_usage & (pl.col("status") != "baseline")).sum()).alias("coverage"),
            pl.struct(reasons).alias("breaks_by_reason"),
            (pl.col("est_delta") - pl.col("delta")).abs().filter(ok).mean().alias("delta_mae"),
            (pl.col("est_delta") - pl.col("delta")).abs().filter(ok).median().alias("delta_err_p50"),
            (pl.col("est_delta").filter(ok).sum() / pl.col("delta").filter(ok).sum()).alias("delta_bias"),
            pl.col("rel_error").filter(ok).quantile(0.5, "linear").alias("ctx_err_p50"),
            pl.col("rel_error").filter(ok).quantile(0.9, "linear").alias("ctx_err_p90"),
            pl.col("rel_error").filter(ok).quantile(0.99, "linear").alias("ctx_err_p99"),
            signed.filter(ok).mean().alias("ctx_err_mean"),
            has_usage.sum().cast(pl.Int64).alias("e2e_calls"),
            pl.col("rel_error").filter(has_usage).quantile(0.5, "linear").alias("e2e_err_p50"),
            pl.col("rel_error").filter(has_usage).quantile(0.9, "linear").alias("e2e_err_p90"),
            pl.col("rel_error").filter(has_usage).quantile(0.99, "linear").alias("e2e_err_p99"),
            signed.filter(has_usage).mean().alias("e2e_err_mean"),
            full.sum().cast(pl.Int64).alias("full_calls"),
            pl.col("rel_error").filter(full).quantile(0.5, "linear").alias("full_err_p50"),
            pl.col("rel_error").filter(full).quantile(0.9, "linear").alias("full_err_p90"),
            signed.filter(full).mean().alias("full_err_mean"),
            pl.col("static_residual").median().alias("static_overhead_p50"),
        )
        .sort(keys, nulls_last=True)
    )
    return out


def summary_records(summary: pl.DataFrame) -> list[dict[str, Any]]:
    """The summary as JSON-ready rows, figures rounded by `calib.core.figures.round_figures`."""
    records: list[dict[str, Any]] = round_figures(summary.to_dicts())
    return records


def available_estimators() -> list[str]:
    """Every fixed-name estimator usable here: what `calib score -e all` scores."""
    return [info.name for info in list_estimators() if info.available and not info.name.endswith(":")]


def default_score_set() -> list[str]:
    """The estimators `calib score` runs when none is named: those of `DEFAULT_SCORE_SET` usable here
    (only their own probes run: an optional tokenizer's package is never looked for)."""
    return [name for name in DEFAULT_SCORE_SET if why_missing(name) is None]


def score_names(
    estimators: Sequence[str] | None = None, *, config: str | os.PathLike[str] | None = None
) -> list[str]:
    """The estimators `score_store` scores, each once, in order: `estimators` with `all`
    (`ALL_ESTIMATORS`) standing for `available_estimators()`, or, when none is named,
    `default_score_set()`; then `calibrated:CONFIG` when a calibration `config` is given."""
    names: list[str] = []
    for name in estimators or default_score_set():
        names.extend(available_estimators() if name == ALL_ESTIMATORS else [name])
    if config is not None:
        names.append(f"calibrated:{os.fspath(config)}")
    return list(dict.fromkeys(names))


# File types `calib score --calls` writes the per-call frame as, by suffix.
CALLS_FORMATS = (".csv", ".parquet", ".jsonl")


# Columns by which a file is recognised as a per-call frame calib wrote (of this version or another).
_CALL_FRAME_MARK = frozenset({"tool", "session", "call", "estimator", "ctx", "predicted_ctx"})
_FIRST_LINE_BYTES = 1 << 16


def _columns(path: Path) -> list[str]:
    """The column names of a CSV, Parquet or JSON-lines file (by its suffix); [] when it has none."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_schema(path).names)
        except Exception:  # pyarrow raises its own errors for a file that is not Parquet
            return []
    try:
        with path.open("rb") as fh:
            line = fh.readline(_FIRST_LINE_BYTES).decode("utf-8").rstrip("\r\n")
        if suffix == ".csv":
            return line.split(",")
        row = json.loads(line)
    except (OSError, ValueError):
        return []
    return list(row) if isinstance(row, dict) else []


def _foreign_calls(path: Path) -> str | None:
    if set(_columns(path)) >= _CALL_FRAME_MARK:
        return None
    return "a file that is not a per-call frame `calib score --calls` wrote"


# `calib score --calls`: a file it wrote is replaced; nothing else is.
CALLS_OUTPUT = OutputKind(
    "the per-call frame", _foreign_calls, hint="name a new file or one `calib score --calls` wrote"
)


def check_calls_path(path: str | os.PathLike[str], *, store: str | os.PathLike[str] | None = None) -> Path:
    """Refuse (`UsageError`) a `--calls` path of an unknown suffix, the store `store`, or an existing
    file but a per-call frame calib wrote (`calib.core.outputs.check_output`)."""
    path = expand_home(path)  # a `~user` naming nobody is that error, not an unknown suffix
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in CALLS_FORMATS:
        raise UsageError(
            f"cannot write the per-call frame as {suffix or 'a file without a suffix'!r} ({os.fspath(path)})",
            hint=f"name a file ending in {', '.join(CALLS_FORMATS)}",
        )
    return check_output(path, CALLS_OUTPUT, store=store, sniff=sniff_file)


def write_calls(rows: pl.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a per-call frame (`call_frame`) as CSV, Parquet or JSON lines, whole (`CallsWriter`)."""
    check_calls_path(path)
    with CallsWriter(path) as writer:
        writer.write_frame(rows)


# Text columns of few distinct values, kept as categories while a summary is made, and its keys.
_LABELS = ["estimator", "provider", "model", "status", "reason", "family", "removal"]
_KEYS = ["estimator", "provider", "model"]

# The columns of a scored frame that `summarise` reads: all that `score_store` keeps of each call.
SUMMARY_INPUT_COLUMNS = (
    "estimator",
    "provider",
    "model",
    "status",
    "reason",
    "family",
    "removal",
    "is_subagent",
    "after_placeholder",
    "ctx",
    "delta",
    "est_delta",
    "error",
    "rel_error",
    "static_residual",
)


def score_store(
    db: str | os.PathLike[str] | None = None,
    estimators: Sequence[str] | None = None,
    *,
    sessions: Sessions = "all",
    holdout_fraction: float = HOLDOUT_FRACTION,
    progress: Progress | None = None,
    calls: str | os.PathLike[str] | None = None,
    overall: bool = False,
    batch_calls: int = BATCH_CALLS,
    config: str | os.PathLike[str] | None = None,
) -> pl.DataFrame:
    """`calib score`: score estimators on a store, summarised per estimator × provider × model (see
    `summarise`), or with `overall` per estimator over every provider and model (provider and model
    null); `calls` names a file that receives the per-call frame the summary is computed from
    (`call_frame`, written by `write_calls`). Where the store holds estimates the agents logged
    themselves, each agent's follow as `agent:TOOL` (`calib.scoring.agents`), after the estimators
    asked for.

    The estimators (`score_names`): with none named, the default set (`DEFAULT_SCORE_SET`: the agents'
    own rules chars4, cjk and cjk:1.3, then charclass and tiktoken:o200k_base), leaving out any that
    cannot be used here; the name `all` stands for every fixed-name estimator usable here
    (`available_estimators()`), beside any other names given. A calibration `config` adds
    `calibrated:CONFIG`, named or not.

    Memory stays flat however large the store: the per-call frame is built in DuckDB and read back
    `batch_calls` calls at a time, one estimator after another, keeping only the columns the summary
    reads (`SUMMARY_INPUT_COLUMNS`) of one estimator at a time."""
    store_path = expand_home(db) if db is not None else default_db_path()
    if calls is not None:
        calls = check_calls_path(calls, store=store_path)  # before any work
    names = score_names(estimators, config=config)
    if not names:
        raise UsageError("no estimator to score", hint="pass --estimator NAME (see `calib estimators`)")
    if sessions not in ("all", "train", "holdout"):
        raise UsageError(f"unknown session split {sessions!r}", hint="use all, train or holdout")
    plans = [_plan(name) for name in dict.fromkeys(names)]
    sources = sorted({s for plan in plans for s in plan.sources})
    holdout = None if sessions == "all" else sessions == "holdout"
    with (
        open_store(db, read_only=True, persist=True) as store,
        FeatureTable(store, sources, progress=progress, holdout_fraction=holdout_fraction) as table,
        CallsWriter(calls, store=store_path) as writer,
        SummarySpool(prefix="calib-score-") as spool,
    ):
        # Each batch of sessions is scored by every estimator; what the summary reads of each goes to
        # disk, so that one estimator's rows at a time are in memory when summarised. The table
        # reports the calls to `progress` as it builds each batch and as this loop asks for the next.
        for batch in table.batches(holdout=holdout, batch_calls=batch_calls, label=SCORING):
            for plan in plans:
                scored = score_frame(batch, plan.name, plan.grouped)
                writer.write(scored)
                spool.add(plan.name, scored)
        summary = spool.summary(overall=overall)
        # the agents' own logged estimates, scored where the store holds them (`agent:TOOL`)
        agents = agent_estimate_summary(store, sessions=sessions, holdout_fraction=holdout_fraction)
        return summary if agents.is_empty() else pl.concat([summary, agents], how="diagonal_relaxed")


class SummarySpool(Spool):
    """What `summarise` reads of scored frames (`SUMMARY_INPUT_COLUMNS`, the text labels as
    categories), kept on disk per estimator until summarised: however many batches are scored, the
    summary holds one estimator's rows at a time, and its figures are those of the whole frame."""

    def add(self, name: str, scored: pl.DataFrame) -> None:
        """Keep what the summary reads of a batch scored by the estimator `name` (`score_frame`)."""
        kept = scored.select(SUMMARY_INPUT_COLUMNS).with_columns(pl.col(_LABELS).cast(pl.Categorical))
        self.append(name, kept)

    def summary(self, *, overall: bool = False, per_provider: bool = False) -> pl.DataFrame:
        """`summarise` of the rows kept, one estimator at a time, in estimator, provider and model order;
        with `overall`, per estimator over every provider and model (provider and model null); with
        `per_provider`, per estimator and provider over its models (model null)."""
        summaries = []
        names = self.keys()
        for name in names:
            rows = self.read(name)
            if overall:
                rows = rows.with_columns(
                    pl.lit(None, pl.String).alias("provider"), pl.lit(None, pl.String).alias("model")
                )
            elif per_provider:
                rows = rows.with_columns(pl.lit(None, pl.String).alias("model"))
            summaries.append(summarise(rows).with_columns(pl.col(_KEYS).cast(pl.String)))
            del rows
        return pl.concat(summaries, how="vertical_relaxed").sort(_KEYS, nulls_last=True)


class CallsWriter:
    """Writes the per-call frame (`call_frame`) to a file a batch at a time (nothing when `path` is None).

    The rows go to a temporary file beside `path` that replaces it when the `with` block ends without
    an error (`calib.core.outputs.output_file`): a failed run leaves an earlier file as it was, and a
    run that writes no rows leaves no file."""

    def __init__(
        self, path: str | os.PathLike[str] | None, *, store: str | os.PathLike[str] | None = None
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.store = store
        self._output = contextlib.ExitStack()
        self._parquet: Any = None
        self._file: Any = None

    def __enter__(self) -> CallsWriter:
        return self

    def write(self, scored: pl.DataFrame) -> None:
        """Append the rows of one scored batch."""
        if self.path is not None:
            self.write_frame(call_frame(scored))

    def write_frame(self, rows: pl.DataFrame) -> None:
        """Append rows of a per-call frame."""
        if self.path is None:
            return
        suffix = os.path.splitext(self.path)[1].lower()
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            table = rows.to_arrow()
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self._temporary(), table.schema)
            self._parquet.write_table(table.cast(self._parquet.schema))
            return
        if self._file is None:
            self._file = open(self._temporary(), "wb")  # noqa: SIM115 - closed by __exit__
            if suffix == ".csv":
                rows.write_csv(self._file)
                return
        if suffix == ".csv":
            rows.write_csv(self._file, include_header=False)
        else:
            rows.write_ndjson(self._file)

    def _temporary(self) -> Path:
        """The file the rows go to until they replace `path`: made on the first write."""
        assert self.path is not None
        return self._output.enter_context(
            output_file(self.path, CALLS_OUTPUT, store=self.store, sniff=sniff_file)
        )

    def __exit__(self, *exc: Any) -> None:
        try:
            if self._parquet is not None:
                self._parquet.close()
            if self._file is not None:
                self._file.close()
        finally:
            self._output.__exit__(*exc)  # renames the file over `path` only when no error came


# The package exports `score` under this name: `calib.scoring.score` is the module once anything imports it.
score_calls = score
