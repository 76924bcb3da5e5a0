"""The static overhead (system prompt and tool schemas, which no agent but Codex stores) is fitted per
provider, model and agent, and recovered on synthetic sessions whose overhead is known.

`calib.synth` draws each session's overhead around its agent's system prompt size (scaled by the
provider's ratio, plus a per-session environment block); the fit sees only the logs and the usage.
"""

from __future__ import annotations

import json
import statistics

import polars as pl
import pytest

from calib.calibration.fit import Calibrator
from calib.estimators import get_estimator
from calib.ingest.pipeline import ingest
from calib.runtime import Calibration
from calib.scoring.chain import features
from calib.scoring.score import score_frame, summarise
from calib.store.store import Store
from calib.synth import write_sample
from calib.synth.rules import rule_for

TOOLS = ("gemini-cli", "opencode", "dexto", "claude-code", "codex")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Calibrator, dict, Store]:
    root = tmp_path_factory.mktemp("overhead")
    truth: dict[tuple[str, str, str], list[int]] = {}
    for i, tool in enumerate(TOOLS):
        sample = write_sample(tool, root / tool, sessions=16, seed=300 + i)
        for s in json.loads(sample.truth.read_text(encoding="utf-8"))["session_truth"]:
            truth.setdefault((s["provider"], s["model"], tool), []).append(s["static_overhead"])
    store = Store(root / "calib.duckdb")
    outcome = ingest([root / tool for tool in TOOLS], store=store)
    assert outcome.ok, [str(e) for e in outcome.errors]
    calibrator = Calibrator(holdout_fraction=0.0)
    frame = features(store, calibrator.sources, holdout_fraction=0.0)
    calibrator.fit(frame)
    return calibrator, truth, store


def _stored_system_prompts(store: Store, tool: str) -> list[str]:
    """The system prompts an agent stores (Codex's base instructions), one per session."""
    rows = store.con.execute(
        "SELECT p.text FROM parts p JOIN sessions s USING (session_uid) "
        "WHERE s.tool = ? AND p.kind = 'system' AND p.seq = 0 ORDER BY s.session_uid",
        [tool],
    ).fetchall()
    return [text for (text,) in rows]


def test_fitted_overhead_lands_within_two_percent_of_the_system_prompt(fitted: tuple) -> None:
    calibrator, truth, store = fitted
    runtime = Calibration(calibrator.to_config())
    tokenizer = get_estimator("tiktoken:o200k_base")
    checked = 0
    for (provider, model, tool), statics in sorted(truth.items()):
        if len(statics) < 3:
            continue  # one or two sessions: their own environment blocks decide, not the agent
        expected = statistics.median(statics)
        got = runtime.static_overhead(provider, model, tool)
        # Codex stores its system prompt, so the overhead left to fit is its tool schemas alone; the
        # system prompt the model saw is that plus the stored prompt, counted by the calibration the
        # way an agent would count it (the truth counted it with o200k times the provider's ratio)
        prompts = _stored_system_prompts(store, tool)
        if prompts:
            ratio = rule_for(provider, model).ratio
            expected += statistics.median(ratio * tokenizer.count(p) for p in prompts)
            got += statistics.median(runtime.count(p, provider, model, kind="system") for p in prompts)
        assert abs(got - expected) <= 0.02 * expected, (provider, model, tool, got, expected)
        checked += 1
    assert checked >= len(TOOLS)


def test_the_overhead_is_the_agents_not_the_providers(fitted: tuple) -> None:
    # Claude Code's system prompt is about four times Codex's and three times Dexto's: one figure per
    # provider cannot be right for every agent using it, so each agent gets its own.
    calibrator, truth, _ = fitted
    runtime = Calibration(calibrator.to_config())
    per_provider: dict[str, dict[str, list[int]]] = {}
    for (provider, _model, tool), statics in truth.items():
        if tool != "codex":  # Codex stores its system prompt: what is left to fit is not comparable
            per_provider.setdefault(provider, {}).setdefault(tool, []).extend(statics)
    compared = 0
    for provider, tools in per_provider.items():
        if len(tools) < 2:
            continue
        pooled = runtime.static_overhead(provider, None)
        for tool, statics in tools.items():
            expected = statistics.median(statics)
            own = runtime.static_overhead(provider, None, tool)
            assert abs(own - expected) < abs(pooled - expected) or abs(own - expected) <= 0.02 * expected
        spread = [statistics.median(v) for v in tools.values()]
        assert max(spread) > 1.5 * min(spread)  # the pooled figure is far from one of them
        compared += 1
    assert compared >= 1


def test_whole_prompt_estimates_beat_length_over_four_with_no_overhead(fitted: tuple) -> None:
    calibrator, _, store = fitted
    frame = features(store, sorted({*calibrator.sources, "chars4"}), holdout_fraction=0.0)
    summary = summarise(score_frame(frame, "chars4").vstack(score_frame(frame, "calibrated", calibrator)))
    full = {
        (r["estimator"], r["provider"], r["model"]): r["full_err_p50"]
        for r in summary.to_dicts()
        if r["full_calls"]
    }
    for (estimator, provider, model), err in full.items():
        if estimator != "calibrated":
            continue
        naive = full[("chars4", provider, model)]
        assert err * 5 <= naive, (provider, model, err, naive)


def test_the_overhead_follows_the_agents_version(fitted: tuple) -> None:
    # Half of the OpenCode sessions as if a later version had sent a system prompt 5,000 tokens longer:
    # every prompt of theirs grows by it, so deltas stay as they are and only the static overhead moves.
    calibrator, _, store = fitted
    frame = features(store, calibrator.sources, holdout_fraction=0.0)
    version = frame.filter(pl.col("tool") == "opencode")["agent_version"].drop_nulls().unique().to_list()
    assert len(version) == 1  # the synthetic OpenCode sessions record the version they ran
    sessions = sorted(frame.filter(pl.col("tool") == "opencode")["session_uid"].unique().to_list())
    later = pl.col("session_uid").is_in(sessions[::2])
    shifted = frame.with_columns(
        pl.when(later).then(pl.lit("9.1.4")).otherwise(pl.col("agent_version")).alias("agent_version"),
        pl.when(later).then(pl.col("ctx") + 5000).otherwise(pl.col("ctx")).alias("ctx"),
        pl.when(later).then(pl.col("prev_ctx") + 5000).otherwise(pl.col("prev_ctx")).alias("prev_ctx"),
    )
    versioned = Calibrator(holdout_fraction=0.0).fit(shifted)
    runtime = Calibration(versioned.to_config())
    provider, model = shifted.filter(later).select("provider", "model").row(0)
    old = runtime.static_overhead(provider, model, f"opencode@{version[0]}")
    new = runtime.static_overhead(provider, model, "opencode@9.1.4")
    assert new - old == pytest.approx(5000, abs=100)
    # an unknown patch of that version falls back to its minor release; an unknown version to the agent
    assert runtime.static_overhead(provider, model, "opencode@9.1.7") == new
    assert runtime.static_overhead(provider, model, "opencode@10.0") == runtime.static_overhead(
        provider, model, "opencode"
    )
    # scoring predicts each whole prompt with its own version's overhead
    scored = score_frame(shifted, "calibrated", versioned)
    first = scored.filter(pl.col("status") == "baseline").filter(pl.col("tool") == "opencode")
    errors = (first["ctx"] - first["est_full"] - first["static"]).abs()
    unversioned = shifted.with_columns(pl.lit(None, pl.String).alias("agent_version"))
    pooled = Calibrator(holdout_fraction=0.0).fit(unversioned)
    plain = score_frame(unversioned, "calibrated", pooled)
    plain_first = plain.filter(pl.col("status") == "baseline").filter(pl.col("tool") == "opencode")
    assert (
        errors.median()
        < (plain_first["ctx"] - plain_first["est_full"] - plain_first["static"]).abs().median()
    )
