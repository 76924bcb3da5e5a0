"""Which base counts each provider best: the choice `calib fit` makes per provider.

Every candidate base that loads here (`CANDIDATE_BASES`; the tokenizer-free `charclass` always) is
calibrated on the training sessions, and each calibration is scored on the held-out sessions. For
each provider the base with the lowest held-out **delta MAE** (mean |estimate - delta| over the
provider's scored calls, in tokens) wins; bases within `TIE` (2%) of the lowest MAE count as tied,
and the lowest scored `/context` p90 among them wins. The MAE leads because it is the error the
calibration itself minimises, in tokens, and it is steadier than a tail percentile on the few hundred
held-out calls a user's logs give; the p90 decides only between near-equals.

A provider with fewer than `MIN_CALLS` held-out scored calls keeps the tokenizer-free base: so few
calls cannot tell two bases apart. In a store of more than `SELECTION_CALLS` calls of a provider, the
candidates are fitted and compared on a stable sample of its sessions of about that many calls per
provider, and a provider's
preferred parameters are those fitted on the sample's training sessions (the tokenizer-free fallback
is fitted on the whole store). The choice is made on the same held-out sessions its figures are
then reported on, so the chosen base's held-out figures are slightly optimistic (the best of a few);
with two to five candidates that bias is small beside the gaps between bases.

A model may count better with another tokenizer than its provider's (Claude Opus 4.7 has a tokenizer
of its own, the other Claude models share an older one): under a provider whose base is a tokenizer,
each model with at least `MIN_CALLS` calls in the second half of its training calls takes the
tokenizer whose calibration predicts that half best (`calib.calibration.fit.ModelCheck`: fitted on
the first half), when it beats the provider's base by more than `TIE` and clearly, call by call
(`MODEL_EVIDENCE`, `choose_models`). Training
calls, not held-out ones: a model seldom has enough held-out calls of its own, and the check is out of
sample all the same (the later calls predicted from the earlier). The tokenizer-free fallback is not
a model's base: a model keeps its fallback parameters, used where its tokenizer does not count.

`--base NAME` forces one base: a tokenizer then becomes every provider's preferred base, and a base
the runtimes compute themselves (charclass, chars4, cjk) becomes the config's own base, with nothing
preferred.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from calib.calibration.fit import ModelCheck
from calib.estimators import why_missing, why_unusable
from calib.runtime import RUNTIME_BASES, normalise_provider

# The bases `calib fit` compares by default, each used where it loads; the first is the fallback
# every config carries (it needs no tokenizer where the config is used).
CANDIDATE_BASES = ("charclass", "chars4", "tiktoken:o200k_base", "hf:gemma", "hf:gemma3")
FALLBACK_BASE = CANDIDATE_BASES[0]
# The base named `auto`: let the fit choose per provider.
AUTO = "auto"
# The plain tokenizer reported beside every choice (house rule: accuracy with o200k_base beside it).
REFERENCE = "tiktoken:o200k_base"
# How the plain reference is named among a choice's candidates.
PLAIN = f"{REFERENCE} (plain)"
MIN_CALLS = 20
# Past this many calls of a provider in a store, the bases are fitted and compared on a sample of its
# sessions of about this many calls per provider (`calib.scoring.chain.session_sample`): some 600
# held-out calls per provider tell the bases apart, and a tokenizer counts a bounded share of a big store.
SELECTION_CALLS = 3_000
TIE = 0.02
# How clear a model's gain from a tokenizer of its own must be, call by call over the provider's base:
# the z of Wilcoxon's signed-rank test on the per-call gains (`signed_rank_z`). On the fixtures, Claude
# Opus 4.7 on Opus 4.7's own tokenizer scores 3.9 against the older one; Sonnet 4.6 on the same one,
# 0.7-0.9 for a 3-11% lower mean (a lucky half, which the held-out sessions did not confirm).
MODEL_EVIDENCE = 2.0
# Why a provider got its base.
LOWEST = "lowest held-out MAE"
TIED = "MAE tied, lowest p90"
FORCED = "forced by --base"
ONLY = "the only base fitted"
FEW = f"under {MIN_CALLS} held-out calls: the fallback"
# The held-out figures each candidate is shown with.
FIGURES = ("delta_mae", "ctx_err_p90", "ctx_err_p99", "e2e_err_p90", "e2e_err_p99")


@dataclass(frozen=True)
class Plan:
    """What a fit compares: its fallback base (the config's own), the other candidates that load here,
    the candidates skipped (base -> what to install), and the base forced on every provider (None:
    chosen per provider)."""

    fallback: str
    candidates: tuple[str, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    forced: str | None = None

    @property
    def bases(self) -> tuple[str, ...]:
        """Every base fitted: the fallback first."""
        return (self.fallback, *self.candidates)


def plan(base: str = AUTO, candidates: Sequence[str] | None = None) -> Plan:
    """The bases a fit of `base` compares: `auto` (every candidate that loads here, default
    `CANDIDATE_BASES`), a base the runtimes compute (that base alone, as the config's own), or a
    tokenizer (forced on every provider, over the charclass fallback)."""
    if base != AUTO:
        if base in RUNTIME_BASES:
            return Plan(base, ())
        return Plan(FALLBACK_BASE, (base,), forced=base)
    wanted = [b for b in dict.fromkeys(candidates or CANDIDATE_BASES) if b != FALLBACK_BASE]
    missing = {b: r for b in wanted if (r := why_unusable(b)) is not None}
    return Plan(FALLBACK_BASE, tuple(b for b in wanted if b not in missing), missing)


def reference(plan: Plan) -> str:
    """The uncalibrated estimator a fit's figures are compared with: plain o200k_base where it loads
    and the fit compares bases, else the base as it is (a fit of one base counts nothing more)."""
    if plan.forced is None and plan.candidates and why_missing(REFERENCE) is None:
        return REFERENCE
    return plan.forced or plan.fallback


@dataclass(frozen=True)
class ModelChoice:
    """A model that counts with a tokenizer of its own rather than its provider's: that base, the
    calls its choice was judged on (the second half of the model's training calls), each tokenizer's
    mean absolute error on them, and how clear the gain was."""

    provider: str
    model: str
    base: str
    calls: int
    errors: dict[str, float]  # base -> MAE on the model's later training calls
    evidence: float  # `signed_rank_z` of the gains over the provider's base

    def to_dict(self) -> dict[str, Any]:
        """The choice as the config's `fit.selection.PROVIDER.models` records it."""
        return {
            "base": self.base,
            "calls": self.calls,
            "errors": dict(sorted(self.errors.items())),
            "evidence": self.evidence,
        }


@dataclass
class Choice:
    """One provider's base: the winner, why, and every candidate's held-out figures; and the models
    that count with a base of their own."""

    provider: str
    base: str
    reason: str  # "lowest held-out MAE", "forced", "too few held-out calls", ...
    calls: int
    candidates: dict[str, dict[str, Any]]  # base -> figures (FIGURES, and `calls`)
    models: dict[str, ModelChoice] = field(default_factory=dict)  # model -> its own base

    @property
    def chosen(self) -> bool:
        """Whether the held-out figures chose the base (not forced, nor kept for want of calls)."""
        return self.reason in (LOWEST, TIED)

    def margin(self) -> float | None:
        """How much the winner beat the best other calibrated candidate: that candidate's MAE over the
        winner's (1.25: the runner-up's error is 25% larger); None when the figures did not choose."""
        own = self.candidates.get(self.base, {}).get("delta_mae")
        others = [
            f["delta_mae"]
            for b, f in self.candidates.items()
            if b not in (self.base, PLAIN) and f.get("delta_mae") is not None
        ]
        if own is None or not others or not self.chosen:
            return None
        return math.inf if own == 0 else min(others) / own

    def to_dict(self) -> dict[str, Any]:
        """The choice as the config's `fit.selection` and `calib fit --json` record it."""
        out = {
            "base": self.base,
            "reason": self.reason,
            "calls": self.calls,
            "margin": self.margin(),
            "candidates": {b: dict(f) for b, f in sorted(self.candidates.items())},
        }
        if self.models:
            out["models"] = {m: c.to_dict() for m, c in sorted(self.models.items())}
        return out


def figures_by_provider(summary: pl.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """Provider (normalised) -> estimator -> held-out figures, from a per-provider `summarise` frame."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for row in summary.to_dicts():
        provider = normalise_provider(row["provider"])
        out.setdefault(provider, {})[row["estimator"]] = {
            "calls": row.get("calls") or 0,
            **{f: row.get(f) for f in FIGURES},
        }
    return out


def choose(
    providers: Iterable[str],
    figures: Mapping[str, Mapping[str, Mapping[str, Any]]],
    plan: Plan,
    fitted: Mapping[str, set[str]],
) -> dict[str, Choice]:
    """Each provider's base. `figures`: provider -> `calibrated:BASE` -> held-out figures; `fitted`:
    base -> the providers its calibration has parameters of (a preferred base needs them)."""
    choices = {}
    for provider in sorted(providers):
        held = figures.get(provider, {})
        rows = {b: dict(held[f"calibrated:{b}"]) for b in plan.bases if f"calibrated:{b}" in held}
        calls = max((f.get("calls") or 0 for f in rows.values()), default=0)
        if REFERENCE in held:  # beside every choice, o200k as it is
            rows[PLAIN] = dict(held[REFERENCE])
        if len(plan.bases) == 1:
            choices[provider] = Choice(provider, plan.fallback, ONLY, calls, rows)
            continue
        if plan.forced is not None:
            base = plan.forced if provider in fitted.get(plan.forced, set()) else plan.fallback
            choices[provider] = Choice(provider, base, FORCED, calls, rows)
            continue
        scored = {
            b: f
            for b, f in rows.items()
            if b in plan.bases and provider in fitted.get(b, set()) and f.get("delta_mae") is not None
        }
        if calls < MIN_CALLS or not scored:
            choices[provider] = Choice(provider, plan.fallback, FEW, calls, rows)
            continue
        best = min(f["delta_mae"] for f in scored.values())
        tied = [b for b, f in scored.items() if f["delta_mae"] <= best * (1 + TIE)]
        # among near-equals the lower /context p90, then the fallback (no tokenizer needed), then the name
        winner = min(
            tied,
            key=lambda b: (
                scored[b].get("ctx_err_p90") if scored[b].get("ctx_err_p90") is not None else math.inf,
                b != plan.fallback,
                b,
            ),
        )
        reason = LOWEST if len(tied) == 1 else TIED
        choices[provider] = Choice(provider, winner, reason, calls, rows)
    return choices


def choose_models(
    choices: Mapping[str, Choice], checks: Mapping[str, Mapping[tuple[str, str], ModelCheck]], plan: Plan
) -> dict[tuple[str, str], ModelChoice]:
    """The models that count with a tokenizer of their own, by (provider, model), and add each to its
    provider's `Choice.models`. `checks`: base -> (provider, model) -> its calibration's `ModelCheck`.

    Under a provider whose base is a tokenizer, a model with at least `MIN_CALLS` checked calls takes
    the tokenizer with the lowest check error (then the first name) when the provider's base errs more
    than `TIE` above it and the gain, call by call, is clear (`signed_rank_z` at least `MODEL_EVIDENCE`).
    Nothing is routed when `--base` forces one base."""
    routed: dict[tuple[str, str], ModelChoice] = {}
    if plan.forced is not None:
        return routed
    for provider, choice in sorted(choices.items()):
        if choice.base == plan.fallback:
            continue
        for key, check in sorted(checks.get(choice.base, {}).items()):
            if key[0] != provider or check.calls < MIN_CALLS:
                continue
            rivals = {b: c[key] for b, c in checks.items() if b != plan.fallback and key in c}
            errors = {b: r.mae for b, r in rivals.items()}
            winner = min(errors, key=lambda b: (errors[b], b))
            if errors[choice.base] <= errors[winner] * (1 + TIE):
                continue
            evidence = signed_rank_z(check.errors - rivals[winner].errors)
            if evidence < MODEL_EVIDENCE:
                continue
            routed[key] = ModelChoice(provider, key[1], winner, check.calls, errors, evidence)
            choice.models[key[1]] = routed[key]
    return routed


def signed_rank_z(gain: np.ndarray) -> float:
    """Wilcoxon's signed-rank statistic of paired gains, as a normal z (ties share their mean rank,
    zeros are dropped): how clearly the gains lean above zero, robust to the few large deltas that
    dominate a mean. 0 when nothing differs."""
    gain = gain[gain != 0]
    n = len(gain)
    if n == 0:
        return 0.0
    magnitude = np.abs(gain)
    ranks = np.empty(n)
    ranks[np.argsort(magnitude, kind="stable")] = np.arange(1, n + 1)
    _, tied, counts = np.unique(magnitude, return_inverse=True, return_counts=True)
    ranks = (np.bincount(tied, weights=ranks) / counts)[tied]
    above = float(ranks[gain > 0].sum()) - n * (n + 1) / 4
    # positive for every n >= 1: even n equal magnitudes leave n (n + 1)^2 / 16
    variance = n * (n + 1) * (2 * n + 1) / 24 - float((counts**3 - counts).sum()) / 48
    return above / math.sqrt(variance)
