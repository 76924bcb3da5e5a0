"""The record contract: defaults of sessions, calls and parts, and what an importer may yield."""

from __future__ import annotations

from typing import get_args

import pytest

from calib.core.errors import InputWarning
from calib.core.records import (
    PART_KINDS,
    ROLES,
    AgentEstimate,
    Call,
    ParsedSession,
    Part,
    Record,
    Session,
    UsageStatus,
    UsageStyle,
)


def _session() -> Session:
    return Session(uid="t:1", tool="t", native_id="1", source_path="/s", layout="t-json")


def test_session_defaults_describe_a_top_level_session_with_nothing_known() -> None:
    s = _session()
    assert (s.project, s.title, s.started_at, s.ended_at, s.meta) == (None, None, None, None, None)
    assert s.parent_uid is None and s.is_subagent is False


def test_call_defaults_hold_no_usage() -> None:
    c = Call(
        uid="c",
        session_uid="t:1",
        seq=0,
        prompt_start=0,
        prompt_end=2,
        usage_status="missing",
        usage_style="gemini",
    )
    usage = (c.input, c.output, c.reasoning, c.cache_read, c.cache_write, c.tool_prompt, c.total)
    assert usage == (None,) * 7
    assert (c.ctx, c.carry, c.usage_raw, c.provider, c.model, c.error, c.finish) == (None,) * 7


def test_part_defaults_are_resent_and_unpruned() -> None:
    p = Part(uid="p", session_uid="t:1", seq=0, role="user", kind="user_text", text="hi")
    assert p.resent is True
    assert (p.call_uid, p.pruned_at, p.pruned_text, p.tool_name, p.message_id) == (None,) * 5


def test_parsed_session_lists_are_not_shared() -> None:
    a, b = ParsedSession(_session()), ParsedSession(_session())
    a.calls.append(Call("c", "t:1", 0, 0, 0, "ok", "gemini"))
    a.parts.append(Part("p", "t:1", 0, "user", "user_text", "x"))
    assert b.calls == [] and b.parts == []
    assert a != b and ParsedSession(_session()) == b


def test_records_use_slots_so_a_misspelt_field_fails() -> None:
    p = Part("p", "t:1", 0, "user", "user_text", "x")
    with pytest.raises(AttributeError):
        p.call = "c"  # type: ignore[attr-defined]


def test_record_union_is_sessions_agent_estimates_and_warnings() -> None:
    assert set(get_args(Record)) == {ParsedSession, AgentEstimate, InputWarning}
    est = AgentEstimate(session_uid=None, source_path="/l.log", line=3, estimated=90, actual=100)
    assert isinstance(est, Record) and isinstance(ParsedSession(_session()), Record)
    assert not isinstance(_session(), Record)
    assert est.ts is None and est.agent is None


def test_vocabularies() -> None:
    assert set(get_args(UsageStatus)) == {"ok", "missing", "turn_summed", "suspect", "invalid"}
    assert set(get_args(UsageStyle)) == {"gemini", "anthropic", "openai"}
    assert {"user_text", "assistant_text", "reasoning", "tool_call", "tool_result", "summary"} <= set(
        PART_KINDS
    )
    assert len(set(PART_KINDS)) == len(PART_KINDS)
    assert set(ROLES) == {"user", "assistant", "tool", "system"}
