"""Each provider's base: the choice rule, the plan of what a fit compares, and a fit that chooses."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calib import runtime
from calib.calibration import selection
from calib.calibration.fit import ModelCheck
from calib.calibration.pipeline import run_fit
from calib.calibration.selection import (
    FALLBACK_BASE,
    FEW,
    FORCED,
    LOWEST,
    PLAIN,
    TIED,
    Choice,
    Plan,
    choose,
    choose_models,
    plan,
    signed_rank_z,
)
from calib.estimators import get_estimator
from calib.estimators.calibrated import CalibratedEstimator
from calib.ingest.pipeline import ingest
from calib.scoring.chain import session_sample
from calib.scoring.counts import update_estimates
from calib.store.store import Store
from calib.synth import rules, write_sample

O200K = "tiktoken:o200k_base"


def _figures(mae: float, p90: float, calls: int = 100) -> dict[str, Any]:
    return {"calls": calls, "delta_mae": mae, "ctx_err_p90": p90, "ctx_err_p99": None}


def test_the_lowest_held_out_mae_wins_and_says_by_how_much() -> None:
    bases = Plan("charclass", ("chars4", O200K))
    figures = {
        "openai": {
            "calibrated:charclass": _figures(60.0, 0.004),
            "calibrated:chars4": _figures(180.0, 0.009),
            f"calibrated:{O200K}": _figures(10.0, 0.0003),
            O200K: _figures(13.0, 0.0003),  # plain o200k: shown, never chosen
        }
    }
    fitted = {b: {"openai"} for b in bases.bases}
    choice = choose(["openai"], figures, bases, fitted)["openai"]
    assert (choice.base, choice.reason, choice.calls) == (O200K, LOWEST, 100)
    assert choice.margin() == pytest.approx(6.0)  # charclass's 60 over 10; the plain 13 is not a candidate
    assert choice.candidates[PLAIN]["delta_mae"] == 13.0
    assert choice.to_dict()["margin"] == pytest.approx(6.0)


def test_near_equal_maes_are_decided_by_the_p90_then_the_fallback() -> None:
    bases = Plan("charclass", (O200K,))
    fitted = {b: {"google"} for b in bases.bases}
    tied = {"calibrated:charclass": _figures(50.0, 0.004), f"calibrated:{O200K}": _figures(49.5, 0.005)}
    choice = choose(["google"], {"google": tied}, bases, fitted)["google"]
    assert (choice.base, choice.reason) == ("charclass", TIED)
    assert choice.margin() is not None
    same = {"calibrated:charclass": _figures(50.0, 0.004), f"calibrated:{O200K}": _figures(50.0, 0.004)}
    assert choose(["google"], {"google": same}, bases, fitted)["google"].base == "charclass"
    # just outside the 2% band the MAE alone decides
    apart = {"calibrated:charclass": _figures(50.0, 0.001), f"calibrated:{O200K}": _figures(48.9, 0.009)}
    assert choose(["google"], {"google": apart}, bases, fitted)["google"].base == O200K


def test_few_held_out_calls_keep_the_fallback_and_forcing_wins_where_fitted() -> None:
    bases = Plan("charclass", (O200K,))
    few = {
        "calibrated:charclass": _figures(50.0, 0.004, calls=selection.MIN_CALLS - 1),
        f"calibrated:{O200K}": _figures(1.0, 0.0001, calls=selection.MIN_CALLS - 1),
    }
    fitted = {b: {"google", "openai"} for b in bases.bases}
    choices = choose(["google", "openai"], {"google": few}, bases, fitted)
    assert (choices["google"].base, choices["google"].reason) == ("charclass", FEW)
    assert choices["google"].margin() is None
    assert (choices["openai"].base, choices["openai"].calls) == ("charclass", 0)
    forced = Plan("charclass", (O200K,), forced=O200K)
    only_openai = {"charclass": {"google", "openai"}, O200K: {"openai"}}
    got = choose(["google", "openai"], {"google": few}, forced, only_openai)
    assert {p: (c.base, c.reason) for p, c in got.items()} == {
        "google": ("charclass", FORCED),  # the forced base has no parameters of google
        "openai": (O200K, FORCED),
    }


def test_a_candidate_not_fitted_for_a_provider_is_not_chosen() -> None:
    bases = Plan("charclass", (O200K,))
    figures = {
        "google": {"calibrated:charclass": _figures(50.0, 0.004), f"calibrated:{O200K}": _figures(1.0, 0.0)}
    }
    got = choose(["google"], figures, bases, {"charclass": {"google"}, O200K: set()})
    assert got["google"].base == "charclass"


def test_the_signed_rank_statistic() -> None:
    # five positive gains, no ties: W = 15 against a mean of 7.5 and a variance of 13.75
    assert signed_rank_z(np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == pytest.approx(7.5 / np.sqrt(13.75))
    assert signed_rank_z(-np.array([1.0, 2.0, 3.0, 4.0, 5.0])) == pytest.approx(-7.5 / np.sqrt(13.75))
    # symmetric gains lean nowhere; zeros are dropped; nothing at all is no evidence
    assert signed_rank_z(np.array([-2.0, -1.0, 0.0, 1.0, 2.0])) == 0.0
    assert signed_rank_z(np.zeros(4)) == 0.0
    # ties share their mean rank, and shrink the variance: ranks 1.5, 1.5, 3, W = 4.5 of mean 3
    z = signed_rank_z(np.array([1.0, -1.0, 2.0]))
    assert z == pytest.approx(1.5 / np.sqrt(3 * 4 * 7 / 24 - 6 / 48))
    # a single large gain among many small losses does not make a clear gain (a mean would say so)
    lopsided = np.array([500.0, *([-1.0] * 9)])
    assert lopsided.mean() > 0 and signed_rank_z(lopsided) < 0


def _checks(
    errors: dict[str, list[float]], key: tuple[str, str]
) -> dict[str, dict[tuple[str, str], ModelCheck]]:
    return {base: {key: ModelCheck(np.array(e))} for base, e in errors.items()}


def test_a_model_takes_a_tokenizer_of_its_own_only_when_it_clearly_counts_better() -> None:
    bases = Plan("charclass", ("ctok:3.0", "ctok:4.7"))
    key = ("anthropic", "claude-opus-4-7")
    older = [10.0 + i for i in range(30)]
    newer = [1.0 + (i % 3) for i in range(30)]

    def anthropic(base: str = "ctok:3.0") -> dict[str, Choice]:
        return {"anthropic": Choice("anthropic", base, LOWEST, 100, {})}

    choices = anthropic()
    routed = choose_models(
        choices, _checks({"ctok:3.0": older, "ctok:4.7": newer, "charclass": [0.0] * 30}, key), bases
    )
    assert list(routed) == [key] and routed[key].base == "ctok:4.7" and routed[key].calls == 30
    assert routed[key].evidence > selection.MODEL_EVIDENCE  # the fallback's 0.0 is never a model's base
    assert choices["anthropic"].models == {"claude-opus-4-7": routed[key]}
    assert choices["anthropic"].to_dict()["models"]["claude-opus-4-7"]["base"] == "ctok:4.7"
    # not when the provider's own base is as good (within TIE), nor when the gain is one lucky call
    assert choose_models(anthropic(), _checks({"ctok:3.0": older, "ctok:4.7": older}, key), bases) == {}
    lucky = [e - (500.0 if i == 0 else -0.5) for i, e in enumerate(older)]
    assert np.mean(lucky) < np.mean(older) * 0.5
    assert choose_models(anthropic(), _checks({"ctok:3.0": older, "ctok:4.7": lucky}, key), bases) == {}
    # nor with fewer checked calls than MIN_CALLS, nor under a provider on the fallback, nor when forced
    few = _checks(
        {"ctok:3.0": older[: selection.MIN_CALLS - 1], "ctok:4.7": newer[: selection.MIN_CALLS - 1]}, key
    )
    assert choose_models(anthropic(), few, bases) == {}
    assert (
        choose_models(anthropic("charclass"), _checks({"ctok:3.0": older, "ctok:4.7": newer}, key), bases)
        == {}
    )
    forced = Plan("charclass", ("ctok:3.0",), forced="ctok:3.0")
    assert choose_models(anthropic(), _checks({"ctok:3.0": older, "ctok:4.7": newer}, key), forced) == {}


def test_a_fit_routes_a_model_whose_tokenizer_differs_to_it_and_both_runtimes_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code sessions whose Opus 4.7 counts like chars4, while the other Claude models count
    # like cl100k_base (the generator's anthropic rule)
    monkeypatch.setitem(rules.MODEL_RULES, "claude-opus-4-7", rules.Rule("chars4", 1.0, 6))
    sample = tmp_path / "sessions"
    write_sample("claude-code", sample, sessions=60)
    out = tmp_path / "calibration.json"
    cl100k = "tiktoken:cl100k_base"
    report = run_fit(
        [sample], db=tmp_path / "s.duckdb", out=out, candidates=[cl100k, "chars4"], holdout_fraction=0.3
    )
    anthropic = report.choices["anthropic"]
    assert anthropic.base == cl100k and set(anthropic.models) == {"claude-opus-4-7"}
    own = anthropic.models["claude-opus-4-7"]
    assert own.base == "chars4" and own.errors["chars4"] < own.errors[cl100k] / 2
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 3
    preferred = doc["providers"]["anthropic"]["preferred"]
    assert preferred["base"] == cl100k and preferred["models"]["claude-opus-4-7"]["base"] == "chars4"
    assert not any("base" in params for m, params in preferred["models"].items() if m != "claude-opus-4-7")
    assert doc["fit"]["selection"]["anthropic"]["models"]["claude-opus-4-7"]["base"] == "chars4"
    # calib's estimator counts the model's own base too, and matches the runtime given the counter
    estimator = CalibratedEstimator.from_config(doc)
    assert {cl100k, "chars4"} <= set(estimator.sources)
    parts = [("tool_result", "def f(x):\n    return x * 2  # doubled\n"), ("user_text", "run the tests")]
    cal = runtime.loads(json.dumps(doc), counters={cl100k: get_estimator(cl100k).count})
    for model in ("claude-opus-4-7", "claude-opus-4-6"):
        assert cal.count_parts(parts, "anthropic", model) == estimator.count_parts(parts, "anthropic", model)
    assert cal.params("anthropic", "claude-opus-4-7").base == "chars4"
    assert cal.params("anthropic", "claude-opus-4-6").base == cl100k
    # without tiktoken the provider falls back to charclass, while Opus 4.7's own base still counts
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    bare = runtime.loads(json.dumps(doc))
    assert bare.params("anthropic", "claude-opus-4-6").base == "charclass"
    assert bare.params("anthropic", "claude-opus-4-7").base == "chars4"
    assert bare.missing_counters() == [cl100k]


def test_the_plan_of_a_fit() -> None:
    assert plan("chars4") == Plan("chars4", ())  # a base the runtimes compute: the config's own
    assert plan(O200K) == Plan(FALLBACK_BASE, (O200K,), forced=O200K)
    auto = plan("auto", ["charclass", "chars4", O200K, "hf:/no/such/tokenizer.json"])
    assert auto.fallback == "charclass" and auto.candidates == ("chars4", O200K)
    assert "cannot read the tokenizer" in auto.skipped["hf:/no/such/tokenizer.json"]
    assert auto.bases == ("charclass", "chars4", O200K)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OpenCode sessions of OpenAI (whose truth is o200k_base itself) and Google (1.07 x o200k_base)."""
    out = tmp_path_factory.mktemp("selection") / "sessions"
    write_sample("opencode", out, sessions=24, providers=["openai", "google"])
    return out


def test_a_fit_gives_each_provider_its_best_base_and_the_runtime_follows(
    sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "calibration.json"
    report = run_fit(
        [sample], db=tmp_path / "s.duckdb", out=out, candidates=["chars4", O200K], holdout_fraction=0.5
    )
    assert report.compared == ("charclass", "chars4", O200K)
    openai = report.choices["openai"]
    assert openai.base == O200K and openai.reason in (LOWEST, TIED)
    assert openai.candidates[f"{O200K}"]["delta_mae"] < openai.candidates["charclass"]["delta_mae"]
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 2 and doc["base"] == "charclass"  # no model has a base of its own
    assert doc["providers"]["openai"]["preferred"]["base"] == O200K
    assert doc["fit"]["selection"]["openai"]["base"] == O200K
    assert {r["base"] for r in report.rows if r["provider"] == "openai"} == {O200K}
    # the calibration written beats plain o200k on the held-out OpenAI calls
    rows = [r for r in report.rows if r["provider"] == "openai" and r["calls"]]
    assert rows and all(r["delta_mae_after"] <= r["delta_mae_before"] for r in rows)

    parts = [("tool_result", "def f(x):\n    return x * 2  # doubled\n"), ("user_text", "run the tests")]
    estimator = CalibratedEstimator.from_config(doc)
    expected = estimator.count_parts(parts, "openai", "gpt-5")
    # an agent that passes its own o200k counter gets calib's count, from the preferred parameters
    cal = runtime.loads(json.dumps(doc), counters={O200K: get_estimator(O200K).count})
    assert cal.count_parts(parts, "openai", "gpt-5") == expected
    assert cal.params("openai", "gpt-5").base == O200K and cal.missing_counters() == []
    # without one (and no tiktoken to import), OpenAI falls back to its own charclass parameters
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    bare = runtime.loads(json.dumps(doc))
    assert bare.params("openai", "gpt-5").base == "charclass"
    assert bare.params("openai", "gpt-5").level == cal.params("openai", "gpt-5").level
    assert bare.missing_counters() == [O200K]
    fallback = dict(
        doc,
        providers={p: {k: v for k, v in e.items() if k != "preferred"} for p, e in doc["providers"].items()},
    )
    assert bare.count_parts(parts, "openai", "gpt-5") == runtime.loads(json.dumps(fallback)).count_parts(
        parts, "openai", "gpt-5"
    )


def test_a_big_store_compares_the_bases_on_a_sample_of_its_sessions(sample: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    whole = run_fit([sample], db=db, out=None, candidates=[O200K], holdout_fraction=0.5)
    sampled = run_fit(
        db=db, out=None, candidates=[O200K], holdout_fraction=0.5, selection_calls=80, ingest=False
    )
    assert whole.sample_sessions is None and sampled.sample_sessions is not None
    with Store(db) as store:
        picked = session_sample(store, 80)
        total = store.con.execute("SELECT count(DISTINCT session_uid) FROM calls").fetchone()
        # the sample is stable, and smaller than the store
        assert picked is not None and sampled.sample_sessions == len(picked) < total[0]
        assert session_sample(store, 80) == picked and session_sample(store, 10**9) is None
        # every provider gets its share: all of its calls, or at least the cap
        per = "SELECT provider, count(*) FROM calls {} GROUP BY provider"
        everything = dict(store.con.execute(per.format("")).fetchall())
        sampled_calls = dict(
            store.con.execute(
                per.format("WHERE session_uid IN (SELECT unnest($s))"), {"s": picked}
            ).fetchall()
        )
        assert all(sampled_calls[p] >= min(n, 80) for p, n in everything.items())
        assert any(sampled_calls[p] < n for p, n in everything.items())
    # the fallback is fitted on every training session either way: the same charclass parameters
    assert sampled.train_calls == whole.train_calls
    assert sampled.config["default"] == whole.config["default"]
    assert sampled.holdout_calls < whole.holdout_calls
    # the sample still holds enough held-out OpenAI calls to choose, and chooses as the whole store did
    assert sampled.choices["openai"].calls >= selection.MIN_CALLS
    assert sampled.choices["openai"].base == O200K


def test_counting_for_a_sample_counts_only_its_texts(sample: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.duckdb"
    with Store(db) as store:
        ingest([sample], store=store)
        picked = session_sample(store, 80)
        assert picked is not None
        counted = update_estimates(store, ["chars4"], sessions=picked)
        texts = store.con.execute(
            "SELECT count(DISTINCT text_hash) FROM parts WHERE session_uid IN (SELECT unnest($s))",
            {"s": picked},
        ).fetchone()
        assert counted == texts[0]
        # the rest is counted when the whole store is asked for, and nothing twice
        everything = store.con.execute("SELECT count(DISTINCT text_hash) FROM parts").fetchone()
        assert update_estimates(store, ["chars4"]) == everything[0] - counted


def test_a_single_base_is_not_said_to_have_won() -> None:
    figures = {"google": {"calibrated:chars4": _figures(50.0, 0.004)}}
    choice = choose(["google"], figures, plan("chars4"), {"chars4": {"google"}})["google"]
    assert (choice.base, choice.reason, choice.margin()) == ("chars4", selection.ONLY, None)
