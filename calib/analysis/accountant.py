"""The runtime's context accountant (`calib.runtime.Tracker`) walked over recorded calls.

What calib would have shown before each recorded call is what the tracker an agent vendors shows: the
replay (`calib.analysis.replay`) and `calib context` do not compute it again, they drive the same
`Tracker` with the counts the scoring already made, call by call, in a session's order:

- before call k, the tracker holds what the log shows was added since the latest call with usage: the
  calibrated `est_delta[k]` (appended parts, their message framing, minus what was pruned, minus
  reasoning known to have left; the chain spans calls whose usage was lost), or, with nothing reported
  to build on (the session's start, or after a compaction or a rewind: a *reset*), the calibrated
  estimate of the whole prompt `est_full[k]` beside the static overhead fitted for the agent;
- after call k, when it has usage, the tracker observes it: the prompt, the visible output `vis[k]`
  and the reasoning, under the row's reasoning policy (the replay's quantities, defined in
  `calib.analysis.replay`): `include`, `strip-all-but-last` and `strip-all` observe the prompt the
  policy would have sent (`content[k]` plus the reasoning it keeps) and the call's reasoning; `raw`
  observes the prompt as recorded and, as reasoning, what the recording re-sent (`resent[k]`), kept
  as the agent kept it. A chain break starts a new segment: no reasoning is kept across it.

The tracker's estimates are the unrounded calibrated counts and it rounds once where a total is made,
as `Tracker.append` and `Tracker.remove` do with the texts themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import polars as pl

from calib.runtime import Calibration, Tracker, _round

# The tracker's policy for each replay policy (`ui-sum` is the agents' UI sum, not a count to track).
TRACKER_POLICY = {
    "raw": "include",
    "include": "include",
    "strip-all-but-last": "strip-all-but-last",
    "strip-all": "strip-all",
}
# The reasoning each policy kept in a recorded prompt: a column of the replay's call frame (None: none).
_KEPT_BEFORE = {"include": "_reas_before", "strip-all-but-last": "_reas_prev", "strip-all": None}
# The columns `walk` reads of each row.
WALK_COLUMNS = (
    "status",
    "_has",
    "_reset",
    "ctx",
    "_content",
    "_vis",
    "_reas",
    "_reas_before",
    "_reas_prev",
    "_resent",
    "est_delta",
    "est_full",
    "static",
)


def walk(
    rows: Iterable[Mapping[str, Any]],
    policy: str,
    make: Callable[[Mapping[str, Any]], Tracker],
    tracker: Tracker | None = None,
) -> Iterator[tuple[Mapping[str, Any], Tracker]]:
    """Each call row of one session in order with the tracker as it stands before that call; the call's
    usage is observed once the consumer moves on. `make(row)` makes the session's tracker at its first
    row (with the replay's policy mapped by `TRACKER_POLICY`); `tracker` goes on with one a previous
    piece of the session left (`Tracker` objects are the state that crosses pieces)."""
    kept_column = None if policy == "raw" else _KEPT_BEFORE[policy]
    for row in rows:
        if tracker is None:
            tracker = make(row)
        if row["_reset"]:
            tracker.compacted()
        if row["status"] != "ok":  # a new segment: reasoning kept before the break is not in this prompt
            tracker._kept = 0
        tracker._fitted = _round(row["static"] or 0.0)  # as the tracker rounds it
        if tracker._known is None:
            tracker._messages = float(row["est_full"] or 0.0)
        else:
            tracker._since = float(row["est_delta"] or 0.0)
        yield row, tracker
        if row["_has"]:
            if policy == "raw":
                prompt, reasoning = row["ctx"], row["_resent"] or 0
            else:
                kept = row[kept_column] or 0 if kept_column else 0
                prompt, reasoning = row["_content"] + kept, row["_reas"] or 0
            tracker._observed(int(prompt), int(row["_vis"] or 0), int(reasoning))


def replay_tracker(calibration: Calibration, row: Mapping[str, Any], policy: str) -> Tracker:
    """The tracker the replay drives for a session (its first row): the totals do not depend on the
    window, which only `usage()`'s shares and decisions read (the replay decides with its rule)."""
    return calibration.tracker(
        row.get("provider"),
        row.get("model"),
        window=2**53 - 1,
        output_reserve=0,
        reasoning=TRACKER_POLICY[policy],
        tool=row.get("tool"),
    )


def calibrations(graded: Iterable[tuple[str, Any]]) -> dict[str, Calibration]:
    """The runtime calibration of each (name, grouped estimator) that is one (`calibrated:PATH`, or a
    calibration fitted in memory): the rows of these estimators go through the tracker."""
    out = {}
    for name, estimator in graded:
        calibration = getattr(estimator, "calibration", None)
        if isinstance(calibration, Calibration):
            out[name] = calibration
    return out


def tracked_display(
    frame: pl.DataFrame,
    policy: str,
    by_estimator: Mapping[str, Calibration],
    going_on: dict[tuple[str, str], Tracker] | None = None,
    only_own: str | None = None,
) -> pl.DataFrame:
    """`frame` (one rule and policy of the replay, every estimator, in session order) with `displayed`
    and `basis` of the calibrated estimators' rows made by the tracker: `basis` `chained` where it builds
    on a report, `full` where it estimates everything. `going_on` holds the tracker of each estimator's
    session that a previous piece left unfinished, and is left with those of this frame's last session.
    `only_own`: a rule's name, whose rows are kept only for the sessions it is the own rule of (`_own`):
    the other sessions' rows are not walked (they are dropped after)."""
    if policy not in TRACKER_POLICY or not by_estimator or frame.is_empty():
        return frame
    names = [n for n in by_estimator if n in set(frame.get_column("estimator").unique().to_list())]
    if not names:
        return frame
    walked = pl.col("estimator").is_in(names)
    if only_own is not None:
        walked = walked & (pl.col("_own") == only_own).fill_null(False)
    # the rows to walk, with their place in `frame` (no copy of the frame is made)
    rows = (
        frame.select("estimator", "session_uid", "provider", "model", "tool", *WALK_COLUMNS, _walked=walked)
        .with_row_index("_row")
        .filter(pl.col("_walked"))
    )
    last_session = frame.get_column("session_uid").max()
    left: dict[tuple[str, str], Tracker] = {}
    at: list[int] = []
    shown: list[float] = []
    basis: list[str] = []
    for (name, uid), group in rows.group_by("estimator", "session_uid", maintain_order=True):
        key = (str(name), str(uid))
        calibration = by_estimator[key[0]]
        start = going_on.get(key) if going_on is not None else None
        tracker = None
        make = functools.partial(replay_tracker, calibration, policy=policy)
        for row, tracker in walk(group.iter_rows(named=True), policy, make, start):
            at.append(row["_row"])
            shown.append(float(tracker._total()))
            basis.append("full" if tracker._known is None else "chained")
        if tracker is not None and key[1] == last_session:
            left[key] = tracker
    if going_on is not None:
        going_on.clear()
        going_on.update(left)
    if not at:
        return frame
    where = pl.Series(at, dtype=pl.UInt32)
    displayed = frame.get_column("displayed").cast(pl.Float64).clone()
    displayed.scatter(where, pl.Series(shown, dtype=pl.Float64))
    bases = frame.get_column("basis").clone()
    bases.scatter(where, pl.Series(basis, dtype=pl.String))
    return frame.with_columns(displayed.alias("displayed"), bases.alias("basis"))
