"""The synthetic-session generator: determinism, the usage arithmetic, variety, and `calib sample`."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from calib.cli.app import app
from calib.core.errors import UsageError
from calib.estimators import get_estimator
from calib.synth import SynthSession, generate, write_sample
from calib.synth.generate import LAYOUT_EVENTS, MODELS

CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")


def _plain(sessions: list[SynthSession]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(s) for s in sessions]


def test_same_seed_same_sessions() -> None:
    assert _plain(generate("opencode", sessions=5, seed=7)) == _plain(
        generate("opencode", sessions=5, seed=7)
    )


def test_different_seeds_differ() -> None:
    a = generate("dexto", sessions=3, seed=1)
    b = generate("dexto", sessions=3, seed=2)
    assert [s.id for s in a] != [s.id for s in b]
    assert [t.user_text for s in a for t in s.turns] != [t.user_text for s in b for t in s.turns]


def test_session_does_not_depend_on_how_many_are_generated() -> None:
    few = generate("gemini-cli", sessions=2, seed=5)
    many = generate("gemini-cli", sessions=6, seed=5)
    assert _plain(few) == _plain(many[:2])


def test_layouts_share_the_conversation_and_differ_only_in_events() -> None:
    jsonl = generate("gemini-cli", sessions=12, seed=3, layout="gemini-jsonl")
    legacy = generate("gemini-cli", sessions=12, seed=3, layout="gemini-json-parts")
    assert [t.user_text for s in jsonl for t in s.turns] == [t.user_text for s in legacy for t in s.turns]
    assert any(step.compacted for s in jsonl for step in s.steps())
    # The legacy record cannot show a compression, so the generator makes none for it.
    assert not any(step.compacted for s in legacy for step in s.steps())


def test_layouts_without_pruning_get_none() -> None:
    for tool, layouts in LAYOUT_EVENTS.items():
        for layout, events in layouts.items():
            sessions = generate(tool, sessions=10, seed=4, layout=layout)
            pruned = [u for s in sessions for step in s.steps() for u in step.tools if u.pruned]
            assert bool(pruned) <= events.prune, (tool, layout)


def _tokens(text: str, truth: dict[str, Any]) -> int:
    base = get_estimator(truth["base"]).count(text)
    return (round(truth["ratio"] * 1000) * base + 500) // 1000


def _recompute(session: SynthSession) -> list[dict[str, int | bool]]:
    """ctx, carry and the delta parts of every call, rebuilt from the texts with the base tokenizer.

    This is written from the definitions in calib.synth.generate's docstring, independently of its code.
    """
    truth = session.truth
    overhead = truth["per_message_overhead"]
    resend_reasoning = truth["reasoning"] == "resent"
    # The prompt as a list of (text at a given time, is an input message).
    history: list[tuple[Any, bool]] = []
    out: list[dict[str, int | bool]] = []
    prompt_end = 0  # length of the previous call's prompt: what follows it was appended
    for turn in session.turns:
        for index, step in enumerate(turn.steps):
            if step.compacted:
                history = []
                if truth["compaction_prompt"]:
                    history.append((truth["compaction_prompt"], True))
                history.append((step.summary, True))
                prompt_end = 0
            if index == 0:
                history.append((turn.user_text, True))

            def sent(item: Any, at: datetime) -> str:
                return item(at) if callable(item) else item

            texts = [(sent(t, step.ts), is_msg) for t, is_msg in history]
            ctx = truth["static_overhead"] + sum(_tokens(t, truth) for t, _ in texts)
            ctx += overhead * sum(1 for _, is_msg in texts if is_msg)
            new = texts[prompt_end:] if out else []
            prompt_end = len(texts)
            out.append(
                {"ctx": ctx, "appended": sum(_tokens(t, truth) + overhead for t, is_msg in new if is_msg)}
            )
            output = [step.text] if step.text else []
            output += [u.args_json for u in step.tools]
            out[-1]["output"] = sum(_tokens(t, truth) for t in output)
            carry = out[-1]["output"]
            if step.reasoning and resend_reasoning:
                carry += _tokens(step.reasoning, truth)
                history.append((step.reasoning, False))
            out[-1]["carry"] = carry
            history += [(t, False) for t in output]
            for use in step.tools:
                if use.pruned and use.pruned_at is not None:
                    placeholder = truth["pruned_placeholder"]

                    def text_at(at: datetime, use: Any = use, placeholder: str = placeholder) -> str:
                        return placeholder if use.pruned_at <= at else use.output

                    history.append((text_at, True))
                else:
                    history.append((use.output, True))
    return out


@pytest.mark.parametrize(
    ("tool", "layout"),
    [
        ("gemini-cli", "gemini-jsonl"),
        ("opencode", "opencode-db"),
        ("dexto", "dexto-db"),
        ("qwen-code", "qwen-code-jsonl"),
        ("llxprt", "llxprt-chats-usage"),
        ("cline", "cline-task"),
        ("roo-code", "roo-code-task"),
    ],
)
def test_usage_follows_the_rule_and_the_delta_identity_holds(tool: str, layout: str) -> None:
    sessions = generate(tool, sessions=12, seed=11, layout=layout)
    checked = 0
    for session in sessions:
        expected = _recompute(session)
        steps = session.steps()
        truth_calls = session.truth["calls"]
        assert len(expected) == len(steps) == len(truth_calls)
        for k, (step, exp, rec) in enumerate(zip(steps, expected, truth_calls, strict=True)):
            assert rec["ctx"] == exp["ctx"], (session.id, k)
            assert rec["carry"] == exp["carry"]
            if step.usage is None:
                assert not rec["reported"]
                continue
            usage = step.usage
            assert usage.ctx == exp["ctx"]
            assert usage.output == exp["output"]
            assert 0 <= usage.cache_read + usage.cache_write <= usage.ctx
            if session.provider == "anthropic":
                assert usage.uncached >= 1  # Dexto flags Anthropic usage with 0 uncached input as suspect
            if k == 0 or rec["break"] is not None:
                continue
            prev = steps[k - 1].usage
            assert prev is not None
            delta = usage.ctx - prev.ctx - expected[k - 1]["carry"]
            assert (
                delta
                == exp["appended"]
                == rec["appended_tokens"] + session.truth["per_message_overhead"] * rec["appended_messages"]
            )
            assert rec["delta"] == delta
            checked += 1
    assert checked > 50


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def test_a_twenty_session_run_has_variety() -> None:
    sessions = generate("opencode", sessions=20, seed=1) + generate("dexto", sessions=20, seed=1)
    users = [t.user_text for s in sessions for t in s.turns]
    outputs = [u.output for s in sessions for step in s.steps() for u in step.tools]
    steps = [step for s in sessions for step in s.steps()]
    assert any(CJK.search(u) for u in users)
    assert any(CJK.search(u) and re.search(r"[A-Za-z]{4}", u) for u in users)  # mixed-language prompts
    assert sum(1 for u in users if not CJK.search(u)) > len(users) / 2  # mostly English
    assert sum(1 for text in outputs if _is_json(text)) > 10
    assert any(u.is_error for step in steps for u in step.tools)
    assert any("diff --git" in o for o in outputs)
    assert any(re.search(r"^\s*(def|func|fn|export function) ", o, re.M) for o in outputs)  # code
    # Multi-step tool loops: turns with at least three tool-calling steps before the answer.
    assert any(sum(1 for step in t.steps if step.tools) >= 3 for s in sessions for t in s.turns)
    assert any(len(step.tools) >= 2 for step in steps)  # parallel calls
    assert any(step.reasoning for step in steps)
    for tool_sessions in (sessions[:20], sessions[20:]):
        assert any(step.compacted and step.summary for s in tool_sessions for step in s.steps())
        assert any(u.pruned and u.pruned_at for s in tool_sessions for step in s.steps() for u in step.tools)
        assert len({(s.provider, s.model) for s in tool_sessions}) >= 3
    assert any(step.usage is None for step in steps)
    assert len({s.truth["language_of_project"] for s in sessions}) >= 3
    assert {s.provider for s in generate("gemini-cli", sessions=6, seed=1)} == {"google"}


def test_models_come_from_the_tool_catalogue() -> None:
    for tool, models in MODELS.items():
        known = {(p, m) for p, m, _ in models}
        assert {(s.provider, s.model) for s in generate(tool, sessions=10, seed=2)} <= known


def test_bad_arguments_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown tool"):
        generate("cursor", sessions=1, seed=0)
    with pytest.raises(UsageError, match="opencode-db"):
        generate("opencode", sessions=1, seed=0, layout="nope")
    with pytest.raises(UsageError, match="at least 1"):
        generate("dexto", sessions=0, seed=0)


def test_write_sample_puts_canonical_truth_beside_the_data(tmp_path: Path) -> None:
    result = write_sample("dexto", tmp_path / "s", sessions=2, seed=9)
    text = result.truth.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert text == json.dumps(doc, sort_keys=True, ensure_ascii=False, indent=1) + "\n"
    assert doc["synthetic"] is True and doc["tool"] == "dexto" and doc["layout"] == "dexto-db"
    assert doc["calls"] == result.calls == sum(len(s["calls"]) for s in doc["session_truth"])
    assert result.truth.parent == tmp_path / "s"
    assert all(p.exists() for p in result.files)
    again = write_sample("dexto", tmp_path / "t", sessions=2, seed=9)
    assert again.truth.read_text(encoding="utf-8") == text
    with pytest.raises(UsageError, match="not empty"):
        write_sample("dexto", tmp_path / "s", sessions=1, seed=9)


def test_cli_sample_prints_one_json_document(tmp_path: Path) -> None:
    out = tmp_path / "gem"
    result = CliRunner().invoke(
        app,
        [
            "sample",
            "--tool",
            "gemini-cli",
            "--layout",
            "gemini-json-parts",
            "--sessions",
            "2",
            "--seed",
            "4",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["layout"] == "gemini-json-parts" and doc["sessions"] == 2 and doc["truth"] == "truth.json"
    assert (out / "truth.json").exists()
    assert all((out / f).exists() for f in doc["files"])
    bad = CliRunner().invoke(app, ["sample", "--tool", "nope", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2
