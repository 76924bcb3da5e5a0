from __future__ import annotations

import json
import random
import re
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

from calib.analysis.content import (
    CONTENT_KINDS,
    EMPTY_KIND,
    ContentKinds,
    appended_content,
    content_kind,
)
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
        # each way a line looks like code, alone: its end, its start, its first word
        ("Steps:\nfirst one:\nthen the second:", "user_text", "code"),
        ("f(a)\u3000\ng(b)\t\nh(c)", "user_text", "code"),
        ("] one\n  } two\n) three", "user_text", "code"),
        ("Return it\nIMPORT this\nfrom there", "user_text", "code"),
        ("alpha:\nbeta\ngamma\ndelta", "user_text", "prose"),  # 1 line in 4 is under 40%
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


# A line that looks like code, as one regex searched anywhere in the line (the module's rule, written
# the slow, literal way).
_CODE_LINE = re.compile(
    r"""^\s*(?:
        (?:def|class|import|from|return|if|elif|else|for|while|try|except|finally|with|async|await|
           func|fn|let|const|var|function|package|pub|use|struct|impl|interface|type|export|enum|
           public|private|protected|static|switch|case|match|raise|throw|yield|select|insert|update|
           create|alter|drop)\b
      | (?:\#include|\#!|//|/\*|\*/|--\s|@\w)
      | (?:\d{1,6}[:|]\s?)
    )
    | [{};):]\s*$
    | ^\s*[}\])]
    """,
    re.VERBOSE | re.IGNORECASE,
)


def _kind_by_the_rules(text: str, part_kind: str = "user_text") -> str:
    """The module docstring's rules, written out without shortcuts."""
    tool = part_kind in ("tool_result", "file")
    if not text:
        return "tool_output" if tool else "prose"
    visible = len(text) - len(re.findall(r"\s", text))
    cjk = re.findall(
        r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]", text
    )
    if visible and len(cjk) >= 0.1 * visible:
        return "cjk"
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped[-1:] in "}]":
        try:
            json.loads(stripped)
            return "json"
        except ValueError:
            pass
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 3 and sum(1 for line in lines if _CODE_LINE.search(line)) >= 0.4 * len(lines):
        return "code"
    return "tool_output" if tool else "prose"


def test_content_kind_decides_as_the_rules_on_mixed_texts() -> None:
    # ASCII texts skip the CJK count and code is decided as soon as the count of code lines tells:
    # the kinds are those of the rules applied in full
    rng = random.Random(7)
    pieces = [CODE, LOG_TEXT, PROSE_TEXT, JSON_TEXT, CJK_TEXT, "x = 1;", "", "\u00a0\u2003", "é" * 5, "中"]
    # line ends and starts around whitespace of every kind, which the rule strips as `\s` does
    pieces += [
        "f(x)\u3000",
        "  }\t",
        "\u2003] a",
        "a {\x1c",
        "b ;\x85c",
        "@x",
        "-- note",
        "12| y",
        "Def g",
        "Steps:",
        "] x",
    ]
    for _ in range(400):
        text = "\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        for part_kind in ("user_text", "tool_result"):
            assert content_kind(text, part_kind) == _kind_by_the_rules(text, part_kind), text


def test_content_of_some_sessions_is_that_of_the_store(store: Store) -> None:
    store.write([kinds_session("t:a"), kinds_session("t:b"), _pruned_session("t:c"), kinds_session("t:d")])
    everything = appended_content(store)
    with ContentKinds(store) as kinds:
        middle = kinds.for_sessions("t:b", "t:c").sort("call_uid")
    expected = everything.filter(
        pl.col("call_uid").str.starts_with("t:b") | pl.col("call_uid").str.starts_with("t:c")
    )
    # a call with nothing appended has no row (the report reads it as empty, with 0 characters)
    assert middle.equals(expected.filter(pl.col("content_kind") != EMPTY_KIND).sort("call_uid"))
    assert set(expected.filter(pl.col("content_kind") == EMPTY_KIND)["call_uid"]) == {"t:c:c2"}
