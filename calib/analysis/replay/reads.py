"""The store reads of a replay: the SQL of the calls' usage and the sessions' agent and version, read a
batch of sessions at a time."""

from __future__ import annotations

from typing import Any

import polars as pl

from calib.analysis.rules import own_rule
from calib.scoring.chain import AGENT_VERSION_SQL, piece_condition

_USAGE_SQL = """
SELECT call_uid, usage_style, usage_status, input, output, reasoning, cache_read, cache_write, total, carry
FROM calls
"""
# The version an agent recorded (`calib.scoring.chain.AGENT_VERSION_SQL`).
_VERSION_SQL = AGENT_VERSION_SQL.format(meta="meta")
_SESSIONS_SQL = f"SELECT session_uid, tool, {_VERSION_SQL} AS version, layout FROM sessions\n"


# Whether a session has calls after `seq` (the last of a batch: the next batch goes on with it); a
# session's calls are numbered 0 to n-1 (`calib.scoring.chain`).
_GOES_ON_SQL = "SELECT EXISTS (SELECT 1 FROM calls WHERE session_uid = ? AND seq > ?)"


def owned_rules(con: Any) -> set[str]:
    """The names of the rules some session of the store is replayed under as its own (`own_rule` of
    its agent and version): with `own`, the only rules a replay has to compute for every session."""
    rows = con.execute(f"SELECT DISTINCT tool, {_VERSION_SQL} AS version, layout FROM sessions").fetchall()
    return {
        rule.name for tool, version, layout in rows if (rule := own_rule(tool, version, layout)) is not None
    }


def batch_sessions(con: Any, first: str, last: str) -> pl.DataFrame:
    """The agent and recorded version of the sessions whose uid sorts from `first` to `last`."""
    where = f"WHERE session_uid BETWEEN {_literal(first)} AND {_literal(last)}\n"
    result: pl.DataFrame = con.execute(_SESSIONS_SQL + where).pl()
    return result


def batch_usage(con: Any, first: str, last: str, seqs: tuple[int, int] | None = None) -> pl.DataFrame:
    """The usage columns `replay_batch` reads, of the calls of the sessions whose uid sorts from `first`
    to `last` (on a DuckDB connection or cursor of the store); with `seqs`, only from call `seqs[0]` of
    `first` to call `seqs[1]` of `last` (a batch that begins or ends inside a long session)."""
    where = f"WHERE session_uid BETWEEN {_literal(first)} AND {_literal(last)}\n"
    if seqs is not None:
        where += piece_condition(first, seqs[0], last, seqs[1]) + "\n"
    result: pl.DataFrame = con.execute(_USAGE_SQL + where).pl()
    return result


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
