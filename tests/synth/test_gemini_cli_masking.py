"""The gemini-cli writer's masking (v0.29-v0.38): opt-in, with the files gemini-cli keeps and a truth in
which the calls before a masking batch count the full output; without it, output is byte for byte
what it was (the bundled sample)."""

from __future__ import annotations

import filecmp
import json
import os
from pathlib import Path

import pytest

from calib.core.errors import UsageError
from calib.estimators import get_estimator
from calib.synth import generate, write_sample
from calib.synth._common import epoch_ms, iso_ms
from calib.synth.gemini_cli import (
    MASKING_TRUTH,
    mask_tool_outputs,
    masked_sessions,
    write,
)
from calib.synth.rules import rule_for, scaled

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"
SEED = 33


@pytest.mark.parametrize(
    ("folder", "layout", "sessions", "seed"),
    [("gemini-cli-json", "gemini-json-parts", 6, 102), ("gemini-cli-jsonl", "gemini-jsonl", 8, 101)],
)
def test_without_masking_the_writer_writes_the_bundled_sample_byte_for_byte(
    tmp_path: Path, folder: str, layout: str, sessions: int, seed: int
) -> None:
    bundled = SAMPLE / folder
    if not bundled.is_dir():
        pytest.skip("no bundled sample")
    write_sample("gemini-cli", tmp_path, layout=layout, sessions=sessions, seed=seed)
    mine = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    theirs = sorted(p.relative_to(bundled) for p in bundled.rglob("*") if p.is_file())
    assert mine == theirs
    _, mismatch, errors = filecmp.cmpfiles(tmp_path, bundled, [str(p) for p in mine], shallow=False)
    assert (mismatch, errors) == ([], [])
    assert not any("tool-outputs" in str(p) for p in mine)


def test_generated_sessions_are_never_masked_unless_asked() -> None:
    for session in generate("gemini-cli", sessions=6, seed=SEED, layout="gemini-json-parts"):
        assert MASKING_TRUTH not in session.truth
        assert not any(use.pruned for step in session.steps() for use in step.tools)


def test_masking_is_deterministic_and_happens_once() -> None:
    one, two = masked_sessions(6, SEED), masked_sessions(6, SEED)
    assert [s.truth for s in one] == [s.truth for s in two]
    assert any(s.truth.get(MASKING_TRUTH) for s in one)
    assert all(mask_tool_outputs(s) == 0 for s in one)  # already masked: left as it is


def _tokens(session_truth: dict, text: str, rule_milli: int) -> int:
    return scaled(rule_milli, get_estimator(session_truth["base"]).count(text))


def test_calls_before_a_batch_count_the_full_output_and_the_others_its_placeholder() -> None:
    masked = masked_sessions(6, SEED)
    plain = generate("gemini-cli", sessions=6, seed=SEED, layout="gemini-json-parts")
    batches = 0
    for m, p in zip(masked, plain, strict=True):
        entries = m.truth.get(MASKING_TRUTH) or []
        milli = rule_for(m.provider, m.model).ratio_milli
        outputs = {use.call_id: use.output for step in m.steps() for use in step.tools}
        saved = {
            e["call_id"]: _tokens(m.truth, e["placeholder"], milli)
            - _tokens(m.truth, outputs[e["call_id"]], milli)
            for e in entries
        }
        for k, (mine, theirs) in enumerate(zip(m.truth["calls"], p.truth["calls"], strict=True)):
            expected = sum(saved[e["call_id"]] for e in entries if e["masked_before_call"] <= k)
            assert mine["ctx"] - theirs["ctx"] == expected, (m.id, k)
            if any(e["masked_before_call"] == k for e in entries):
                assert mine["break"] == "prune"
                batches += 1
        for e in entries:
            assert 2 <= e["masked_before_call"] < len(m.steps())
            assert e["placeholder"].startswith("<tool_output_masked>\n")
            assert e["placeholder"].endswith(f"/{e['file']}\n</tool_output_masked>")
    assert batches >= 4


def test_masked_sessions_write_the_placeholder_and_the_file(tmp_path: Path) -> None:
    sessions = masked_sessions(6, SEED)
    paths = write(sessions, tmp_path, "gemini-json-parts")
    checked = 0
    for session, path in zip(sessions, paths, strict=True):
        record = json.loads(path.read_text(encoding="utf-8"))
        calls = {tc["id"]: tc for m in record["messages"] for tc in m.get("toolCalls") or []}
        outputs = {use.call_id: use for step in session.steps() for use in step.tools}
        entries = session.truth.get(MASKING_TRUTH) or []
        for entry in entries:
            call = calls[entry["call_id"]]
            response = call["result"][0]["functionResponse"]["response"]
            assert response == {"output": entry["placeholder"]}
            assert call["resultDisplay"] == outputs[entry["call_id"]].output  # the UI kept the full text
            saved = path.parent.parent / entry["file"]
            assert json.loads(saved.read_text(encoding="utf-8")) == {
                "output": outputs[entry["call_id"]].output
            }
            assert saved.read_text(encoding="utf-8").startswith('{\n  "output": ')
            at = outputs[entry["call_id"]].pruned_at
            assert at is not None and entry["masked_at"] == iso_ms(at)
            assert os.stat(saved).st_mtime_ns // 1_000_000 == epoch_ms(at)  # dated when it was masked
            # the recorded path is the recording machine's: the project's home, never this folder
            assert str(tmp_path) not in entry["placeholder"]
            assert f"/.gemini/tmp/{path.parent.parent.name}/{entry['file']}" in entry["placeholder"]
            checked += 1
        masked_ids = {e["call_id"] for e in entries}
        for call_id, call in calls.items():
            if call_id not in masked_ids:
                assert call["result"][0]["functionResponse"]["response"] == {
                    "output": outputs[call_id].output
                }
    assert checked >= 6


def test_masked_sessions_are_written_only_where_gemini_cli_recorded_masking(tmp_path: Path) -> None:
    sessions = [s for s in masked_sessions(6, SEED) if s.truth.get(MASKING_TRUTH)]
    for layout in ("gemini-jsonl", "gemini-json-string"):
        with pytest.raises(UsageError, match="gemini-json-parts"):
            write(sessions, tmp_path / layout, layout)
