"""Threshold sweep: on a user's own logs, what an agent's compaction would do at other thresholds.

It answers the agents' question "why is the threshold 0.7, can it be 0.9": for each threshold share t
(`parse_thresholds`, e.g. `0.5,0.7,0.85,0.95` of the context window), per agent and (where it matters)
estimator, how many compactions would fire, how many calls would have gone over the window for want of
one, and how many tokens were still free when one fired. It backs `calib replay --threshold`.

Input: the replay's rows (`calib.analysis.replay`, columns `REPLAY_COLUMNS`), given to
`ThresholdSweep.add` a frame at a time. Only the rows that show what the agent itself would have done
are read: its session's own rule (`own`) under the `raw` policy (the agent's own count), on a known
window (`window` not null) and with a provider count (`truth` not null); these are the *decided* calls.
What the replay displayed before a call (`displayed`) does not depend on the threshold, so deciding
again at another threshold is exact; the rule's own limit (its reserves, buffers, and `>` or `>=`) and
gemini-cli's pre-send guard are left aside: the sweep asks what the agent would do if it compacted at
a plain share t of the window.

At share t, a decided call with window W (the model's context window the replay used, possibly a
what-if one):

- *compacts* when `displayed >= t × W` (a call without a displayed count does not);
- *fires* when it compacts and the decided call before it in the session, under the same estimator,
  did not (the first decided call of a session fires if it compacts). As in the replay, the history a
  compaction would have left is not rebuilt: the recorded session goes on as it was recorded, so a
  session that stays over t × W fires once, and one that dips under it and comes back fires again.
  Calls without a truth or a window are skipped, not read as "did not compact";
- is *early* when it fires while its truth is under `t × W` (compacted before it needed to in truth);
- is *over the window* when the replay marks it `over_window` (its prompt is over the model's input cap,
  else the window: a request that would fail) and it does not compact;
- leaves `W - truth` tokens of *headroom* when it fires: what was still free when compaction ran
  (negative when the prompt was already over the window).

The share is of the whole window, while a request fails over the model's input cap where it has one
(the GPT-5 family: 272k of 400k): on such a model, at a share above cap / window, calls can go over
before anything compacts, and `over_window` counts them.

Per agent (the `tool` column) × estimator × threshold, `ThresholdSweep.rows` gives `SWEEP_COLUMNS`: the
sessions and decided calls read, the counts of firings, early firings and calls over the window, and
the least, median and largest headroom at a firing (null without one). An agent's estimators are
merged into one row per threshold, estimator `(any)` (as `calib replay`'s sentences say "any
estimator"), where every estimator gives it the same figures at every threshold (whenever its rule
reads only the provider's count), and where a single estimator was replayed under rules whose
decision does not depend on it (`uses_estimator` false in `calib.analysis.rules`).

Frames: a frame holds whole sessions, or pieces of a long one, each session's calls in order (of
`seq`). A session cut in pieces goes on in the next frame that holds rows of its rule, as
`calib.analysis.replay.replay_batch` gives them batch after batch (frames of other rules or policies
between them are fine); a session missing from that frame has ended, and its state is dropped. The sweep carries each session's last decision per
threshold from one frame to the next, for the sessions of the latest frame of each rule only, and
keeps per agent and estimator just the counts and, per threshold, the headroom of each firing: its
memory grows with the number of firings, not of calls.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.rules import RULES
from calib.core.errors import UsageError

__all__ = ["ANY_ESTIMATOR", "SWEEP_COLUMNS", "ThresholdSweep", "parse_thresholds"]

# The estimator of a row that holds every estimator (they all gave the agent the same figures).
ANY_ESTIMATOR = "(any)"
SWEEP_COLUMNS: tuple[str, ...] = (
    "agent",
    "estimator",
    "threshold",
    "sessions",
    "calls",
    "fires",
    "early",
    "over_window",
    "headroom_min",
    "headroom_p50",
    "headroom_max",
)
_HINT = "give shares of the context window separated by commas, each above 0 and at most 1, e.g. 0.5,0.7,0.85,0.95"
# What `add` reads of a replay frame.
_READ = ("rule", "estimator", "session_uid", "seq", "tool", "window", "displayed", "truth", "over_window")
_CONTINUES = "_continues"


def parse_thresholds(text: str) -> list[float]:
    """The threshold shares of a comma-separated list (`0.5,0.7,0.85,0.95`), in the order given."""
    if not text.strip():
        raise UsageError("no threshold given", hint=_HINT)
    items = [item.strip() for item in text.split(",")]
    out: list[float] = []
    for item in items:
        if not item:
            raise UsageError(f"an empty threshold in {text.strip()!r}", hint=_HINT)
        try:
            value = float(item)
        except ValueError:
            raise UsageError(f"threshold {item!r} is not a number", hint=_HINT) from None
        out.append(value)
    return _checked(out, items)


def _checked(values: Sequence[float], shown: Sequence[str] | None = None) -> list[float]:
    """`values` as floats, each a share of the window (above 0, at most 1), none twice, at least one."""
    if not values:
        raise UsageError("no threshold given", hint=_HINT)
    out: list[float] = []
    for k, value in enumerate(values):
        label = shown[k] if shown is not None else str(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise UsageError(f"threshold {label!r} is not a number", hint=_HINT)
        share = float(value)
        if not math.isfinite(share) or not 0 < share <= 1:
            raise UsageError(
                f"threshold {label} is not a share of the window (above 0, at most 1)", hint=_HINT
            )
        if share in out:
            raise UsageError(f"threshold {label} is given twice", hint="give each threshold once")
        out.append(share)
    return out


@dataclass
class _Tally:
    """What the figures of one agent and estimator need: counts, and per threshold the headrooms."""

    sessions: int = 0
    calls: int = 0
    fires: list[int] = field(default_factory=list)
    early: list[int] = field(default_factory=list)
    over: list[int] = field(default_factory=list)
    headroom: list[list[float]] = field(default_factory=list)

    @classmethod
    def empty(cls, n: int) -> _Tally:
        return cls(0, 0, [0] * n, [0] * n, [0] * n, [[] for _ in range(n)])

    def same_as(self, other: _Tally) -> bool:
        """Whether the two give every figure alike (headrooms compared as sets with repeats)."""
        return (self.sessions, self.calls, self.fires, self.early, self.over) == (
            other.sessions,
            other.calls,
            other.fires,
            other.early,
            other.over,
        ) and all(sorted(a) == sorted(b) for a, b in zip(self.headroom, other.headroom, strict=True))


class ThresholdSweep:
    """Per agent × estimator × threshold share, the compactions that would fire, the calls that would
    go over the window, and the headroom at each firing, of replay rows given a frame at a time
    (module docstring)."""

    def __init__(self, thresholds: Sequence[float]) -> None:
        self.thresholds = sorted(_checked(list(thresholds)))
        self._tallies: dict[tuple[str, str], _Tally] = {}
        self._rules: dict[str, set[str]] = {}
        # per rule, for the sessions of its latest frame: (session, estimator) -> compacted at the last
        # decided call, per threshold
        self._carry: dict[str, dict[tuple[str, str], tuple[bool, ...]]] = {}

    def add(self, frame: pl.DataFrame) -> None:
        """Count the decided calls of a frame of replay rows (whole sessions, or a piece of a long one
        going on from the frames before)."""
        if frame.is_empty():
            return
        mine = frame.filter(pl.col("own").fill_null(False) & (pl.col("policy") == "raw")).select(_READ)
        if mine.is_empty():
            return
        for (rule,), rows in mine.partition_by("rule", as_dict=True, maintain_order=True).items():
            self._add_rule(str(rule), rows)

    def _add_rule(self, rule: str, rows: pl.DataFrame) -> None:
        carry = self._carry.get(rule, {})
        present = set(rows.get_column("session_uid").unique().to_list())
        n = len(self.thresholds)
        decided = rows.filter(pl.col("window").is_not_null() & pl.col("truth").is_not_null())
        if not decided.is_empty():
            decided = self._decide(
                decided.sort("session_uid", "estimator", "seq", maintain_order=True), carry
            )
            self._count(decided, n)
            ends = decided.group_by("session_uid", "estimator", maintain_order=True).agg(
                *(pl.col(f"_c{i}").last() for i in range(n))
            )
            carry = dict(carry)
            for uid, estimator, *last in ends.iter_rows():
                carry[(uid, estimator)] = tuple(bool(x) for x in last)
        # a session absent from this frame of its rule has ended: it can no longer go on
        self._carry[rule] = {key: value for key, value in carry.items() if key[0] in present}
        for agent in rows.get_column("tool").unique().to_list():
            self._rules.setdefault(agent, set()).add(rule)

    def _decide(self, decided: pl.DataFrame, carry: dict[tuple[str, str], tuple[bool, ...]]) -> pl.DataFrame:
        """The decided calls with, per threshold i, whether each compacts (`_c{i}`), fires (`_f{i}`), fires
        early (`_e{i}`) and goes over the window (`_o{i}`), and `_continues` for a session of the frame
        before."""
        n = len(self.thresholds)
        if carry:
            keys, states = zip(*carry.items(), strict=True)
            carried = pl.DataFrame(
                {
                    "session_uid": [k[0] for k in keys],
                    "estimator": [k[1] for k in keys],
                    **{f"_p{i}": [s[i] for s in states] for i in range(n)},
                },
                schema={
                    "session_uid": pl.String,
                    "estimator": pl.String,
                    **{f"_p{i}": pl.Boolean for i in range(n)},
                },
            ).with_columns(pl.lit(True).alias(_CONTINUES))
            decided = decided.join(
                carried, on=["session_uid", "estimator"], how="left", maintain_order="left"
            )
        else:
            decided = decided.with_columns(
                *(pl.lit(None, pl.Boolean).alias(f"_p{i}") for i in range(n)),
                pl.lit(None, pl.Boolean).alias(_CONTINUES),
            )
        window = pl.col("window").cast(pl.Float64)
        in_session = ["session_uid", "estimator"]
        decided = decided.with_columns(
            (pl.col("displayed") >= t * window).fill_null(False).alias(f"_c{i}")
            for i, t in enumerate(self.thresholds)
        )
        columns: list[pl.Expr] = []
        for i, t in enumerate(self.thresholds):
            now = pl.col(f"_c{i}")
            before = now.shift(1).over(in_session).fill_null(pl.col(f"_p{i}")).fill_null(False)
            fires = now & ~before
            columns += [
                fires.alias(f"_f{i}"),
                (fires & (pl.col("truth") < t * window)).alias(f"_e{i}"),
                (pl.col("over_window").fill_null(False) & ~now).alias(f"_o{i}"),
            ]
        return decided.with_columns(*columns, (window - pl.col("truth")).alias("_headroom"))

    def _count(self, decided: pl.DataFrame, n: int) -> None:
        def total(name: str) -> pl.Expr:
            return pl.col(name).sum().cast(pl.Int64)

        new = pl.col("session_uid").filter(~pl.col(_CONTINUES).fill_null(False)).n_unique()
        sums = decided.group_by("tool", "estimator", maintain_order=True).agg(
            new.cast(pl.Int64).alias("_sessions"),
            pl.len().cast(pl.Int64).alias("_calls"),
            *(total(f"_{kind}{i}").alias(f"_{kind}{i}") for kind in "feo" for i in range(n)),
            *(pl.col("_headroom").filter(pl.col(f"_f{i}")).alias(f"_h{i}") for i in range(n)),
        )
        for row in sums.iter_rows(named=True):
            tally = self._tallies.setdefault((row["tool"], row["estimator"]), _Tally.empty(n))
            tally.sessions += row["_sessions"]
            tally.calls += row["_calls"]
            for i in range(n):
                tally.fires[i] += row[f"_f{i}"]
                tally.early[i] += row[f"_e{i}"]
                tally.over[i] += row[f"_o{i}"]
                tally.headroom[i].extend(float(h) for h in row[f"_h{i}"])

    def _merged(self, agent: str, estimators: list[str]) -> bool:
        """Whether an agent's estimators go in one row, `(any)` (module docstring)."""
        tallies = [self._tallies[(agent, e)] for e in estimators]
        if any(not tallies[0].same_as(t) for t in tallies[1:]):
            return False
        if len(estimators) > 1:
            return True
        return not any(RULES[r].uses_estimator if r in RULES else True for r in self._rules.get(agent, ()))

    def rows(self) -> list[dict[str, Any]]:
        """One row per agent × estimator × threshold (`SWEEP_COLUMNS`), by agent, estimator, threshold."""
        agents: dict[str, list[str]] = {}
        for agent, estimator in self._tallies:
            agents.setdefault(agent, []).append(estimator)
        out: list[dict[str, Any]] = []
        for agent in sorted(agents):
            estimators = sorted(agents[agent])
            named = (
                [(ANY_ESTIMATOR, estimators[0])]
                if self._merged(agent, estimators)
                else [(e, e) for e in estimators]
            )
            for label, estimator in named:
                tally = self._tallies[(agent, estimator)]
                for i, threshold in enumerate(self.thresholds):
                    heads = tally.headroom[i]
                    out.append(
                        {
                            "agent": agent,
                            "estimator": label,
                            "threshold": threshold,
                            "sessions": tally.sessions,
                            "calls": tally.calls,
                            "fires": tally.fires[i],
                            "early": tally.early[i],
                            "over_window": tally.over[i],
                            "headroom_min": min(heads) if heads else None,
                            "headroom_p50": float(statistics.median(heads)) if heads else None,
                            "headroom_max": max(heads) if heads else None,
                        }
                    )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The sweep as JSON: its thresholds and `rows`."""
        return {"thresholds": list(self.thresholds), "rows": self.rows()}

    def lines(self) -> list[str]:
        """One sentence per row of `rows`, e.g. `gemini-cli at 0.70: 12 compactions over 40 sessions
        (3 early), 0 calls over the window, headroom at firing 31k-58k tokens (median 44k)`."""
        return [_line(row) for row in self.rows()]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _tokens(value: float) -> str:
    """`850`, `4.2k`, `31k`, `1.2M`: a number of tokens, short."""
    size = abs(value)
    if size < 1_000:
        return f"{value:.0f}"
    if size < 10_000:
        return f"{value / 1_000:.1f}k"
    if size < 1_000_000:
        return f"{value / 1_000:.0f}k"
    return f"{value / 1_000_000:.1f}M"


def _share(threshold: float) -> str:
    text = f"{threshold:.2f}"
    return text if float(text) == threshold else f"{threshold:g}"


def _line(row: dict[str, Any]) -> str:
    who = row["agent"] if row["estimator"] == ANY_ESTIMATOR else f"{row['agent']} ({row['estimator']})"
    fires = row["fires"]
    text = f"{who} at {_share(row['threshold'])}: "
    text += f"{_plural(fires, 'compaction')} over {_plural(row['sessions'], 'session')}"
    if fires:
        text += f" ({row['early']:,} early)"
    text += f", {_plural(row['over_window'], 'call')} over the window"
    if fires:
        low, mid, high = (_tokens(row[f"headroom_{k}"]) for k in ("min", "p50", "max"))
        if low == high:
            text += f", headroom at firing {low} tokens"
        else:
            # `-14 to 2.4k`, not `-14-2.4k`, where compaction ran on a prompt already over the window
            dash = " to " if row["headroom_min"] < 0 else "-"
            text += f", headroom at firing {low}{dash}{high} tokens"
            if fires > 2:
                text += f" (median {mid})"
    return text
