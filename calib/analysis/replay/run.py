"""The run: a store replayed a batch of sessions at a time into a `ReplayTally` (`ReplayRun`), as
`calib replay` (`run_replay`) and the report (`replay_store`, `calib.analysis.build`) do it."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from calib.analysis.accountant import calibrations
from calib.analysis.batches import Spool, batch_calls
from calib.analysis.replay.engine import (
    _estimator_names,
    _grouped,
    _rules_to_run,
    _scored_batches,
    replay_batch,
)
from calib.analysis.replay.frame import REPLAY_COLUMNS, ReplayCarry
from calib.analysis.replay.plan import plan_windows
from calib.analysis.replay.reads import _GOES_ON_SQL, batch_sessions, batch_usage, owned_rules
from calib.analysis.replay.tally import ReplayTally
from calib.analysis.replay.text import ReplayReport, replay_lines
from calib.analysis.rules import OWN_RULE, Rule, resolve_policies, rule_params
from calib.analysis.sweep import ThresholdSweep, parse_thresholds
from calib.analysis.windows import WindowTable
from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.store.store import Store, open_store

DEFAULT_ESTIMATORS: tuple[str, ...] = ("chars4", "cjk")


def run_replay(
    db: str | os.PathLike[str] | None = None,
    estimators: Sequence[str] | None = None,
    *,
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    window: int | str | None = "auto",
    progress: Progress | None = None,
    thresholds: Sequence[float] | str | None = None,
) -> ReplayReport:
    """`calib replay`: replay the rules (default `own`: each session under its own agent's rule) on a
    store with the estimators (default `chars4` and `cjk`) and summarise; `window` chooses the windows
    (`auto` by default: real ones unless an agent's sessions stay under half their threshold; the package
    docstring). `thresholds` (shares of the window, or their text `0.5,0.7`): also sweep them
    (`calib.analysis.sweep`) on each session's own rows under the raw policy."""
    names = list(dict.fromkeys(estimators)) if estimators else list(DEFAULT_ESTIMATORS)
    asked = list(rules) if rules else [OWN_RULE]
    sweep = None
    if thresholds is not None:
        shares = parse_thresholds(thresholds) if isinstance(thresholds, str) else list(thresholds)
        sweep = ThresholdSweep(shares)
        if policies is not None and "raw" not in resolve_policies(policies):
            raise UsageError(
                "--threshold sweeps the agents' own count, the raw policy", hint="add --policy raw"
            )
    with open_store(db, read_only=True, persist=True) as store, Spool(prefix="calib-replay-") as spool:
        with ReplayRun(
            store,
            names,
            rules=asked,
            policies=policies,
            windows=windows,
            window=window,
            spool=spool,
            sweep=sweep,
        ) as run:
            for scores in _scored_batches(
                store, run.graded, progress=progress, calls=batch_calls(len(names))
            ):
                run.add(scores)
        summary = run.tally.summary()
    return ReplayReport(
        summary=summary,
        estimators=names,
        rules=[rule_params(r) for r in run.rules_used()],
        policies=run.policies,
        windows=run.plan.table.to_dict(),
        unknown_models=run.tally.unknown_models(),
        plan=run.plan,
        sweep=sweep,
    )


class ReplayRun:
    """A replay of a store a batch at a time (whole sessions, or a piece of a long one) into a
    `ReplayTally` (`tally`): what `calib replay` and the report share. Give `add` the scores of each
    batch (`REPLAYED_COLUMNS`, every estimator of `names`); the run reads their usage and sessions on
    a cursor of its own."""

    def __init__(
        self,
        store: Store,
        estimators: Sequence[str],
        *,
        rules: Sequence[str | Rule] | None = None,
        policies: Sequence[str] | None = None,
        windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        window: int | str | None = "real",
        spool: Spool,
        timeline_at: tuple[str, str] | None = None,
        grouped: Mapping[str, Any] | None = None,
        sweep: ThresholdSweep | None = None,
        frames: Callable[[pl.DataFrame], None] | None = None,
        columns: Sequence[str] = REPLAY_COLUMNS,
    ) -> None:
        self.sweep = sweep  # fed every frame, as the tally is
        # a reader of every frame with `columns` (more than `REPLAY_COLUMNS`: `calib context`)
        self._frames = frames
        self._columns = list(columns)
        self.names = _estimator_names(estimators)
        # the estimators given built (`grouped`: a calibration fitted in memory), the others by name
        self._given = dict(grouped or {})
        self.calibrations = calibrations([(name, self._estimator(name)) for name in self.names])
        self.rule_list, self.wanted = _rules_to_run(rules, owned_rules(store.con))
        self.policies = resolve_policies(policies)
        # the usage is read on a cursor of its own, beside the features read on the store's connection
        self._cursor = store.con.cursor()
        self._carry = ReplayCarry()
        self._closed = False
        self._info: dict[str, Any] | None = None
        try:
            self.plan = plan_windows(store, self.rule_list, windows, window, con=self._cursor)
        except BaseException:
            self._cursor.close()
            raise
        self.tally = ReplayTally(
            ([r.name for r in self.rule_list], self.policies, self.names), spool, timeline_at=timeline_at
        )

    @property
    def graded(self) -> list[tuple[str, Any | None]]:
        """The estimators to score the batches with (`_scored_batches`), each with its grouped counter."""
        return [(name, self._estimator(name)) for name in self.names]

    def _estimator(self, name: str) -> Any | None:
        return self._given[name] if name in self._given else _grouped(name)

    def __enter__(self) -> ReplayRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, scores: pl.DataFrame) -> None:
        """Replay the calls of a batch, scored by each estimator: whole sessions, or a piece of a long
        session whose earlier calls the batches before gave (in session order)."""
        if scores.is_empty():
            return
        uids = scores.get_column("session_uid")
        first, last = str(uids.min()), str(uids.max())
        seqs = (
            int(scores.filter(pl.col("session_uid") == first).select(pl.col("seq").min()).item()),
            int(scores.filter(pl.col("session_uid") == last).select(pl.col("seq").max()).item()),
        )
        usage = batch_usage(self._cursor, first, last, seqs)
        sessions = batch_sessions(self._cursor, first, last)
        # A batch that begins or ends inside a session (a piece of a long one) goes on from the last
        # batch, or leaves what the next goes on with; a batch of whole sessions carries nothing.
        found = self._cursor.execute(_GOES_ON_SQL, [last, seqs[1]]).fetchone()
        pieces = seqs[0] > 0 or bool(found and found[0])
        self.tally.batch(first, last if pieces else None)
        for frame in replay_batch(
            scores,
            usage,
            self.names,
            self.rule_list,
            self.policies,
            self.plan,
            sessions,
            self.wanted,
            self._carry if pieces else None,
            calibrations=self.calibrations,
            columns=self._columns,
        ):
            if self._frames is not None:
                self._frames(frame)
            if len(self._columns) > len(REPLAY_COLUMNS):
                frame = frame.select(REPLAY_COLUMNS)
            self.tally.add(frame)
            if self.sweep is not None:
                self.sweep.add(frame)

    def rules_used(self) -> list[Rule]:
        """The rules replayed: with `own`, those some session was replayed under."""
        if self.wanted is None:
            return list(self.rule_list)
        used = self.tally.rules()
        return [r for r in self.rule_list if r.name in used]

    def timeline_info(self) -> dict[str, Any] | None:
        """What titles the timeline of the session picked: its agent, project folder, start date, model,
        rule and window (None without one; read before the run closes)."""
        if self._closed:
            return self._info
        line, uid = self.tally.timeline, self.tally.session
        if line is None or uid is None or line.is_empty():
            return None
        found = self._cursor.execute(
            "SELECT tool, project, started_at FROM sessions WHERE session_uid = ?", [uid]
        ).fetchone()
        tool, project, started = found if found is not None else (None, None, None)
        models = line.get_column("model").drop_nulls()
        model = str(models.mode().sort()[0]) if len(models) else None
        real = self.plan.table.lookup(model) if self.plan.fixed is None else None
        used = self.plan.window(tool, model)
        thresholds = line.get_column("threshold").drop_nulls()
        windows = line.get_column("window").drop_nulls()
        return {
            "session": uid,
            "agent": tool,
            "project": _basename(project),
            "date": started.date().isoformat() if started is not None else None,
            "model": model,
            "rule": str(line.item(0, "rule")),
            "window_kind": str(line.item(0, "window_kind")),
            "window": max(windows.to_list()) if len(windows) else None,
            "real_window": real.context if real is not None else None,
            "prompt_cap": used.input if used is not None else None,
            "threshold": max(thresholds.to_list()) if len(thresholds) else None,
        }

    def report_section(self, window: int | None) -> dict[str, Any]:
        """The report's `replay` section (`calib.analysis.build`): the summary rows and the session drawn."""
        info = self.timeline_info()
        summary = self.tally.summary()
        return {
            "window": window,
            "policy": self.policies[0],
            "windows": self.plan.describe(),
            "lines": replay_lines(summary),
            "rows": summary.to_dicts(),
            "timeline_rule": info["rule"] if info is not None else None,
            "timeline_session": self.tally.session,
            "timeline": info,
            "unknown_models": self.tally.unknown_models(),
        }

    def close(self) -> None:
        """Close the run's cursor (what titles the timeline is read first)."""
        if self._closed:
            return
        try:
            self._info = self.timeline_info() if self.tally.timeline_at is not None else None
        finally:
            self._closed = True
            self._cursor.close()


def _basename(path: str | None) -> str | None:
    if not path:
        return None
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1] or None


def replay_store(
    store: Store,
    estimators: Sequence[str],
    rules: Sequence[str | Rule] | None = None,
    policies: Sequence[str] | None = None,
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    *,
    spool: Spool,
    window: int | str | None = "real",
    progress: Progress | None = None,
    calls: int | None = None,
    timeline_at: tuple[str, str] | None = None,
) -> ReplayTally:
    """The rows of `replay`, tallied a batch of sessions at a time (at most `calls` calls, by
    default `calib.analysis.batches.BATCH_ROWS` rows over the estimators): memory holds one batch's rows,
    whatever the size of the store; the errors wait in `spool`, which has to stay open until the tally's
    summary is computed."""
    with ReplayRun(
        store,
        estimators,
        rules=rules,
        policies=policies,
        windows=windows,
        window=window,
        spool=spool,
        timeline_at=timeline_at,
    ) as run:
        size = calls or batch_calls(len(run.names))
        for scores in _scored_batches(store, run.graded, progress=progress, calls=size):
            run.add(scores)
    return run.tally
