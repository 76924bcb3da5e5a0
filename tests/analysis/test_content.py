from __future__ import annotations

from datetime import timedelta

import polars as pl
import pytest
from analysis.sessions import (
    CJK_TEXT,
    CODE,
    EXPECTED_KINDS,
    JSON_TEXT,
    LOG_TEXT,
    PROSE_TEXT,
    T0,
    kinds_session,
)

from calib.analysis.content import CONTENT_KINDS, EMPTY_KIND, appended_content, content_kind
from calib.core.records import Call, ParsedSession, Part, Session
from calib.store.store import Store


@pytest.mark.parametrize(
    ("text", "part_kind", "expected"),
    [
        (CJK_TEXT, "user_text", "cjk"),
        ("Please fix `src/a.ts`: " + CJK_TEXT, "user_text", "cjk"),
        (JSON_TEXT, "tool_result", "json"),
        ('{"truncated": [1, 2', "tool_result", "tool_output"),  # looks like JSON, does not parse
        (CODE, "tool_result", "code"),
        (CODE, "file", "code"),
        ("12: import os\n13: import sys\n14: x = 1\n", "tool_result", "code"),  # grep output of a file
        (LOG_TEXT, "tool_result", "tool_output"),
        (PROSE_TEXT, "user_text", "prose"),
        (PROSE_TEXT, "tool_result", "tool_output"),
        ("", "tool_result", "tool_output"),
        ("", "user_text", "prose"),
    ],
)
def test_content_kind_rules(text: str, part_kind: str, expected: str) -> None:
    assert content_kind(text, part_kind) == expected


def test_appended_content_names_each_call_by_its_dominant_kind(store: Store) -> None:
    store.write([kinds_session()])
    kinds = appended_content(store).sort("call_uid")
    assert kinds["content_kind"].to_list() == EXPECTED_KINDS
    row = kinds.filter(pl.col("content_kind") == "json").to_dicts()[0]
    assert row["chars_json"] == len(JSON_TEXT)
    assert sum(row[f"chars_{k}"] for k in CONTENT_KINDS) == len(JSON_TEXT)


def _pruned_session(uid: str = "t:pruned") -> ParsedSession:
    """Call c1 is sent a tool result pruned before it (sent as its placeholder) and the output of
    call c0 (already in c0's carry); call c2 is sent nothing new."""
    session = Session(uid, "test", uid, "/x", "test")
    c = [f"{uid}:c{k}" for k in range(3)]
    parts = [
        Part(f"{uid}:u0", uid, 0, "user", "user_text", "start the task please"),
        Part(f"{uid}:a0", uid, 1, "assistant", "tool_call", CODE, call_uid=c[0]),
        Part(
            f"{uid}:t0",
            uid,
            2,
            "tool",
            "tool_result",
            LOG_TEXT,
            pruned_at=T0 + timedelta(seconds=30),
            pruned_text="[pruned]",
        ),
        Part(f"{uid}:a1", uid, 3, "assistant", "assistant_text", "done", call_uid=c[1]),
    ]
    ends = [1, 3, 4]
    calls = [
        Call(
            c[k], uid, k, 0, ends[k], "ok", "openai", ts=T0 + timedelta(minutes=k), input=100 + k, ctx=100 + k
        )
        for k in range(3)
    ]
    return ParsedSession(session, calls, parts)


def test_appended_content_counts_parts_as_sent_and_not_the_previous_output(store: Store) -> None:
    store.write([_pruned_session()])
    rows = {r["call_uid"]: r for r in appended_content(store).to_dicts()}
    assert set(rows) == {"t:pruned:c1", "t:pruned:c2"}  # c0 has no predecessor
    assert rows["t:pruned:c1"]["content_kind"] == "tool_output"
    assert rows["t:pruned:c1"]["chars_tool_output"] == len("[pruned]")
    assert sum(rows["t:pruned:c1"][f"chars_{k}"] for k in CONTENT_KINDS) == len("[pruned]")
    assert rows["t:pruned:c2"]["content_kind"] == EMPTY_KIND


def test_appended_content_of_an_empty_store(store: Store) -> None:
    frame = appended_content(store)
    assert frame.is_empty()
    assert frame.columns == ["call_uid", "content_kind", *(f"chars_{k}" for k in CONTENT_KINDS)]


def test_cjk_prose_and_code_texts_are_told_apart() -> None:
    assert [content_kind(t) for t in (CJK_TEXT, PROSE_TEXT, CODE)] == ["cjk", "prose", "code"]
