"""The tally: `summarise_replay` and the session to draw, of replay rows given a batch at a time, in
flat memory (`ReplayTally`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from calib.analysis.batches import Spool, compact
from calib.analysis.replay.session import _best_session, _merged_stats, _session_stats, timeline
from calib.analysis.replay.summary import (
    _COUNTS,
    _EARLY_FIRE,
    _EVENT_CODES,
    _SCORED,
    _SUMMARY_KEYS,
    _VALUE_FIGURES,
    SUMMARY_COLUMNS,
    _count_aggs,
    _ordered,
    _with_uses_estimator,
)
from calib.analysis.rules import OWN_RULE


class ReplayTally:
    """`summarise_replay`, `unknown_models` and (for one rule and policy) `pick_session` and its
    `timeline`, of replay rows given a frame at a time: the frames of `replay_batch`, each holding whole
    sessions or a piece of one (say which with `batch`). Counts are added up as frames come; the
    values of each group that a percentile needs all of (errors, distances of events from the
    threshold) wait in a `Spool` on disk, and the summary computes every figure on them as
    `summarise_replay` does on the whole frame, so the two give the same numbers.

    `order` gives the summary's row order within an agent (rules, then policies, then estimators, as
    `replay` makes the frame); `timeline_at` the (rule, policy) whose session to pick and keep the
    timeline of (rule `own`: each session under its own rule)."""

    def __init__(
        self,
        order: tuple[Sequence[str], Sequence[str], Sequence[str]],
        spool: Spool,
        *,
        timeline_at: tuple[str, str] | None = None,
    ) -> None:
        rules, policies, estimators = order
        self._rank = {
            "rule": {name: i for i, name in enumerate(rules)},
            "policy": {name: i for i, name in enumerate(policies)},
            "estimator": {name: i for i, name in enumerate(estimators)},
        }
        self._spool = spool
        # (agent, window kind, estimator) as a number: less to keep per spooled row
        self._codes: dict[tuple[str, str, str], int] = {}
        self._groups: list[tuple[str, str, str]] = []
        self._counts: dict[tuple[str, str, str, str, str], list[int]] = {}
        self._extra: dict[tuple[str, str, str, str, str], list[Any]] = {}
        self._unknown: set[str | None] = set()
        self.timeline_at = timeline_at
        self._best: tuple[tuple[Any, ...], str] | None = None
        self._timeline: pl.DataFrame | None = None
        # The last session of the batch being added (`batch`), which the next batch may go on with: it
        # is judged for the timeline once complete, from what its pieces gave (`_open`).
        self._last: str | None = None
        self._open: tuple[str, pl.DataFrame | None, list[pl.DataFrame]] | None = None

    def batch(self, first: str, last: str | None) -> None:
        """Say that the frames added next hold the calls from session `first` on, up to session `last`
        where that one may go on in the next batch (None: the batch ends with a whole session). A session
        may be cut between batches; the last one of such a batch is picked for the timeline or not once
        the next batch begins with another."""
        if self._open is not None and self._open[0] != first:
            self._settle()
        self._last = last

    def add(self, frame: pl.DataFrame) -> None:
        """Count the rows of whole sessions, or of the pieces of one session in order (any rules,
        estimators and policies)."""
        if frame.is_empty():
            return
        pairs = frame.select("rule", "policy").unique(maintain_order=True).rows()
        if len(pairs) > 1:
            for rule, policy in pairs:
                self._add(frame.filter((pl.col("rule") == rule) & (pl.col("policy") == policy)), rule, policy)
        else:
            self._add(frame, *pairs[0])

    def _add(self, frame: pl.DataFrame, rule: str, policy: str) -> None:
        # the rows of one rule and policy
        frame = frame.with_columns(pl.col("tool").alias("agent"))
        counts = frame.group_by("agent", "window_kind", "estimator", maintain_order=True).agg(
            *_count_aggs(),
            pl.col("own").any().alias("own"),
            pl.col("window").min().alias("window_min"),
            pl.col("window").max().alias("window_max"),
        )
        width = len(_COUNTS)
        for row in counts.iter_rows():
            group = (row[0], row[1], row[2])
            if group not in self._codes:
                self._codes[group] = len(self._groups)
                self._groups.append(group)
            key = (row[0], rule, row[2], policy, row[1])
            total = self._counts.setdefault(key, [0] * width)
            for i, n in enumerate(row[3 : 3 + width]):
                total[i] += n
            own, low, high = row[3 + width :]
            extra = self._extra.setdefault(key, [False, None, None])
            extra[0] = extra[0] or bool(own)
            if low is not None:
                extra[1] = low if extra[1] is None else min(extra[1], low)
                extra[2] = high if extra[2] is None else max(extra[2], high)
        # each group's values, in the order of the rows
        mapping = {"\x1f".join(group): code for group, code in self._codes.items()}
        code = (
            pl.concat_str(["agent", "window_kind", "estimator"], separator="\x1f")
            .replace_strict(mapping, default=None, return_dtype=pl.UInt32)
            .alias("group")
        )
        errors = frame.filter(_SCORED).select(
            code, "error", (pl.col("error").abs() / pl.col("truth")).alias("rel")
        )
        self._spool.append(("errors", rule, policy), errors)
        wasted = frame.filter(_EARLY_FIRE).select(
            code, (pl.col("threshold") - pl.col("truth")).alias("wasted")
        )
        self._spool.append(("wasted", rule, policy), wasted)
        events = frame.filter(pl.col("event").is_in(list(_EVENT_CODES))).select(
            code,
            pl.col("event").replace_strict(_EVENT_CODES, return_dtype=pl.UInt8).alias("kind"),
            pl.col("margin").abs().alias("by"),
        )
        self._spool.append(("by", rule, policy), events)
        missing = frame.filter(pl.col("outcome") == "no_window").get_column("model").unique().to_list()
        self._unknown.update(missing)
        if self.timeline_at is not None and policy == self.timeline_at[1]:
            wanted = self.timeline_at[0]
            if wanted in (OWN_RULE, rule):
                self._pick(frame.drop("agent"), wanted, policy)

    def _pick(self, frame: pl.DataFrame, rule: str, policy: str) -> None:
        # `pick_session` on these sessions; the best so far wins over them unless they rank higher
        stats = _session_stats(frame, rule, policy)
        going = self._last
        if going is not None:
            # the batch's last session may go on in the next batch: gather it until it is complete
            rows = timeline(frame, going, rule=rule, policy=policy)
            mine = stats.filter(pl.col("session_uid") == going)
            stats = stats.filter(pl.col("session_uid") != going)
            if not rows.is_empty() or not mine.is_empty():
                if self._open is None or self._open[0] != going:
                    self._open = (going, None, [])
                _, held, pieces = self._open
                if not mine.is_empty():
                    held = mine if held is None else _merged_stats(held, mine)
                if not rows.is_empty():
                    pieces.append(compact(rows))
                self._open = (going, held, pieces)
        best = _best_session(stats)
        if best is not None:
            self._consider(best, lambda uid: compact(timeline(frame, uid, rule=rule, policy=policy)))

    def _consider(self, best: tuple[tuple[Any, ...], str], rows: Callable[[str], pl.DataFrame]) -> None:
        """Take `best` (a rank key and a session) as the session to draw unless the one held ranks higher."""
        key, uid = best
        if self._best is not None:
            held_key, held_uid = self._best
            if key < held_key or (key == held_key and uid > held_uid):
                return
        self._best = (key, uid)
        self._timeline = rows(uid)

    def _settle(self) -> None:
        """Judge the session held open, now complete."""
        if self._open is None:
            return
        _, stats, pieces = self._open
        self._open = None
        best = _best_session(stats) if stats is not None else None
        if best is not None:
            self._consider(best, lambda _: self._joined(pieces))

    def _joined(self, pieces: list[pl.DataFrame]) -> pl.DataFrame:
        """The timeline of a session from those of its pieces, in the order of its whole frame: each
        estimator's calls in turn."""
        if len(pieces) == 1:
            return pieces[0]
        rank = self._rank["estimator"]
        order = pl.col("estimator").replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
        return pl.concat(pieces, how="vertical").sort(order, "seq", maintain_order=True)

    @property
    def session(self) -> str | None:
        """The session `pick_session` picks among all the rows (None without `timeline_at`)."""
        self._settle()
        return self._best[1] if self._best is not None else None

    @property
    def timeline(self) -> pl.DataFrame | None:
        """The `timeline` of `session` (None without one)."""
        self._settle()
        return self._timeline

    def rules(self) -> set[str]:
        """The rules that have rows."""
        return {key[1] for key in self._counts}

    def unknown_models(self) -> list[str]:
        """`unknown_models` of all the rows."""
        return sorted("?" if m is None else m for m in self._unknown)

    def summary(self) -> pl.DataFrame:
        """`summarise_replay` of all the rows."""
        figures: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
        for rule, policy in dict.fromkeys((k[1], k[3]) for k in self._counts):
            figures.update(self._figures(rule, policy))
        names = (*_SUMMARY_KEYS, *_COUNTS, *_VALUE_FIGURES, "own", "window_min", "window_max")
        rows: dict[str, list[Any]] = {name: [] for name in names}
        empty = {**dict.fromkeys(_VALUE_FIGURES), "wasted_tokens": 0.0}
        for key, counts in self._counts.items():
            for name, value in zip(_SUMMARY_KEYS, key, strict=True):
                rows[name].append(value)
            for name, n in zip(_COUNTS, counts, strict=True):
                rows[name].append(n)
            found = figures.get(key, empty)
            for name in _VALUE_FIGURES:
                rows[name].append(found.get(name, empty[name]))
            own, low, high = self._extra[key]
            rows["own"].append(own)
            rows["window_min"].append(low)
            rows["window_max"].append(high)
        schema: dict[str, Any] = dict.fromkeys(_SUMMARY_KEYS, pl.String)
        schema.update(dict.fromkeys(_COUNTS, pl.Int64))
        schema.update(dict.fromkeys(_VALUE_FIGURES, pl.Float64))
        schema.update({"own": pl.Boolean, "window_min": pl.Int64, "window_max": pl.Int64})
        frame = _with_uses_estimator(pl.DataFrame(rows, schema=schema))
        return _ordered(frame, self._rank).select(SUMMARY_COLUMNS)

    def _figures(self, rule: str, policy: str) -> dict[tuple[str, str, str, str, str], dict[str, Any]]:
        # the figures of one rule and policy per group, aggregated as `summarise_replay` aggregates
        # them (a group_by: the same kernels, on the same values in the same order)
        errors = self._spool.read(("errors", rule, policy), {"group": pl.UInt32})
        wasted = self._spool.read(("wasted", rule, policy), {"group": pl.UInt32})
        events = self._spool.read(("by", rule, policy), {"group": pl.UInt32, "kind": pl.UInt8})
        out: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}

        def slot(code: int) -> dict[str, Any]:
            agent, kind, estimator = self._groups[code]
            return out.setdefault((agent, rule, estimator, policy, kind), {})

        abs_err = pl.col("error").abs()
        if not errors.is_empty():
            table = errors.group_by("group", maintain_order=True).agg(
                abs_err.quantile(0.5, "linear").alias("err_p50"),
                abs_err.quantile(0.9, "linear").alias("err_p90"),
                pl.col("rel").quantile(0.5, "linear").alias("rel_err_p50"),
                pl.col("rel").quantile(0.9, "linear").alias("rel_err_p90"),
                pl.col("error").mean().alias("err_mean"),
            )
            for row in table.iter_rows(named=True):
                slot(row.pop("group")).update(row)
        if not wasted.is_empty():
            sums = wasted.group_by("group", maintain_order=True).agg(pl.col("wasted").sum())
            for code, total in sums.iter_rows():
                slot(code)["wasted_tokens"] = total
        if not events.is_empty():
            by = pl.col("by")
            spans = events.group_by("group", "kind", maintain_order=True).agg(
                by.min().alias("min"), by.quantile(0.5, "linear").alias("p50"), by.max().alias("max")
            )
            names = {code: name for name, code in _EVENT_CODES.items()}
            for code, kind, low, mid, high in spans.iter_rows():
                prefix = names[kind]
                slot(code).update(
                    {f"{prefix}_by_min": low, f"{prefix}_by_p50": mid, f"{prefix}_by_max": high}
                )
        return out
