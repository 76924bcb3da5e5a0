"""The agents' own estimates, scored: the estimate-versus-actual pairs some agents log themselves.

Dexto's log (`Context estimation accuracy` lines) and llxprt-code's token-usage log hold, for a call,
the whole prompt the agent estimated before sending it and the prompt the provider then counted
(`calib.core.records.AgentEstimate`, the store's `agent_estimates` table). No text comes with them, so
nothing is counted again: each agent's pairs are scored as the estimator `agent:TOOL`, the relative
error `|estimated - actual| / actual` being the same context error the other estimators are scored on
(`ctx_err_*`, and `e2e_err_*`, as every logged pair stands for itself), `ctx_err_mean` its signed
mean and `ctx_bias` the sum of the estimates over the sum of the actual counts. A pair is attributed
to the agent of its session; a pair whose log line names no session (Dexto's older shared logs) to
`agent:unknown`, and it is left out of a train or held-out split, which is by session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import polars as pl

from calib.scoring.chain import HOLDOUT_FRACTION, is_holdout

if TYPE_CHECKING:
    from calib.store.store import Store

# How an agent's own estimator is named among the scored estimators.
AGENT_PREFIX = "agent:"
# Where a pair's session is not known.
UNKNOWN_AGENT = "unknown"

_PAIRS_SQL = """
SELECT coalesce(s.tool, $unknown) AS tool, e.session_uid, e.estimated, e.actual
FROM agent_estimates e LEFT JOIN sessions s USING (session_uid)
WHERE e.actual > 0
"""


def agent_estimate_summary(
    store: Store,
    *,
    sessions: Literal["all", "train", "holdout"] = "all",
    holdout_fraction: float = HOLDOUT_FRACTION,
) -> pl.DataFrame:
    """Per agent with logged pairs, its own estimator's figures (see the module docstring), with the
    columns `estimator` (`agent:TOOL`), `provider` and `model` (null: a pair names neither), `calls`,
    `e2e_calls`, `ctx_err_p50/p90/p99`, `ctx_err_mean`, `e2e_err_p50/p90/p99`, `e2e_err_mean` and
    `ctx_bias`; empty when the store holds no pair. `sessions` keeps the pairs of `calib fit`'s
    training or held-out sessions. The pairs name no provider or model: each row spans the agent's."""
    pairs = store.con.execute(_PAIRS_SQL, {"unknown": UNKNOWN_AGENT}).pl()
    if sessions != "all":
        wanted = sessions == "holdout"
        keep = [
            uid is not None and is_holdout(uid, holdout_fraction) == wanted
            for uid in pairs.get_column("session_uid").to_list()
        ]
        pairs = pairs.filter(pl.Series(keep, dtype=pl.Boolean))
    if pairs.is_empty():
        return pl.DataFrame()
    error = (pl.col("estimated") - pl.col("actual")) / pl.col("actual")
    absolute = error.abs()
    figures = (
        pairs.group_by("tool")
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            absolute.quantile(0.5, "linear").alias("ctx_err_p50"),
            absolute.quantile(0.9, "linear").alias("ctx_err_p90"),
            absolute.quantile(0.99, "linear").alias("ctx_err_p99"),
            error.mean().alias("ctx_err_mean"),
            (pl.col("estimated").sum() / pl.col("actual").sum()).alias("ctx_bias"),
        )
        .sort("tool")
    )
    return figures.select(
        (pl.lit(AGENT_PREFIX) + pl.col("tool")).alias("estimator"),
        pl.lit(None, pl.String).alias("provider"),
        pl.lit(None, pl.String).alias("model"),
        "calls",
        pl.col("calls").alias("e2e_calls"),
        "ctx_err_p50",
        "ctx_err_p90",
        "ctx_err_p99",
        "ctx_err_mean",
        pl.col("ctx_err_p50").alias("e2e_err_p50"),
        pl.col("ctx_err_p90").alias("e2e_err_p90"),
        pl.col("ctx_err_p99").alias("e2e_err_p99"),
        pl.col("ctx_err_mean").alias("e2e_err_mean"),
        "ctx_bias",
    )
