from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from calib.calibration.export import export_config
from calib.calibration.fit import MIN_HALF_CALLS, Calibrator, fit, nnqp, robust_fit
from calib.core.errors import UsageError
from calib.core.records import Call, ParsedSession, Part, Session
from calib.estimators import get_estimator
from calib.scoring.chain import features, is_holdout
from calib.scoring.score import score, summarise
from calib.store.store import Store

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "with",
    "as",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "from",
    "at",
    "or",
    "an",
    "have",
    "not",
    "but",
    "which",
]
CJK = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年同工动"


def _text(rng: random.Random) -> str:
    n = rng.randint(4, 300)
    pick = rng.random()
    if pick < 0.35:
        return " ".join(rng.choice(WORDS) for _ in range(n))
    if pick < 0.6:
        return json.dumps(
            {f"key_{i}": [rng.randint(0, 10**6), rng.choice(WORDS)] for i in range(1 + n // 10)}
        )
    if pick < 0.75:
        return "".join(rng.choice(CJK) for _ in range(n))
    if pick < 0.9:
        return "\n".join(f"    value_{i} = compute({i}, {rng.random():.4f})  # ✓" for i in range(1 + n // 20))
    return "".join(rng.choice(["🙂", "é", "ß", "→", "x", " ", "\u00a0"]) for _ in range(n))


Truth = Callable[[str, str], float]  # (kind, text) -> tokens the provider counts for the part


def _sessions(
    provider: str,
    model: str,
    n: int,
    truth: Truth,
    overhead: float,
    *,
    seed: int,
    noise: float = 0.0,
    per_call: float = 0.0,
) -> list[ParsedSession]:
    """Sessions whose usage follows `truth` per input part plus `overhead` per input part (a message),
    and `per_call` tokens more at every call after the first (framing the fit has no term for)."""
    rng = random.Random(seed)
    out = []
    for s in range(n):
        uid = f"test:{provider}:{model}:{seed}:{s}"
        session = Session(uid, "test", uid, "/gen", "test")
        parts: list[Part] = []
        calls: list[Call] = []
        ctx = float(rng.randint(3000, 9000))  # system prompt and tools
        pending = [("user_text", _text(rng))]
        ts = datetime(2026, 2, 1) + timedelta(hours=s)
        for k in range(rng.randint(4, 10)):
            for kind, text in pending:
                parts.append(Part(f"{uid}:p{len(parts)}", uid, len(parts), "user", kind, text))
                cost = truth(kind, text) + overhead
                ctx += cost * (rng.lognormvariate(0, noise) if noise else 1.0)
            ctx += per_call if k else 0.0
            uid_k = f"{uid}:c{k}"
            out_text = _text(rng)
            carry = round(truth("assistant_text", out_text))
            calls.append(
                Call(uid_k, uid, k, 0, len(parts), "ok", "openai", ts=ts, provider=provider, model=model,
                     input=round(ctx), output=carry, ctx=round(ctx), carry=carry)
            )  # fmt: skip
            parts.append(
                Part(
                    f"{uid}:p{len(parts)}",
                    uid,
                    len(parts),
                    "assistant",
                    "assistant_text",
                    out_text,
                    call_uid=uid_k,
                )
            )
            ctx += carry
            ts += timedelta(seconds=40)
            if rng.random() < 0.7:
                pending = [("tool_result", _text(rng)) for _ in range(rng.randint(1, 3))]
            else:
                pending = [("user_text", _text(rng))]
        out.append(ParsedSession(session, calls, parts))
    return out


def _o200k(ratio: float | dict[str, float]) -> Truth:
    enc = get_estimator("tiktoken:o200k_base")

    def truth(kind: str, text: str) -> float:
        r = ratio if isinstance(ratio, float) else ratio.get(kind, 1.0)
        return r * enc.count(text)

    return truth


@pytest.fixture(scope="module")
def tokenizer_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store where two models count o200k_base tokens times a known ratio plus a known framing."""
    path = tmp_path_factory.mktemp("fit") / "calib.duckdb"
    with Store(path) as store:
        store.write(_sessions("openai", "gpt-test", 90, _o200k(1.13), 4.0, seed=1))
        store.write(_sessions("google", "gemini-test", 90, _o200k(0.92), 7.0, seed=2))
    return path


def test_fit_recovers_ratio_and_overhead(tokenizer_store: Path, tmp_path: Path) -> None:
    with Store(tokenizer_store) as store:
        calibrator = fit(store, "tiktoken:o200k_base")
        truth = {("openai", "gpt-test"): (1.13, 4.0), ("google", "gemini-test"): (0.92, 7.0)}
        for (provider, model), (ratio, overhead) in truth.items():
            level = calibrator.level(provider, model)
            # tool results and user text are appended; model text never is (it comes back as carry)
            for group in ("tool", "user"):
                assert level.ratios[group] == pytest.approx(ratio, rel=0.01)
            assert level.message_overhead == pytest.approx(overhead, rel=0.01)
        path = tmp_path / "calibration.json"
        export_config(calibrator, path)
        rows = score(store, [f"calibrated:{path}", "tiktoken:o200k_base"], sessions="holdout")
    summary = {r["estimator"]: r for r in summarise(rows.filter(pl.col("model") == "gpt-test")).to_dicts()}
    calibrated, raw = summary[f"calibrated:{path}"], summary["tiktoken:o200k_base"]
    assert calibrated["calls"] > 50
    assert calibrated["delta_mae"] < 1.0  # only the rounding of each call's usage is left
    assert calibrated["ctx_err_p99"] < 5e-4
    assert calibrated["delta_bias"] == pytest.approx(1.0, abs=0.002)
    assert raw["delta_mae"] > 20 * calibrated["delta_mae"]


def test_fit_uses_only_training_sessions(tokenizer_store: Path) -> None:
    with Store(tokenizer_store) as store:
        frame = features(store, ["tiktoken:o200k_base"])
    held = frame.filter(pl.col("holdout"))
    assert held.height and all(is_holdout(uid) for uid in held["session_uid"].unique())
    calibrator = Calibrator("tiktoken:o200k_base").fit(frame.filter(~pl.col("holdout")))
    train_ok = frame.filter(~pl.col("holdout") & (pl.col("status") == "ok")).height
    assert calibrator.n_calls_ == train_ok
    assert calibrator.global_.calls == train_ok


def test_kind_ratios_are_fitted_apart(tmp_path: Path) -> None:
    with Store(tmp_path / "k.duckdb") as store:
        store.write(
            _sessions("openai", "m", 120, _o200k({"tool_result": 1.3, "user_text": 0.9}), 3.0, seed=5)
        )
        level = fit(store, "tiktoken:o200k_base", holdout_fraction=0).level("openai", "m")
    assert level.ratios["tool"] == pytest.approx(1.3, rel=0.01)
    assert level.ratios["user"] == pytest.approx(0.9, rel=0.01)
    assert level.message_overhead == pytest.approx(3.0, rel=0.03)


def test_charclass_fit_recovers_class_weights(tmp_path: Path) -> None:
    from calib.estimators.charclass import CLASSES, class_counts

    weights = {
        "letters": 0.21,
        "digits": 0.9,
        "whitespace": 0.15,
        "punctuation": 0.45,
        "cjk": 0.8,
        "other": 0.7,
    }

    def truth(kind: str, text: str) -> float:
        counts = class_counts([text]).row(0)
        return sum(weights[c] * n for c, n in zip(CLASSES, counts, strict=True))

    with Store(tmp_path / "c.duckdb") as store:
        store.write(_sessions("google", "g", 120, truth, 5.0, seed=9))
        calibrator = fit(store, "charclass", holdout_fraction=0)
        frame = features(store, calibrator.sources)
    level = calibrator.level("google", "g")
    assert level.class_weights is not None
    # the generated texts mix some classes in fixed proportions (JSON, code), which leaves a little
    # play between their weights; the predictions are exact all the same
    for name, weight in weights.items():
        assert level.class_weights[name] * level.ratios["tool"] == pytest.approx(weight, rel=0.05), name
    assert level.message_overhead == pytest.approx(5.0, rel=0.05)
    ok = (frame["status"] == "ok").to_numpy()
    errors = calibrator.predict(frame)[ok] - frame["delta"].to_numpy()[ok]
    assert np.abs(errors).mean() < 1.0
    doc = calibrator.to_config()
    assert doc["base"] == "charclass" and doc["classes"] == list(CLASSES)


def test_small_groups_shrink_toward_their_provider(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.write(_sessions("openai", "big", 80, _o200k(1.0), 4.0, seed=3, noise=0.3))
        store.write(_sessions("openai", "small", 1, _o200k(1.4), 4.0, seed=4, noise=0.3))
        store.write(_sessions("openai", "large", 80, _o200k(1.4), 4.0, seed=6, noise=0.3))
        shrunk = fit(store, "tiktoken:o200k_base", holdout_fraction=0, by_kind=False)
        loose = fit(store, "tiktoken:o200k_base", holdout_fraction=0, by_kind=False, ratio_sd=10.0)
    assert shrunk.level("openai", "small").calls < 10
    provider = shrunk.level("openai", None).ratios["tool"]
    small, small_alone = (c.level("openai", "small").ratios["tool"] for c in (shrunk, loose))
    # a handful of noisy calls moves a model only part of the way from its provider ...
    assert abs(small - provider) < 0.5 * abs(small_alone - provider)
    # ... while hundreds of calls decide on their own
    large, large_alone = (c.level("openai", "large").ratios["tool"] for c in (shrunk, loose))
    assert large == pytest.approx(large_alone, rel=0.02)
    assert large == pytest.approx(1.4, rel=0.05)
    assert shrunk.level("other", "unknown") is shrunk.global_


def test_a_model_keeps_its_own_fit_only_where_it_predicts_its_later_calls_better(tmp_path: Path) -> None:
    with Store(tmp_path / "m.duckdb") as store:
        store.write(_sessions("openai", "big", 60, _o200k(1.0), 11.0, seed=3))
        # the same tokenizer and framing, except a fixed 11 tokens per call instead of per message:
        # one session of it bends the ratio of a model fitted alone
        store.write(_sessions("openai", "framed", 1, _o200k(1.0), 0.0, seed=7, per_call=11.0))
        # a tokenizer of its own, one session: its own fit predicts its later calls better
        store.write(_sessions("openai", "own", 1, _o200k(1.3), 11.0, seed=8))
        calibrator = fit(store, "tiktoken:o200k_base", holdout_fraction=0, by_kind=False)
    provider = calibrator.level("openai", None)
    framed = calibrator.level("openai", "framed")
    assert framed.calls >= 4
    assert (framed.ratios, framed.message_overhead) == (provider.ratios, provider.message_overhead)
    own = calibrator.level("openai", "own")
    assert own.ratios["tool"] == pytest.approx(1.3, rel=0.02)
    assert own.ratios != provider.ratios
    # each model's check: its later half of calls, and the error of the parameters it kept there
    # (a model of fewer calls than two halves of MIN_HALF_CALLS has none)
    checks = calibrator.model_checks_
    for model in ("big", "framed", "own"):
        calls = calibrator.level("openai", model).calls
        if calls // 2 < MIN_HALF_CALLS:
            assert ("openai", model) not in checks
        else:
            assert checks[("openai", model)].calls == calls - calls // 2
    assert checks[("openai", "big")].mae < 0.01 < checks[("openai", "framed")].mae < 11.0


@pytest.mark.parametrize("base", ["tiktoken:o200k_base", "charclass"])
def test_fit_in_batches_equals_the_fit_on_the_whole_frame(tokenizer_store: Path, base: str) -> None:
    with Store(tokenizer_store) as store:
        whole = Calibrator(base)
        frame = features(store, whole.sources)
        whole.fit(frame.filter(~pl.col("holdout")))
        batched = fit(store, base, batch_calls=100)  # a dozen batches of a few sessions
    # every parameter, static overheads included, to the last bit
    assert batched.n_calls_ == whole.n_calls_ > 0
    assert batched.global_ == whole.global_
    assert batched.providers_ == whole.providers_ and len(whole.providers_) == 2
    assert batched.models_ == whole.models_
    assert whole.global_.static_by_tool and batched.to_config() == whole.to_config()


def test_fit_batches_needs_a_batch() -> None:
    with pytest.raises(UsageError, match="no batch"):
        Calibrator().fit_batches([])


def test_nnqp_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        a = rng.normal(size=(n + 3, n))
        h, g = a.T @ a + 1e-3 * np.eye(n), a.T @ rng.normal(size=n + 3)
        x = nnqp(h, g)
        assert (x >= 0).all()
        best = min(
            (_solve_subset(h, g, mask) for mask in range(1 << n)),
            key=lambda v: 0.5 * v @ h @ v - g @ v,
        )
        assert 0.5 * x @ h @ x - g @ x <= 0.5 * best @ h @ best - g @ best + 1e-9


def _solve_subset(h: np.ndarray, g: np.ndarray, mask: int) -> np.ndarray:
    free = np.array([(mask >> i) & 1 == 1 for i in range(len(g))])
    x = np.zeros(len(g))
    if free.any():
        x[free] = np.linalg.solve(h[np.ix_(free, free)], g[free])
    return x if (x >= 0).all() else np.zeros(len(g))


def test_robust_fit_resists_outliers() -> None:
    rng = np.random.default_rng(1)
    x = rng.uniform(10, 2000, size=(400, 1))
    y = 1.25 * x[:, 0] + rng.normal(0, 3, 400)
    y[:40] *= 6  # a tenth of the calls are broken in ways the chain checks missed
    theta = robust_fit(x, y, np.array([1.0]), np.array([1.0]))
    assert theta[0] == pytest.approx(1.25, rel=0.01)
    plain = np.linalg.lstsq(x, y, rcond=None)[0]
    assert abs(plain[0] - 1.25) > 0.3


def test_calibrator_follows_sklearn_conventions(tokenizer_store: Path) -> None:
    calibrator = Calibrator("tiktoken:o200k_base", ratio_sd=0.2)
    assert calibrator.get_params()["ratio_sd"] == 0.2
    assert not [a for a in vars(calibrator) if a.endswith("_")]
    with pytest.raises(UsageError, match="not fitted"):
        calibrator.level("openai", "gpt-test")
    with Store(tokenizer_store) as store:
        frame = features(store, ["tiktoken:o200k_base"])
    assert calibrator.fit(frame) is calibrator
    assert {"global_", "providers_", "models_", "n_calls_"} <= set(vars(calibrator))
    predicted = calibrator.predict(frame)
    ok = (frame["status"] == "ok").to_numpy()
    assert np.abs(predicted[ok] - frame["delta"].to_numpy()[ok]).mean() < 1.0
    with pytest.raises(UsageError, match="no counts"):
        Calibrator("chars4").fit(frame)
