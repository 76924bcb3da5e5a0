"""Windows: which windows each agent's calls are replayed on (`real`, `auto`, `what-if` or a number of
tokens; the package docstring), and why."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from calib.analysis.replay.reads import _SESSIONS_SQL, _literal
from calib.analysis.rules import Rule, own_rule, what_if_window
from calib.analysis.windows import Window, WindowTable, fixed_windows, load_windows, window_size
from calib.core.errors import UsageError
from calib.store.store import Store

# `window` modes besides a number of tokens (see the package docstring).
WINDOW_MODES: tuple[str, ...] = ("auto", "real", "what-if")
# `auto` keeps an agent's real windows once a session of it reaches this share of its real threshold.
NEAR_SHARE = 0.5


@dataclass(frozen=True)
class AgentWindows:
    """How an agent's sessions were windowed: `kind` (`real`, `what-if` or `fixed`), how many sessions
    it has, and `reach`, its largest prompt over the threshold of its own rule on the model's real
    window (None where no call has both a usage and a known window)."""

    agent: str
    kind: str
    sessions: int
    reach: float | None

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        reach = None if self.reach is None else round(self.reach, 4)
        return {"agent": self.agent, "kind": self.kind, "sessions": self.sessions, "reach": reach}


@dataclass
class WindowPlan:
    """The windows a replay uses: the `table` of real windows (or, `fixed`, every model at that many
    tokens), per agent whether its calls get real or what-if windows (`mode`: package docstring), and
    the what-if size of each agent that gets one (`what_if`: every model it used, scaled to that many
    tokens)."""

    mode: str
    table: WindowTable
    agents: dict[str, AgentWindows] = field(default_factory=dict)
    fixed: int | None = None
    what_if: dict[str, int] = field(default_factory=dict)

    def kind(self, agent: str | None) -> str:
        """The window kind of an agent's calls."""
        if self.fixed is not None:
            return "fixed"
        found = self.agents.get(agent or "")
        if found is not None:
            return found.kind
        return "what-if" if self.mode == "what-if" else "real"

    def window(self, agent: str | None, model: str | None) -> Window | None:
        """The window an agent's calls to `model` are replayed on (None: the model has none)."""
        real = self.table.lookup(model)
        size = self.what_if.get(agent or "")
        return real.scaled(size) if real is not None and size is not None else real

    def describe(self) -> str:
        """One line: which windows each agent's calls were replayed on, and why."""
        if self.fixed is not None:
            return (
                f"windows: what-if, every model's window scaled to {self.fixed:,} tokens "
                "(output limit and input cap in proportion; --window N)"
            )

        def named(agents: list[AgentWindows], of: str) -> str:
            shown = []
            for i, a in enumerate(agents):
                size = self.what_if.get(a.agent) if a.kind == "what-if" else None
                first = i == 0
                sized = "" if size is None else f"{size:,}{' tokens' if first else ''}; "
                if a.reach is None:
                    shown.append(f"{a.agent} ({sized}no known window)")
                else:
                    shown.append(
                        f"{a.agent} ({sized}{'peak at ' if first else ''}{a.reach:.0%}{of if first else ''})"
                    )
            return ", ".join(shown)

        real = [a for a in self.agents.values() if a.kind == "real"]
        what_if = [a for a in self.agents.values() if a.kind == "what-if"]
        parts = []
        if real:
            why = (
                f": a session reaches {NEAR_SHARE:.0%} of its threshold or more"
                if self.mode == "auto"
                else ""
            )
            parts.append(f"real for {named(real, ' of the threshold')}{why}")
        if what_if:
            why = (
                f"no session of theirs reaches {NEAR_SHARE:.0%} of the real threshold, so"
                if self.mode == "auto"
                else "as asked (--window what-if),"
            )
            parts.append(
                f"what-if for {named(what_if, ' of the real threshold')}: {why} every model the agent used "
                "gets a window of that size, shaped like its own, putting the agent's threshold at the median "
                "prompt of its calls"
            )
        if not parts:
            return "windows: each model's own (no session to replay)"
        tail = ""
        if self.mode == "auto":
            tail = (
                " (calib replay --window real: the real windows)"
                if what_if
                else " (calib replay --window what-if: what-if windows)"
            )
        return "windows: " + "; ".join(parts) + tail

    def to_dict(self) -> dict[str, Any]:
        """As JSON: the mode, each agent's choice (with its what-if window size) and the line."""
        return {
            "mode": self.mode if self.fixed is None else self.fixed,
            "agents": [
                {**a.to_dict(), "what_if_window": self.what_if.get(a.agent)} for a in self.agents.values()
            ],
            "line": self.describe(),
        }


# The version is read once per session, before the join: a long session's `meta` (a list entry per
# compaction) copied onto each of its calls would fill DuckDB's memory.
_PEAKS_SQL = f"""
SELECT s.tool, s.version, s.layout, c.model, max(c.ctx), count(*)
FROM calls c JOIN ({_SESSIONS_SQL}) s USING (session_uid)
WHERE c.usage_status = 'ok' AND c.ctx IS NOT NULL
GROUP BY ALL
"""
# Per agent: halfway between the two middle prompts of its calls (sorted), the median or just under it
# for an odd count, so that no call sits exactly on the threshold it becomes.
_MIDDLE_SQL = """
WITH ranked AS (
    SELECT s.tool, c.ctx,
           row_number() OVER (PARTITION BY s.tool ORDER BY c.ctx) AS r,
           count(*) OVER (PARTITION BY s.tool) AS n
    FROM calls c JOIN sessions s USING (session_uid)
    WHERE c.usage_status = 'ok' AND c.ctx IS NOT NULL AND s.tool IN ({agents})
)
SELECT tool, avg(ctx)
FROM ranked
WHERE (n = 1 AND r = 1) OR (n > 1 AND (r = n // 2 OR r = n // 2 + 1))
GROUP BY ALL
"""


def plan_windows(
    store: Store,
    rules: Sequence[Rule],
    windows: WindowTable | Mapping[str, Any] | str | os.PathLike[str] | None = None,
    window: int | str | None = "real",
    *,
    con: Any | None = None,
) -> WindowPlan:
    """The windows to replay the store on (`window`: `real`, `auto`, `what-if`, or a number of tokens for
    every model; the package docstring), from two aggregates over the store's calls (read on `con`, a
    cursor of the store, if given)."""
    con = con if con is not None else store.con
    if isinstance(window, str) and window.isdigit():
        window = int(window)
    if window is None:
        window = "real"
    if isinstance(window, int) and not isinstance(window, bool):
        window = window_size(window)
        if windows is not None:
            raise UsageError("--window N and --windows together", hint="pass one of them")
        table, fixed, mode = fixed_windows(window), window, "fixed"
    elif window in WINDOW_MODES:
        table, fixed, mode = load_windows(windows), None, str(window)
    else:
        raise UsageError(f"window {window!r}", hint=f"pass {', '.join(WINDOW_MODES)} or a number of tokens")
    counts = dict(con.execute("SELECT tool, count(*) FROM sessions GROUP BY tool").fetchall())
    reach: dict[str, float] = {}
    # what sizes an agent's what-if window: its own rule (of the version) on the model of most of its calls
    main: dict[str, tuple[int, str, str, str]] = {}
    for tool, version, layout, model, peak, n in con.execute(_PEAKS_SQL).fetchall():
        found = table.lookup(model)
        reference = own_rule(tool, version, layout) or (rules[0] if rules else None)
        if reference is None or found is None or fixed is not None:
            continue
        held = main.get(tool)
        if held is None or (n, version or "", layout or "", model or "") > held:
            main[tool] = (n, version or "", layout or "", model or "")
        limit = reference.limit(found)
        share = peak / limit if limit > 0 else math.inf
        reach[tool] = max(reach.get(tool, 0.0), share)
    agents = {}
    for tool in sorted(counts):
        if fixed is not None:
            kind = "fixed"
        elif mode == "what-if" or (mode == "auto" and tool in reach and reach[tool] < NEAR_SHARE):
            kind = "what-if"
        else:
            kind = "real"
        agents[tool] = AgentWindows(tool, kind, int(counts[tool]), reach.get(tool))
    what_if: dict[str, int] = {}
    sized = [tool for tool, a in agents.items() if a.kind == "what-if" and tool in main]
    if sized:
        query = _MIDDLE_SQL.format(agents=", ".join(_literal(tool) for tool in sized))
        for tool, middle in con.execute(query).fetchall():
            _, version, layout, model = main[tool]
            reference = own_rule(tool, version or None, layout or None) or (rules[0] if rules else None)
            found = table.lookup(model or None)
            if reference is None or found is None or middle is None or middle <= 0:
                continue
            what_if[tool] = what_if_window(reference, found, float(middle)).context
    return WindowPlan(mode, table, agents, fixed, what_if)


def _session_plan(calls: pl.DataFrame, sessions: pl.DataFrame | None, plan: WindowPlan) -> pl.DataFrame:
    """Per session of `calls`: the name of its own rule (`_own`, null without one) and the kind of window
    its agent's calls are replayed on (`window_kind`)."""
    info: dict[str, tuple[str | None, str | None, str | None]] = {}
    if sessions is not None:
        for uid, tool, version, layout in sessions.select(
            "session_uid", "tool", "version", "layout"
        ).iter_rows():
            info[uid] = (tool, version, layout)
    uids, owns, kinds = [], [], []
    for uid, tool in (
        calls.select("session_uid", "tool").unique("session_uid", maintain_order=True).iter_rows()
    ):
        agent, version, layout = info.get(uid, (tool, None, None))
        own = own_rule(agent, version, layout) if sessions is not None else None
        uids.append(uid)
        owns.append(own.name if own is not None else None)
        kinds.append(plan.kind(tool))
    return pl.DataFrame(
        {"session_uid": uids, "_own": owns, "window_kind": kinds},
        schema={"session_uid": pl.String, "_own": pl.String, "window_kind": pl.String},
    )
