"""`calib context`: the `/context` panel calib's tracker would have shown before a logged call, beside
what the agent itself showed and what the provider counted.

`context_calls(store, config, ...)` replays the chosen sessions (`calib.analysis.replay`) under each
one's own rule, policy `raw` (the reasoning as the recording re-sent it), with two estimators: the one
the agent's own display uses (`calib.analysis.rules.agent_estimator`) and the calibration. For every
call it gives a `ContextCall`:

- `actual`: the provider's count of the call's prompt (`ctx`);
- `agent_shown`: what the agent's own rule and estimator displayed before the call (the replay's
  `displayed`; its `basis`: `actual`, `chained`, `full` or `none`), and whether that rule compacted;
- `calibrated`: the tracker's total before the call (`calib.runtime.Tracker`, driven by
  `calib.analysis.accountant.walk`: the same number `calib replay` shows for the calibration), with the
  whole `usage()` of the tracker at that moment (breakdown, free space, threshold, the check of the call
  before), on the call's own window: the model's real window unless `window` says otherwise.

A call without usage has no `actual` (and no errors); a model without a known window has no share,
free space or threshold (`window` null).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from calib.analysis.accountant import WALK_COLUMNS, walk
from calib.analysis.batches import Spool, batch_calls
from calib.analysis.replay.engine import _scored_batches
from calib.analysis.replay.frame import REPLAY_COLUMNS
from calib.analysis.replay.run import ReplayRun
from calib.analysis.rules import OWN_RULE, RULES, agent_estimator
from calib.analysis.windows import WindowTable
from calib.core.errors import ConfigError, UsageError
from calib.estimators.calibrated import CalibratedEstimator
from calib.runtime import Calibration, Tracker
from calib.store.store import Store, open_store

# The calibration `calib context` reads when none is named: the one `calib fit` writes by default.
DEFAULT_CONFIG = "calibration.json"
_POLICY = "raw"
_EXTRA = ("_max_prompt", "_own")
_SESSIONS = """
SELECT s.session_uid, s.native_id, s.tool, s.title, s.started_at, s.ended_at, count(c.call_uid) AS calls
FROM sessions s JOIN calls c USING (session_uid)
GROUP BY s.session_uid, s.native_id, s.tool, s.title, s.started_at, s.ended_at
ORDER BY coalesce(s.ended_at, s.started_at) DESC NULLS LAST, s.session_uid DESC
"""


@dataclass
class ContextCall:
    """One call of a session: what the tracker, the agent and the provider said of its prompt."""

    session: str
    native_id: str
    call: int  # 1 for the session's first call
    calls: int  # how many the session has
    call_uid: str
    agent: str
    provider: str | None
    model: str | None
    status: str
    reason: str | None
    actual: int | None
    agent_rule: str | None
    agent_estimator: str
    agent_shown: float | int | None
    agent_basis: str | None
    agent_compacts: bool | None
    calibrated: int
    basis: str  # the tracker's: "reported" or "estimated"
    usage: dict[str, Any] = field(default_factory=dict)  # the tracker's usage() before the call

    def errors(self) -> dict[str, Any]:
        """The verification line's figures: each display against the provider's count."""
        out: dict[str, Any] = {}
        for name, shown in (("agent", self.agent_shown), ("calibrated", self.calibrated)):
            error = None if self.actual is None or shown is None else shown - self.actual
            out[f"{name}_error"] = error
            out[f"{name}_error_pct"] = (
                None if error is None or not self.actual else round(error * 100 / self.actual, 4)
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "native_id": self.native_id,
            "call": self.call,
            "calls": self.calls,
            "call_uid": self.call_uid,
            "agent": self.agent,
            "provider": self.provider,
            "model": self.model,
            "status": self.status,
            "reason": self.reason,
            "actual": self.actual,
            "agent_shown": self.agent_shown,
            "agent_basis": self.agent_basis,
            "agent_rule": self.agent_rule,
            "agent_estimator": self.agent_estimator,
            "agent_compacts": self.agent_compacts,
            "calibrated": self.calibrated,
            "basis": self.basis,
            **self.errors(),
            "usage": self.usage,
        }


@dataclass
class ContextReport:
    """`calib context`: the calls asked for, and the calibration they were counted with."""

    config: str
    calls: list[ContextCall]
    window_kind: str

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config, "window": self.window_kind, "calls": [c.to_dict() for c in self.calls]}


def pick_sessions(
    store: Store, session: str | None, every: bool
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The uids of the sessions to show (`session`: a uid, a native id or a unique prefix of either;
    else the newest session, or every session with `every`), and what is known of each."""
    rows = store.query(_SESSIONS).to_dicts()
    info = {r["session_uid"]: r for r in rows}
    if not rows:
        raise UsageError("the store has no session with calls", hint="run `calib ingest PATH` first")
    if session is None:
        return ([r["session_uid"] for r in rows] if every else [rows[0]["session_uid"]]), info
    if not session.strip():
        raise UsageError(
            "--session is empty", hint="give a session's uid or native id (or a unique start of one)"
        )
    exact = [r for r in rows if session in (r["session_uid"], r["native_id"])]
    found = exact or [
        r for r in rows if r["session_uid"].startswith(session) or r["native_id"].startswith(session)
    ]
    if not found:
        raise UsageError(
            f"no session {session!r} in the store",
            hint="give a session's uid or native id (or a unique start of one); `calib context --all --json` lists them",
        )
    if len(found) > 1:
        # by uid: a resumed gemini-cli session keeps its native id, and only the uid tells them apart
        names = ", ".join(r["session_uid"] for r in found[:5]) + (", ..." if len(found) > 5 else "")
        raise UsageError(
            f"{session!r} names {len(found)} sessions ({names})", hint="give more of the id, or a uid"
        )
    return [found[0]["session_uid"]], info


def load_calibration(config: str | os.PathLike[str] | None) -> tuple[str, CalibratedEstimator]:
    """The estimator name and calibration `calib context` counts with (`config`, else ./calibration.json)."""
    path = Path(config) if config is not None else Path(DEFAULT_CONFIG)
    if config is None and not path.exists():
        raise ConfigError(
            f"no calibration to count with: {DEFAULT_CONFIG} is not in this folder",
            hint="run `calib fit PATH` to write one, or give --config PATH",
        )
    estimator = CalibratedEstimator.from_path(path)
    return estimator.name, estimator


def iter_context_calls(
    store: Store,
    config: str | os.PathLike[str] | None = None,
    *,
    session: str | None = None,
    every: bool = False,
    window: int | str = "real",
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    correction: bool = False,
) -> Iterator[ContextCall]:
    """Every call of the chosen sessions (`pick_sessions`) as a `ContextCall`, in the store's order
    (sessions by uid, calls in order), read a batch of sessions at a time as calib replay reads a
    store: memory holds one batch, however many calls there are (`correction`: the trackers correct
    their estimates online, `calib.runtime.Tracker`)."""
    name, estimator = load_calibration(config)
    uids, info = pick_sessions(store, session, every)
    wanted = set(uids)
    own_names = sorted({agent_estimator(info[u]["tool"]) for u in uids})
    names = [*own_names, name]
    ready: list[ContextCall] = []  # the calls of the batch being read
    trackers: dict[str, Tracker] = {}  # each session's, going on across the batches it spans

    def read(frame: pl.DataFrame) -> None:
        own = frame.filter(pl.col("own") & pl.col("session_uid").is_in(wanted))
        for (uid,), rows in own.group_by("session_uid", maintain_order=True):
            ready.extend(
                _session_calls(rows, name, estimator.calibration, info[str(uid)], correction, trackers)
            )

    columns = list(dict.fromkeys([*REPLAY_COLUMNS, *WALK_COLUMNS, *_EXTRA]))
    with (
        Spool(prefix="calib-context-") as spool,
        ReplayRun(
            store,
            names,
            rules=[OWN_RULE],
            policies=[_POLICY],
            windows=windows,
            window=window,
            spool=spool,
            grouped={name: estimator},
            frames=read,
            columns=columns,
        ) as run,
    ):
        for scores in _scored_batches(store, run.graded, calls=batch_calls(len(names))):
            scores = scores.filter(pl.col("session_uid").is_in(wanted))
            if scores.is_empty():
                continue
            run.add(scores)
            # a batch's frames come one per rule: put its calls back in the store's order
            ready.sort(key=lambda c: (c.session, c.call))
            yield from ready
            ready.clear()
            for uid in [u for u in trackers if u != scores.get_column("session_uid").max()]:
                del trackers[uid]  # only the batch's last session can go on in the next one


def context_calls(
    store: Store,
    config: str | os.PathLike[str] | None = None,
    *,
    session: str | None = None,
    every: bool = False,
    window: int | str = "real",
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    correction: bool = False,
) -> ContextReport:
    """`iter_context_calls` as a list."""
    calls = list(
        iter_context_calls(
            store, config, session=session, every=every, window=window, windows=windows, correction=correction
        )
    )
    return ContextReport(str(config or DEFAULT_CONFIG), calls, window_kind(window))


def window_kind(window: int | str) -> str:
    """How `calib context` names the windows it shows calls on."""
    return "real" if window == "real" else f"fixed {window}"


def _session_calls(
    rows: pl.DataFrame,
    name: str,
    calibration: Calibration,
    session: Mapping[str, Any],
    correction: bool,
    trackers: dict[str, Tracker],
) -> Iterator[ContextCall]:
    tool = session["tool"]
    shown_by = agent_estimator(tool)
    agent_rows = {
        r["call_uid"]: r for r in rows.filter(pl.col("estimator") == shown_by).iter_rows(named=True)
    }
    mine = rows.filter(pl.col("estimator") == name).sort("seq")
    make = functools.partial(_tracker, calibration, correction=correction)
    uid = str(session["session_uid"])
    for row, tracker in walk(mine.iter_rows(named=True), _POLICY, make, trackers.get(uid)):
        trackers[uid] = tracker
        agent = agent_rows.get(row["call_uid"], {})
        has = bool(row["_has"])
        view = tracker.usage()
        if row["window"] is None:  # no window known for the model: no share, free space or threshold
            for key in ("window", "output_reserve", "percent", "free", "threshold", "should_compact"):
                view[key] = None
        yield ContextCall(
            session=row["session_uid"],
            native_id=session["native_id"],
            call=int(row["seq"]) + 1,
            calls=int(session["calls"]),
            call_uid=row["call_uid"],
            agent=tool + ("/subagent" if row["is_subagent"] else ""),
            provider=row["provider"],
            model=row["model"],
            status=row["status"],
            reason=row["reason"],
            actual=int(row["ctx"]) if has else None,
            agent_rule=row["_own"],
            agent_estimator=shown_by,
            agent_shown=_whole(agent.get("displayed")),
            agent_basis=agent.get("basis"),
            agent_compacts=agent.get("compact") if agent.get("threshold") is not None else None,
            calibrated=view["total"],
            basis=view["basis"],
            usage=view,
        )


def _whole(value: float | None) -> float | int | None:
    """A count as an integer where it is one (the replay's displays are floats)."""
    return int(value) if value is not None and float(value).is_integer() else value


def _tracker(calibration: Calibration, row: Mapping[str, Any], *, correction: bool = False) -> Tracker:
    """A session's tracker on its first call's window, under its agent's own rule."""
    context = row["window"]
    rule = row["_own"] if row["_own"] else None
    tool = row["tool"] + ("/subagent" if row["is_subagent"] else "")
    if context is None:
        return calibration.tracker(
            row["provider"],
            row["model"],
            window=2**53 - 1,
            output_reserve=0,
            tool=tool,
            reasoning="include",
            correction=correction,
        )
    reserve = min(int(row["max_output"] or 0), int(context) - 1)
    cap = row["_max_prompt"]
    return calibration.tracker(
        row["provider"],
        row["model"],
        window=int(context),
        output_reserve=reserve,
        input_limit=int(cap) if cap is not None and cap != context else None,
        rule=rule,
        reasoning="include",
        correction=correction,
        tool=tool,
    )


def _check_options(window: int | str, call: int | None, every: bool) -> None:
    if window != "real" and not (isinstance(window, int) or str(window).isdigit()):
        raise UsageError(
            f"--window {window}: calib context shows a call on the real window or on N tokens",
            hint="give --window real or --window N",
        )
    if call is not None and call < 1:
        raise UsageError(f"--call {call}: calls are numbered from 1", hint="give --call 1 for the first call")
    if call is not None and every:
        raise UsageError("--call and --all ask for different things", hint="give one of them")


def run_context(
    db: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    *,
    session: str | None = None,
    call: int | None = None,
    every: bool = False,
    window: int | str = "real",
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> ContextReport:
    """`calib context`: the store opened to read, the calls of the chosen sessions (`context_calls`);
    without `every`, only the call asked for (`call`, 1 for the first; default the session's last)."""
    _check_options(window, call, every)
    with open_store(db, read_only=True, persist=True) as store:
        report = context_calls(store, config, session=session, every=every, window=window, windows=windows)
    if every:
        return report
    if not report.calls:
        return report
    want = call if call is not None else report.calls[-1].call
    picked = [c for c in report.calls if c.call == want]
    if not picked:
        raise UsageError(
            f"session {report.calls[0].native_id} has {report.calls[0].calls} calls, not {want}",
            hint=f"give --call 1 to {report.calls[0].calls}",
        )
    report.calls = picked
    return report


def stream_context(
    db: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    *,
    session: str | None = None,
    call: int | None = None,
    window: int | str = "real",
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
) -> Iterator[ContextCall]:
    """`calib context --all`: every call of the chosen sessions (all without `session`), as they are
    read (`iter_context_calls`), the store open to read until the last one is given (`call`: refused,
    as it asks for one call)."""
    _check_options(window, call, True)
    with open_store(db, read_only=True, persist=True) as store:
        yield from iter_context_calls(
            store, config, session=session, every=True, window=window, windows=windows
        )


def _n(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def _signed(value: float | None, pct: float | None) -> str:
    if value is None:
        return "?"
    share = "" if pct is None else f", {pct:+.2f}%"
    return f"{value:+,.0f}{share}"


def verification_line(c: ContextCall) -> str:
    """One call: what the provider counted, what the agent showed and what the tracker would have, and
    their errors (the tracker's verification line, beside the agent's)."""
    e = c.errors()
    where = f"{c.native_id[:12]} call {c.call}/{c.calls}"
    if c.actual is None:
        return f"{where}: no usage recorded; agent showed {_n(c.agent_shown)}, calibrated {_n(c.calibrated)}"
    return (
        f"{where}: provider {_n(c.actual)} · agent showed {_n(c.agent_shown)} "
        f"({_signed(e['agent_error'], e['agent_error_pct'])}) · calibrated {_n(c.calibrated)} "
        f"({_signed(e['calibrated_error'], e['calibrated_error_pct'])}, {c.basis})"
    )


def panel_lines(c: ContextCall) -> list[str]:
    """The `/context` panel before call `c`, as the tracker gives it, and how the agent's own display
    and the provider's count compare."""
    u = c.usage
    b = u["breakdown"]
    fitted = " (fitted static overhead: system prompt and tool schemas)" if b["fitted"] else ""
    lines = [
        f"Session {c.native_id} ({c.agent}, {c.provider}/{c.model}), before call {c.call} of {c.calls}",
    ]
    if u["window"] is not None:
        lines.append(
            f"  context     {_n(u['total'])} of {_n(u['window'])} tokens ({u['percent']:.1f}%), "
            f"free {_n(u['free'])} after a {_n(u['output_reserve'])} output reserve"
        )
    else:
        lines.append(f"  context     {_n(u['total'])} tokens (no window known for {c.model})")
    since = (
        f"the last report plus {_n(u['since_report'])} estimated since"
        if u["basis"] == "reported"
        else "estimated whole (nothing reported since the start or a compaction)"
    )
    lines.append(f"  basis       {u['basis']}: {since}")
    lines.append(
        f"  breakdown   system {_n(b['system'])} · tools {_n(b['tools'])} · messages {_n(b['messages'])} "
        f"· reasoning {_n(b['reasoning'])}{fitted}{' (clamped)' if b['clamped'] else ''}"
    )
    if u["threshold"] is not None:
        decision = "would compact now" if u["should_compact"] else "not yet"
        lines.append(f"  compaction  at {_n(u['threshold'])} ({u['rule']} rule): {decision}")
    check = u["last_check"]
    if check is not None:
        pct = "" if check["error_pct"] is None else f" ({check['error_pct']:+.2f}%)"
        lines.append(
            f"  last check  call {c.call - 1}: estimated {_n(check['estimated'])}, provider "
            f"{_n(check['actual'])}, error {check['error']:+,}{pct}"
        )
    e = c.errors()
    estimates = c.agent_rule is None or RULES[c.agent_rule].uses_estimator
    how = f"{c.agent_rule or 'no'} rule{f', {c.agent_estimator}' if estimates else ''}, basis {c.agent_basis}"
    shown = f"{_n(c.agent_shown)} ({how})"
    lines.append(f"  the agent showed {shown}")
    if c.actual is not None:
        lines.append(
            f"  the provider counted {_n(c.actual)}: agent {_signed(e['agent_error'], e['agent_error_pct'])}, "
            f"calibrated {_signed(e['calibrated_error'], e['calibrated_error_pct'])}"
        )
    else:
        lines.append("  the provider's count of this call was not recorded")
    return lines
