"""Generate → write in each agent's layout → `calib.ingest.pipeline` → the store holds exactly what was generated."""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from calib.ingest.pipeline import ingest
from calib.store.store import Store
from calib.synth import WRITERS, SynthSession, write_sample
from calib.synth.generate import LAYOUT_EVENTS, flatten

IMPORTERS = {
    "gemini-cli": "calib.importers.gemini_cli",
    "opencode": "calib.importers.opencode",
    "dexto": "calib.importers.dexto",
    "claude-code": "calib.importers.claude_code",
    "codex": "calib.importers.codex",
    "qwen-code": "calib.importers.qwen_code",
    "llxprt": "calib.importers.llxprt",
    "cline": "calib.importers.cline",
    "roo-code": "calib.importers.roo_code",
}
CASES = [(tool, layout) for tool, layouts in LAYOUT_EVENTS.items() for layout in layouts]
SESSIONS = 6
# Layouts whose recorded usage holds no cache or reasoning breakdown (llxprt-code's recording alone:
# prompt, completion and total only); their calls store none.
UNSPLIT = {"llxprt-chats"}


def _require(tool: str, layout: str) -> None:
    for module in (WRITERS[tool], IMPORTERS[tool]):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not present yet, so {tool} cannot round-trip")
    layouts = importlib.import_module(WRITERS[tool]).LAYOUTS
    if layout not in layouts:
        pytest.skip(f"the {tool} writer does not write {layout} (it writes {', '.join(layouts)})")


def _ingest(tmp_path: Path, tool: str, layout: str, seed: int) -> tuple[list[SynthSession], Store]:
    from calib.synth import generate

    result = write_sample(tool, tmp_path / "data", layout=layout, sessions=SESSIONS, seed=seed)
    store = Store(tmp_path / "calib.duckdb")
    outcome = ingest([tmp_path / "data"], store=store)
    assert outcome.ok, [str(e) for e in outcome.errors]
    assert str(result.truth) in outcome.skipped  # the truth file is never taken for a session
    return generate(tool, sessions=SESSIONS, seed=seed, layout=layout), store


def _naive(ts: datetime | None) -> datetime | None:
    return ts.replace(tzinfo=None) if ts is not None and ts.tzinfo is not None else ts


def _sent(row: dict[str, Any], at: datetime) -> str:
    pruned_at = _naive(row["pruned_at"])
    if pruned_at is not None and row["pruned_text"] is not None and pruned_at <= at:
        return str(row["pruned_text"])
    return str(row["text"])


@pytest.mark.parametrize(("tool", "layout"), [c for c in CASES if c[1] != "dexto-db-legacy"])
def test_store_holds_exactly_the_generated_calls_and_parts(tmp_path: Path, tool: str, layout: str) -> None:
    _require(tool, layout)
    seed = 100 + CASES.index((tool, layout))
    sessions, store = _ingest(tmp_path, tool, layout, seed)
    events = LAYOUT_EVENTS[tool][layout]
    with store:
        stored = store.sessions()
        calls = store.calls()
        parts = store.parts()
    assert stored.height == len(sessions)
    assert calls.height == sum(len(s.steps()) for s in sessions)
    for session in sessions:
        match = stored.filter(pl.col("native_id") == session.id)
        assert match.height == 1, session.id
        uid = match["session_uid"][0]
        srows = calls.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        prows = parts.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        truth = session.truth["calls"]
        assert len(srows) == len(truth)
        flat_parts, flat_calls = flatten(session, events, session.truth["reasoning"])
        for row, rec, fc in zip(srows, truth, flat_calls, strict=True):
            step = fc.step
            assert (row["provider"], row["model"]) == (session.provider, session.model)
            assert _naive(row["ts"]) == step.ts
            if step.usage is None:
                assert row["usage_status"] == "missing" and row["ctx"] is None
            else:
                usage = step.usage
                assert row["usage_status"] == "ok"
                assert (row["ctx"], row["carry"]) == (usage.ctx, rec["carry"]) == (rec["ctx"], rec["carry"])
                assert row["cache_read"] == (None if layout in UNSPLIT else usage.cache_read)
                if row["usage_style"] == "anthropic":
                    assert (row["input"], row["cache_write"]) == (usage.uncached, usage.cache_write)
                else:
                    assert row["input"] == usage.ctx
                if layout in UNSPLIT:  # the output as the provider counted it, reasoning not apart
                    folded = usage.reasoning if row["usage_style"] == "openai" else 0
                    assert (row["output"], row["reasoning"]) == (usage.output + folded, None)
                elif row["usage_style"] == "openai":  # OpenAI's output count includes the reasoning
                    assert row["output"] == usage.output + usage.reasoning
                    # Anthropic reports no thinking count apart (llxprt-code's token-usage log has none)
                    unreported = row["reasoning"] is None and session.provider == "anthropic"
                    assert row["reasoning"] == (None if unreported else usage.reasoning)
                else:
                    assert (row["output"] or 0) + (row["reasoning"] or 0) == usage.output + usage.reasoning
            if rec["delta"] is not None:
                assert row["delta"] == rec["delta"]
            # What the call was sent, and what it produced, as texts.
            prompt = prows[row["prompt_start"] : row["prompt_end"]]
            assert [p["seq"] for p in prompt] == list(range(row["prompt_start"], row["prompt_end"]))
            got = Counter((p["kind"], _sent(p, step.ts)) for p in prompt if p["resent"])
            want = Counter(
                (p.kind, p.sent(step.ts)) for p in flat_parts[fc.prompt_start : fc.prompt_end] if p.resent
            )
            assert got == want, (session.id, row["seq"])
            assert sum(1 for p in prompt if p["call_uid"] is None) == rec["prompt_messages"]
            produced = Counter((p["kind"], p["text"]) for p in prows if p["call_uid"] == row["call_uid"])
            assert produced == Counter((p.kind, p.text) for p in flat_parts if p.call == fc.index)
        for use in (u for step in session.steps() for u in step.tools if u.pruned):
            hits = [p for p in prows if p["kind"] == "tool_result" and p["text"] == use.output]
            assert hits and all(_naive(p["pruned_at"]) == use.pruned_at for p in hits)
            assert all(p["pruned_text"] == events.placeholder for p in hits)


def test_dexto_legacy_layout_keeps_turn_sums_flagged(tmp_path: Path) -> None:
    _require("dexto", "dexto-db-legacy")
    sessions, store = _ingest(tmp_path, "dexto", "dexto-db-legacy", seed=7)
    with store:
        stored = store.sessions()
        calls = store.calls()
    for session in sessions:
        uid = stored.filter(pl.col("native_id") == session.id)["session_uid"][0]
        rows = calls.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        assert len(rows) == len(session.steps())
        k = 0
        for turn in session.turns:
            turn_rows = rows[k : k + len(turn.steps)]
            k += len(turn.steps)
            usages = [s.usage for s in turn.steps if s.usage is not None]
            last = turn_rows[-1]
            assert all(r["usage_status"] == "missing" for r in turn_rows[:-1])
            if not usages:
                assert last["usage_status"] == "missing"
            elif len(turn.steps) > 1:
                assert last["usage_status"] == "turn_summed"
            else:
                assert last["usage_status"] in ("ok", "suspect")
            if usages and session.provider != "anthropic":
                # Dexto <= 1.3 summed the whole prompt of every call of the turn.
                assert last["input"] == sum(u.ctx for u in usages)


def test_dexto_log_estimates_pair_with_the_true_context(tmp_path: Path) -> None:
    _require("dexto", "dexto-log")
    sessions, store = _ingest(tmp_path, "dexto", "dexto-log", seed=8)
    with store:
        actual = sorted(store.agent_estimates()["actual"].to_list())
    assert actual == sorted(s.usage.ctx for session in sessions for s in session.steps() if s.usage)


SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample"


def _sample_truths() -> list[Path]:
    return sorted(SAMPLE.glob("*/truth.json")) if SAMPLE.is_dir() else []


@pytest.mark.parametrize("truth_path", _sample_truths(), ids=lambda p: p.parent.name)
def test_bundled_sample_is_what_its_command_generates_and_ingests_exactly(
    truth_path: Path, tmp_path: Path
) -> None:
    from calib.synth import generate, truth_document

    doc = json.loads(truth_path.read_text(encoding="utf-8"))
    tool, layout, seed, n = doc["tool"], doc["layout"], doc["seed"], doc["sessions"]
    _require(tool, layout)
    # The committed truth is what `calib sample` with the documented seed makes today.
    regenerated = truth_document(
        generate(tool, sessions=n, seed=seed, layout=layout), tool=tool, layout=layout, seed=seed
    )
    assert json.loads(json.dumps(regenerated)) == doc, "run `make sample` to regenerate datasets/sample"
    # And the committed files ingest into exactly those calls.
    with Store(tmp_path / "calib.duckdb") as store:
        outcome = ingest([truth_path.parent], store=store)
        assert outcome.ok, [str(e) for e in outcome.errors]
        calls = store.calls()
        sessions = store.sessions()
    for session in doc["session_truth"]:
        uid = sessions.filter(pl.col("native_id") == session["id"])["session_uid"][0]
        rows = calls.filter(pl.col("session_uid") == uid).sort("seq").to_dicts()
        assert len(rows) == len(session["calls"])
        for row, rec in zip(rows, session["calls"], strict=True):
            if rec["reported"]:
                assert (row["ctx"], row["carry"], row["cache_read"]) == (
                    rec["ctx"],
                    rec["carry"],
                    rec["cache_read"],
                )
            else:
                assert row["usage_status"] == "missing"
            if rec["delta"] is not None:
                assert row["delta"] == rec["delta"]
