"""Round trips: hand-built synthetic sessions written in each Dexto layout come back through the importer."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from calib.core.errors import UsageError
from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth.dexto import LAYOUTS, estimate_text, write
from calib.synth.model import Step, SynthSession, ToolUse, Turn, Usage

T0 = datetime(2026, 2, 1, 10, 0, 0)
CJK = "日本語のテキスト😀"  # 9 code points, 10 UTF-16 units


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def session(provider: str = "anthropic", model: str = "claude-sonnet-4-5", sid: str = "s1") -> SynthSession:
    """Two turns: a tool loop with reasoning, cache and a pruned output; then a compaction, an aborted
    call without usage, and a last call."""
    return SynthSession(
        tool="dexto",
        id=sid,
        title="Fix the parser",
        project_dir="/work/proj",
        started_at=T0,
        provider=provider,
        model=model,
        turns=[
            Turn(
                "u1",
                T0,
                "Fix the bug",
                [
                    Step(
                        "a1",
                        at(1),
                        Usage(ctx=1000, output=50, reasoning=10, cache_read=800, cache_write=100),
                        reasoning="think",
                        tools=[
                            ToolUse("c1", "read_file", '{"path":"a.py"}', "x" * 40),
                            ToolUse("c2", "grep", '{"q":"def"}', "y" * 400, pruned=True, pruned_at=at(300)),
                        ],
                    ),
                    Step("a2", at(2), Usage(ctx=1300, output=20, cache_read=900), text="Done."),
                ],
            ),
            Turn(
                "u2",
                at(600),
                CJK,
                [
                    Step(
                        "b1",
                        at(601),
                        Usage(ctx=400, output=5),
                        text="OK",
                        compacted=True,
                        summary="Summary of earlier work.",
                    ),
                    Step("b2", at(602), None, text="partial", error="aborted by user"),
                    Step("b3", at(603), Usage(ctx=500, output=30), text="final"),
                ],
            ),
        ],
    )


def ingest_layout(tmp_path: Path, store: Store, sessions: list[SynthSession], layout: str) -> list[Path]:
    files = write(sessions, tmp_path / "out", layout)
    result = ingest([tmp_path / "out"], store=store)
    assert result.ok, [str(e) for e in result.errors]
    assert result.files == len(files) and not result.skipped
    return files


def calls(store: Store) -> list[dict[str, Any]]:
    return store.calls().to_dicts()


def parts(store: Store, uid: str = "dexto:s1") -> list[tuple[str, str, str]]:
    return [(p["role"], p["kind"], p["text"]) for p in store.parts(uid).to_dicts()]


EXPECTED_PARTS = [
    ("user", "user_text", "Fix the bug"),
    ("assistant", "reasoning", "think"),
    ("assistant", "tool_call", '{"path":"a.py"}'),
    ("assistant", "tool_call", '{"q":"def"}'),
    ("tool", "tool_result", "x" * 40),
    ("tool", "tool_result", "y" * 400),
    ("assistant", "assistant_text", "Done."),
    ("user", "user_text", CJK),
    # After the compaction the model sees the summary and the current turn so far.
    ("assistant", "summary", "Summary of earlier work."),
    ("user", "user_text", CJK),
    ("assistant", "assistant_text", "OK"),
    ("assistant", "assistant_text", "partial"),
    ("assistant", "assistant_text", "final"),
]


def test_current_layout_round_trip(tmp_path: Path, store: Store) -> None:
    files = ingest_layout(tmp_path, store, [session()], "dexto-db")
    assert files == [tmp_path / "out" / ".dexto" / "database" / "default-agent.db"]
    got = [
        (
            c["message_id"],
            c["usage_status"],
            c["ctx"],
            c["input"],
            c["cache_read"],
            c["cache_write"],
            c["output"],
            c["reasoning"],
            c["carry"],
            c["error"],
        )
        for c in calls(store)
    ]
    assert got == [
        # Anthropic output tokens include the reasoning.
        ("a1", "ok", 1000, 100, 800, 100, 60, 10, 60, None),
        ("a2", "ok", 1300, 400, 900, 0, 20, 0, 20, None),
        ("b1", "ok", 400, 400, 0, 0, 5, 0, 5, None),
        ("b2", "missing", None, None, None, None, None, None, None, "aborted by user"),
        ("b3", "ok", 500, 500, 0, 0, 30, 0, 30, None),
    ]
    assert [(c["prompt_start"], c["prompt_end"]) for c in calls(store)] == [
        (0, 1),
        (0, 6),
        (8, 10),
        (8, 11),
        (8, 12),
    ]
    assert parts(store) == EXPECTED_PARTS
    pruned = store.parts("dexto:s1").filter(pruned_at=at(300)).to_dicts()
    assert [(p["text"][:1], p["pruned_text"]) for p in pruned] == [("y", "[Old tool result content cleared]")]
    row = store.sessions().row(0, named=True)
    assert (row["layout"], row["title"], row["started_at"], row["ended_at"]) == (
        "dexto-db",
        "Fix the parser",
        T0,
        at(603),
    )


def test_legacy_layout_sums_usage_over_each_turn(tmp_path: Path, store: Store) -> None:
    ingest_layout(tmp_path, store, [session()], "dexto-db-legacy")
    got = [
        (c["message_id"], c["usage_status"], c["input"], c["output"], c["cache_read"]) for c in calls(store)
    ]
    assert got == [
        ("a1", "missing", None, None, None),
        # Anthropic's raw input excluded the cache: 100 + 400 uncached over the turn.
        ("a2", "turn_summed", 500, 80, None),
        ("b1", "missing", None, None, None),
        ("b2", "missing", None, None, None),
        ("b3", "turn_summed", 900, 35, None),
    ]
    # Dexto <= 1.3 stored no reasoning text and no stop status.
    assert parts(store) == [p for p in EXPECTED_PARTS if p[1] != "reasoning"]
    assert store.sessions()["layout"].to_list() == ["dexto-db-legacy"]


def test_log_layout_estimates_are_dextos(tmp_path: Path, store: Store) -> None:
    files = ingest_layout(tmp_path, store, [session()], "dexto-log")
    assert files[1] == tmp_path / "out" / ".dexto" / "logs" / "default-agent" / "s1.log"
    pairs = [
        (e["session_uid"], e["estimated"], e["actual"], e["ts"]) for e in store.agent_estimates().to_dicts()
    ]
    # a1: no actuals yet, round(11/4) for "Fix the bug"; a2: 1000 + 60 + 10 + 100 for the two tool
    # outputs; b1: after compaction, the summary (24 chars) and the CJK message (10 UTF-16 units);
    # b3: 400 + 5 + the text of b2, which had no usage.
    assert pairs == [
        ("dexto:s1", 3, 1000, at(1)),
        ("dexto:s1", 1170, 1300, at(2)),
        ("dexto:s1", 6 + 3, 400, at(601)),
        ("dexto:s1", 407, 500, at(603)),
    ]
    actual = {c["ctx"] for c in calls(store) if c["ctx"] is not None}
    assert {p[2] for p in pairs} == actual
    assert len(calls(store)) == 5


@pytest.mark.parametrize(
    ("provider", "model", "outputs", "legacy_inputs"),
    [
        # Google reports reasoning apart from the output; its raw input includes the cache.
        ("google", "gemini-2.5-pro", [50, 20, 5, None, 30], [2300, 900]),
        ("openai", "gpt-5", [60, 20, 5, None, 30], [2300, 900]),
    ],
)
def test_output_and_input_mapping_per_provider(
    tmp_path: Path,
    store: Store,
    provider: str,
    model: str,
    outputs: list[int | None],
    legacy_inputs: list[int],
) -> None:
    ingest_layout(tmp_path / "new", store, [session(provider, model)], "dexto-db")
    assert [c["output"] for c in calls(store)] == outputs
    assert calls(store)[0]["reasoning"] == 10
    assert [c["usage_status"] for c in calls(store)] == ["ok", "ok", "ok", "missing", "ok"]
    with Store(tmp_path / "legacy.duckdb") as legacy_store:
        ingest_layout(tmp_path / "old", legacy_store, [session(provider, model)], "dexto-db-legacy")
        summed = [c["input"] for c in calls(legacy_store) if c["usage_status"] == "turn_summed"]
    assert summed == legacy_inputs


def test_several_sessions_and_rewrites(tmp_path: Path, store: Store) -> None:
    sessions = [session(sid="s1"), session("openai", "gpt-5", sid="s2")]
    write(sessions, tmp_path / "out", "dexto-db")
    (db,) = write(sessions, tmp_path / "out", "dexto-db")
    con = sqlite3.connect(db)
    try:
        keys = con.execute("SELECT key, count(*) FROM list_store GROUP BY key ORDER BY key").fetchall()
        info = json.loads(con.execute("SELECT value FROM kv_store WHERE key = 'session:s2'").fetchone()[0])
    finally:
        con.close()
    # Writing again replaces, never duplicates: 2 users, 1 summary, 5 assistants, 2 tool results each.
    assert keys == [("messages:s1", 10), ("messages:s2", 10)]
    assert info["createdAt"] == 1_769_940_000_000 and info["metadata"] == {"title": "Fix the parser"}
    result = ingest([tmp_path / "out"], store=store)
    assert result.sessions == 2 and result.calls == 10


def test_unknown_layout_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="dexto-db-legacy"):
        write([session()], tmp_path, "dexto-json")
    assert LAYOUTS == ("dexto-db", "dexto-db-legacy", "dexto-log")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("a", 0), ("ab", 1), ("abcdef", 2), ("a" * 10, 3), ("a" * 11, 3), ("😀😀😀", 2), (CJK, 3)],
)
def test_estimate_rounds_like_javascript(text: str, tokens: int) -> None:
    assert estimate_text(text) == tokens
