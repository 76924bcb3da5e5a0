"""Fitting per-provider and per-model calibration of a base estimator against the actual deltas.

The model, for the parts appended between two calls of one (provider, model):

    delta ≈ Σ_g ratio[g] · base(parts of kind group g) + message_overhead · messages

with kind groups `model`, `tool` and `user` (`calib.core.records.KIND_GROUPS`) and `messages` the input parts
among the appended parts (see `calib.scoring.score`). With the `charclass` base, `base(text) = Σ_c weight[c] · n_c(text)`
over the character classes of `calib.estimators.charclass.class_counts`, and the class weights are
fitted too (first, with the kinds pooled; then the kind ratios, anchored at 1), so no tokenizer is
needed at run time.

How the fit resists bad data and small groups:

- Non-negative least squares (Lawson-Hanson's active set) with variance weights
  `1 / (prediction + 32 tokens)`: the noise of a delta grows with its size, so big tool outputs do not
  drown the small deltas that carry the per-message overhead.
- Huber down-weighting of outliers by iteratively reweighted least squares (k = 1.345 robust standard
  deviations, the scale from the median absolute deviation of the standardised residuals).
- Shrinkage: every level is fitted with a Gaussian prior centred on its parent's parameters, a model
  on its provider and a provider on the global fit. The prior strength is a standard deviation:
  `ratio_sd = 0.1` says a model's ratios lie within about ±10% of its provider's, `overhead_sd = 4`
  that its message overhead lies within about ±4 tokens, `weight_sd = 0.1` the same (relative) for
  charclass class weights. The data term is scaled by the robust residual variance, so how far a group
  moves from its parent depends on how many calls it has and how noisy they are: a few noisy calls
  barely move it, hundreds of calls (or a few exact ones) decide on their own. At the global level
  the kind ratios are held within ±10% of the pooled ratio (a kind rarely appended, such as model
  text, then takes the pooled ratio), and the pooled fit itself has a weak anchor (ratio 1 ± 100%, no
  overhead ± 50 tokens) that only decides parameters the data say nothing about.
- A model keeps its own fit only where it pays on calls it did not see: fitted on its first half of
  calls, it must predict the second half better than its provider fitted without them
  (`Calibrator._fit_model`); otherwise the model takes its provider's parameters.

A Calibrator's default base is `charclass`: it needs no tokenizer where the config is used
(`calib.runtime` computes it in pure Python), so every config carries it for every provider. Any
registered estimator can be the base instead; `calib fit` fits several on one reading of the store
(`fit_together`) and gives each provider the one that counts it best (`calib.calibration.selection`).

Sessions are split for validation by `calib.scoring.chain.is_holdout` (a hash of the session uid), never by call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from calib.calibration.export import GroupFit, build_config
from calib.core.errors import UsageError
from calib.core.progress import Progress
from calib.core.records import RATIO_KEYS
from calib.core.spool import Spool
from calib.estimators.calibrated import CalibratedEstimator
from calib.estimators.charclass import CLASS_PREFIX, DEFAULT_WEIGHTS, class_sources
from calib.runtime import normalise_model, normalise_provider
from calib.scoring.chain import BATCH_CALLS, HOLDOUT_FRACTION, FeatureTable, feature_column
from calib.scoring.score import score_frame

if TYPE_CHECKING:
    from calib.store.store import Store

RATIO_SD = 0.1
OVERHEAD_SD = 4.0
WEIGHT_SD = 0.1
GLOBAL_RATIO_SD = 1.0
GLOBAL_OVERHEAD_SD = 50.0
# Smallest prior standard deviation of a ratio or weight (a relative sd of a value near 0).
MIN_SD = 0.01
HUBER_K = 1.345
# Tokens added to every delta's variance, so tiny deltas do not get unbounded weight.
VARIANCE_FLOOR = 32.0
# Smallest robust residual scale (in sqrt-token units): exact synthetic data would otherwise make the
# prior vanish numerically, and with it the value of a parameter the data do not determine.
SCALE_FLOOR = 0.5
MAX_ITERATIONS = 50
# Fewest calls in each half of a model's training calls for the check that its own fit pays (`_fit_model`).
MIN_HALF_CALLS = 2
DEFAULT_BASE = "charclass"
# The base whose class weights are fitted rather than taken from an estimator.
CHARCLASS = "charclass"


@dataclass(frozen=True, eq=False)
class ModelCheck:
    """How well a model's parameters, fitted on the first half of its training calls, predict the
    second half (`Calibrator._fit_model`): the absolute error of each call predicted, in tokens, in
    store order. Calibrations of different bases fitted on the same calls are compared by it, call by
    call (`calib.calibration.selection.choose_models`)."""

    errors: np.ndarray

    @property
    def calls(self) -> int:
        """The calls predicted."""
        return len(self.errors)

    @property
    def mae(self) -> float:
        """Their mean absolute error."""
        return float(self.errors.mean())


# -- numerical core -----------------------------------------------------------------------------------


def nnqp(h: np.ndarray, g: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """argmin ½ xᵀh x - gᵀx subject to x >= 0, for a positive definite h: Lawson and Hanson's
    active-set NNLS run on the normal equations (h = AᵀA, g = Aᵀb)."""
    n = len(g)
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 1e-12 * max(1.0, float(np.abs(g).max(initial=0.0)))
    max_iter = max_iter or 3 * n + 10
    w = g - h @ x
    for _ in range(max_iter):
        candidates = ~passive & (w > tol)
        if not candidates.any():
            break
        passive[int(np.argmax(np.where(candidates, w, -np.inf)))] = True
        s = np.zeros(n)
        for _ in range(max_iter):
            s = np.zeros(n)
            s[passive] = np.linalg.solve(h[np.ix_(passive, passive)], g[passive])
            if (s[passive] > 0).all():
                break
            # step back to the boundary and drop the variables that reached zero
            blocking = passive & (s <= 0)
            alpha = float(np.min(x[blocking] / (x[blocking] - s[blocking])))
            x = x + alpha * (s - x)
            passive &= x > 0
            x[~passive] = 0.0
        x = s
        w = g - h @ x
    return x


def robust_fit(
    x: np.ndarray,
    y: np.ndarray,
    prior_mean: np.ndarray,
    prior_sd: np.ndarray,
    *,
    huber_k: float = HUBER_K,
    max_iter: int = MAX_ITERATIONS,
) -> np.ndarray:
    """Non-negative, variance-weighted, Huber-reweighted least squares with a diagonal Gaussian prior.

    The prior's precision is `scale² / sd²`, with `scale` the robust residual scale, so that it is on
    the same footing as the data term (whose weights are inverse variances up to that scale).
    """
    prior_mean = np.asarray(prior_mean, dtype=float)
    base_precision = 1.0 / np.maximum(np.asarray(prior_sd, dtype=float), 1e-12) ** 2
    if len(y) == 0:
        return np.maximum(prior_mean, 0.0)

    def solve(weights: np.ndarray, scale: float) -> np.ndarray:
        precision = scale**2 * base_precision
        h = (x * weights[:, None]).T @ x + np.diag(precision)
        g = (x * weights[:, None]).T @ y + precision * prior_mean
        return nnqp(h, g)

    theta = solve(1.0 / (np.maximum(y, 0.0) + VARIANCE_FLOOR), SCALE_FLOOR)
    for _ in range(max_iter):
        pred = x @ theta
        var = np.maximum(pred, 0.0) + VARIANCE_FLOOR
        resid = (y - pred) / np.sqrt(var)
        scale = max(1.4826 * float(np.median(np.abs(resid - np.median(resid)))), SCALE_FLOOR)
        huber = np.minimum(1.0, huber_k * scale / np.maximum(np.abs(resid), 1e-300))
        new = solve(huber / var, scale)
        done = bool(np.all(np.abs(new - theta) <= 1e-9 * (1.0 + np.abs(theta))))
        theta = new
        if done:
            break
    return theta


def _relative_sd(centre: np.ndarray, relative: float) -> np.ndarray:
    return np.maximum(relative * np.abs(centre), MIN_SD)


# -- the fitted state ---------------------------------------------------------------------------------


def _normalised(frame: pl.DataFrame, column: str, normalise: Callable[[str], str]) -> pl.Expr:
    """`column` with each name normalised as the runtime normalises it (a missing name stays missing)."""
    names = frame.get_column(column).drop_nulls().unique().to_list()
    return pl.col(column).replace_strict(
        {n: normalise(n) for n in names}, default=None, return_dtype=pl.String
    )


class _TrainingSet:
    """What `Calibrator.fit` reads of the training rows of a `features` frame, gathered a batch at a
    time so that the frame itself is never in memory at once.

    The delta fit needs every call it learns from at once (medians and IRLS over all of them), but only
    as numbers: their targets, base counts and messages, their provider and model as categories
    (`learned`). The static overhead is priced with the ratios fitted from those, so the calls that
    witness it wait too (`witnesses`). Both wait on disk, in a `Spool`, while the store is read: what
    memory holds then is a batch, whatever the number of calls. Every figure is per call, kept in the
    order the rows came: the fit on the batches is the fit on their concatenation, number for number."""

    def __init__(self, sources: Sequence[str], spool: Spool) -> None:
        self.sources = list(sources)
        self.spool = spool
        self.groups: set[tuple[Any, Any]] = set()  # every (provider, model), learned from or not
        self.batches = 0

    def add(self, batch: pl.DataFrame) -> None:
        """Keep what the fit reads of a batch of training rows."""
        self._check(batch)
        frame = batch.with_columns(
            _normalised(batch, "provider", normalise_provider).alias("_provider"),
            _normalised(batch, "model", normalise_model).alias("_model"),
        )
        learned = (pl.col("status") == "ok") & pl.col("delta").is_not_null()
        if "bridged" in frame.columns:
            # a call bridged over lost usage is scored, not learned from: whether a failed stream's
            # output entered the context is a guess, and on the gemini-cli fixtures those 46 calls
            # alone pulled the model-text ratio to 0
            learned &= pl.col("bridged") == 0
        # only the columns read below are copied
        read = ["delta", "removed_known", "messages", "_provider", "_model", *self._count_columns()]
        ok = frame.lazy().filter(learned).select(c for c in read if c in frame.columns).collect()
        # reasoning that left with its reported count is known, not estimated: it moves to the target
        known = ok["removed_known"] if "removed_known" in ok.columns else pl.Series([0.0] * ok.height)
        kinds = self._kind_matrix(ok).reshape(ok.height, len(self._kind_columns()))
        numbers = pl.DataFrame(kinds, schema=self._kind_columns(), orient="row").with_columns(
            (ok["delta"].cast(pl.Float64) + known.cast(pl.Float64)).alias("_target"),
            ok["messages"].cast(pl.Float64).alias("_messages"),
            ok["_provider"].cast(pl.Categorical),
            ok["_model"].cast(pl.Categorical),
        )
        self.spool.append(_LEARNED, numbers)
        self.groups.update(frame.select("_provider", "_model").unique().iter_rows())
        self.spool.append(self.batches, frame)  # the witnesses are picked on reading (no copy now)
        self.batches += 1

    def _check(self, batch: pl.DataFrame) -> None:
        """Refuse a frame without the counts of the base's sources."""
        missing = [c for s in self.sources for c in (feature_column("a", s, g) for g in RATIO_KEYS)]
        missing = [c for c in missing if c not in batch.columns]
        if missing:
            raise UsageError(
                f"the frame has no counts for {missing[0]!r}",
                hint=f"build it with calib.scoring.chain.features(store, {self.sources!r})",
            )

    def _count_columns(self) -> list[str]:
        """The appended and removed counts of the base's sources, which the delta fit reads."""
        return [feature_column(scope, s, g) for scope in ("a", "r") for s in self.sources for g in RATIO_KEYS]

    def _kind_matrix(self, frame: pl.DataFrame) -> np.ndarray:
        """Base counts per call, source and kind group: appended minus removed (the text that left the
        context is priced like the text that entered it)."""
        if frame.height == 0:
            return np.zeros((0, len(self.sources), len(RATIO_KEYS)))
        mats = []
        for source in self.sources:
            appended = (
                frame.select(feature_column("a", source, g) for g in RATIO_KEYS).to_numpy().astype(float)
            )
            removed = [feature_column("r", source, g) for g in RATIO_KEYS]
            if all(c in frame.columns for c in removed):
                appended = appended - frame.select(removed).to_numpy().astype(float)
            mats.append(appended)
        return np.stack(mats, axis=1)

    def _kind_columns(self) -> list[str]:
        """The columns the kind matrix is kept in on disk, one per source and kind group, in its order."""
        return [f"{source}|{group}" for source in self.sources for group in RATIO_KEYS]

    def learned(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, pl.DataFrame]:
        """The calls the deltas are learned from, in the order added: targets, base counts (calls ×
        sources × kind groups, as `_kind_matrix` made them), messages, and their normalised
        `_provider` and `_model`."""
        rows = self.spool.read(_LEARNED)
        kinds = rows.select(self._kind_columns()).to_numpy(order="c")
        kinds = kinds.reshape(rows.height, len(self.sources), len(RATIO_KEYS))
        return (
            rows["_target"].to_numpy(),
            kinds,
            rows["_messages"].to_numpy(),
            rows.select("_provider", "_model"),
        )

    def witnesses(self) -> Iterator[pl.DataFrame]:
        """The calls that witness the static overhead, a batch at a time (`_static_witnesses`)."""
        for batch in range(self.batches):
            yield _static_witnesses(self.spool.read(batch))


# Where `_TrainingSet` spools the numbers of the calls learned from (each batch's rows, which hold the
# witnesses of the static overhead, are under the batch's number).
_LEARNED = "learned"


def _static_witnesses(frame: pl.DataFrame) -> pl.DataFrame:
    """The calls whose `ctx` the static overhead is read from: those with usage that an agent predicts
    (a `family`), or, in a frame without families, those with usage that did not lose it."""
    if "family" in frame.columns:
        return frame.filter(pl.col("family").is_not_null())
    return frame.filter(pl.col("ctx").is_not_null() & (pl.col("reason") != "missing_usage").fill_null(True))


class Calibrator:
    """A scikit-learn style calibration of a base estimator per provider and model.

    `fit(X)` takes the per-call frame of `calib.scoring.chain.features` (only its training rows with
    `status == "ok"` enter the delta fit, removals included, calls bridged over lost usage not; the calls of the full family give the
    static overhead per agent) and learns
    `global_`, `providers_` and `models_`; `fit_batches` learns the same from the frame's rows given a
    batch at a time, as a store of any size is read. `predict(X)` gives the calibrated `est_delta` per row;
    `to_config()` the exportable JSON document. A fitted Calibrator is also a grouped estimator for
    `calib.scoring.score` (`sources` and `for_group`).
    """

    def __init__(
        self,
        base: str = DEFAULT_BASE,
        *,
        by_kind: bool = True,
        ratio_sd: float = RATIO_SD,
        overhead_sd: float = OVERHEAD_SD,
        weight_sd: float = WEIGHT_SD,
        huber_k: float = HUBER_K,
        holdout_fraction: float = HOLDOUT_FRACTION,
    ) -> None:
        self.base = base
        self.by_kind = by_kind
        self.ratio_sd = ratio_sd
        self.overhead_sd = overhead_sd
        self.weight_sd = weight_sd
        self.huber_k = huber_k
        self.holdout_fraction = holdout_fraction

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return {
            "base": self.base,
            "by_kind": self.by_kind,
            "ratio_sd": self.ratio_sd,
            "overhead_sd": self.overhead_sd,
            "weight_sd": self.weight_sd,
            "huber_k": self.huber_k,
            "holdout_fraction": self.holdout_fraction,
        }

    @property
    def sources(self) -> list[str]:
        """The count sources the base is made of."""
        return class_sources() if self.base == CHARCLASS else [self.base]

    @property
    def classes(self) -> list[str] | None:
        """The character classes weighed (charclass base only)."""
        return [s.removeprefix(CLASS_PREFIX) for s in self.sources] if self.base == CHARCLASS else None

    # -- fitting --------------------------------------------------------------------------------------

    def fit(self, X: pl.DataFrame, y: Sequence[float] | None = None) -> Calibrator:
        """Fit on the training rows of a `calib.scoring.chain.features` frame; `y` defaults to its `delta`."""
        if y is not None:
            X = X.with_columns(pl.Series("delta", list(y), dtype=pl.Float64))
        return self.fit_batches([X])

    def fit_batches(self, batches: Iterable[pl.DataFrame]) -> Calibrator:
        """Fit on the training rows of a `features` frame given a batch at a time (as
        `calib.scoring.chain.FeatureTable.batches` reads them), with the same result as `fit` on their
        concatenation: of each batch only what the fit reads is kept, on disk (`_TrainingSet`), so
        that memory holds one batch while the store is read, then the numbers of the calls learned
        from, never the frame of a whole store."""
        fit_together([self], batches)
        return self

    def _fit_levels(self, training: _TrainingSet) -> None:
        """Fit the ratios, weights and message overhead of every level: global, then each provider seen
        in training, then each of its models, each shrunk toward the level above."""
        y_all, kinds_all, msgs_all, keys = training.learned()
        self.n_calls_ = len(y_all)
        glob = self._fit_level(kinds_all, msgs_all, y_all, parent=None)
        glob.calls = len(y_all)
        self.global_ = glob
        self.providers_: dict[str, GroupFit] = {}
        self.models_: dict[tuple[str, str], GroupFit] = {}
        self.model_checks_: dict[tuple[str, str], ModelCheck] = {}
        groups = training.groups
        for provider in sorted({p for p, _ in groups}):
            mask = (keys["_provider"] == provider).to_numpy()
            fit = self._fit_level(kinds_all[mask], msgs_all[mask], y_all[mask], parent=glob)
            fit.calls = int(mask.sum())
            self.providers_[provider] = fit
            for model in sorted({m for p, m in groups if p == provider}):
                mmask = mask & (keys["_model"] == model).to_numpy()
                mfit, check = self._fit_model(kinds_all, msgs_all, y_all, mask, mmask, parent=fit, grand=glob)
                mfit.calls = int(mmask.sum())
                self.models_[(provider, model)] = mfit
                if check is not None:
                    self.model_checks_[(provider, model)] = check
        self._runtime: Any = None

    def _fit_model(
        self,
        kinds: np.ndarray,
        msgs: np.ndarray,
        y: np.ndarray,
        provider: np.ndarray,
        model: np.ndarray,
        *,
        parent: GroupFit,
        grand: GroupFit,
    ) -> tuple[GroupFit, ModelCheck | None]:
        """Fit one model's level (rows `model`, among its provider's rows `provider`), or keep its
        provider's parameters when the model's own fit does not predict its later calls better; with
        the error of the parameters kept on those later calls (`ModelCheck`, None with too few calls).

        The check is the way an agent uses a calibration: fitted on the model's first half of calls (in
        the order the store holds them, session by session), with its provider refitted without the
        second half, each predicts the second half, and the smaller mean absolute error wins. A model
        seen in one or two sessions whose calls are explained by something the model has no term for
        (on the Codex fixtures, a fixed framing per call) otherwise bends its ratios to fit it, and
        misses big deltas on every later session."""
        own = self._fit_level(kinds[model], msgs[model], y[model], parent=parent)
        rows = np.flatnonzero(model)
        half = len(rows) // 2
        if half < MIN_HALF_CALLS:
            return own, None
        early, late = rows[:half], rows[half:]
        without_late = provider.copy()
        without_late[late] = False
        parent_early = self._fit_level(kinds[without_late], msgs[without_late], y[without_late], parent=grand)
        own_early = self._fit_level(kinds[early], msgs[early], y[early], parent=parent_early)
        own_errors = np.abs(self._predict_level(own_early, kinds[late], msgs[late]) - y[late])
        parent_errors = np.abs(self._predict_level(parent_early, kinds[late], msgs[late]) - y[late])
        if parent_errors.mean() < own_errors.mean():
            weights = None if parent.class_weights is None else dict(parent.class_weights)
            return GroupFit(dict(parent.ratios), parent.message_overhead, weights), ModelCheck(parent_errors)
        return own, ModelCheck(own_errors)

    def _predict_level(self, fit: GroupFit, kinds: np.ndarray, msgs: np.ndarray) -> np.ndarray:
        """One level's predicted deltas for calls given as `_fit_level` reads them."""
        if self.base == CHARCLASS:
            assert fit.class_weights is not None
            weights = np.array([fit.class_weights[c] for c in self.classes or []])
            base = np.einsum("nsg,s->ng", kinds, weights)
        else:
            base = kinds[:, 0, :]
        ratios = np.array([fit.ratios[g] for g in RATIO_KEYS])
        return base @ ratios + fit.message_overhead * msgs

    def _fit_level(
        self, kinds: np.ndarray, msgs: np.ndarray, y: np.ndarray, *, parent: GroupFit | None
    ) -> GroupFit:
        """Fit one level (kinds: base counts per call, source and kind group), shrunk toward `parent`
        (None: the global level)."""
        n_src = len(self.sources)
        fit = lambda x, mean, sd: robust_fit(x, y, mean, sd, huber_k=self.huber_k)  # noqa: E731
        class_weights: dict[str, float] | None = None
        if self.base == CHARCLASS:
            # stage 1: class weights and overhead with the kinds pooled
            if parent is None:
                weights0 = self._default_class_weights()
                mean1 = np.array([*weights0, 0.0])
                sd1 = np.array([*_relative_sd(weights0, GLOBAL_RATIO_SD), GLOBAL_OVERHEAD_SD])
            else:
                assert parent.class_weights is not None
                weights0 = np.array([parent.class_weights[c] for c in self.classes or []])
                mean1 = np.array([*weights0, parent.message_overhead])
                sd1 = np.array([*_relative_sd(weights0, self.weight_sd), self.overhead_sd])
            theta1 = fit(np.column_stack([kinds.sum(axis=2), msgs]), mean1, sd1)
            weights = theta1[:n_src]
            class_weights = {c: float(w) for c, w in zip(self.classes or [], weights, strict=True)}
            base = np.einsum("nsg,s->ng", kinds, weights)
            # the ratios then only rescale this level's own weights per kind: anchored at 1
            centre = np.ones(len(RATIO_KEYS))
            centre_overhead = float(theta1[n_src])
            ratio_sd, overhead_sd = self.ratio_sd, self.overhead_sd
        else:
            base = kinds[:, 0, :]
            if parent is None:
                pooled = fit(
                    np.column_stack([base.sum(axis=1), msgs]),
                    np.array([1.0, 0.0]),
                    np.array([GLOBAL_RATIO_SD, GLOBAL_OVERHEAD_SD]),
                )
                centre = np.full(len(RATIO_KEYS), float(pooled[0]))
                centre_overhead = float(pooled[1])
                # the pooled fit already used the data: kinds may move from it, the overhead barely
                ratio_sd, overhead_sd = self.ratio_sd, GLOBAL_OVERHEAD_SD
            else:
                centre = np.array([parent.ratios[g] for g in RATIO_KEYS])
                centre_overhead = parent.message_overhead
                ratio_sd, overhead_sd = self.ratio_sd, self.overhead_sd
        if self.by_kind:
            theta = fit(
                np.column_stack([base, msgs]),
                np.array([*centre, centre_overhead]),
                np.array([*_relative_sd(centre, ratio_sd), overhead_sd]),
            )
            ratios = {g: float(theta[i]) for i, g in enumerate(RATIO_KEYS)}
        else:
            mean_ratio = float(centre.mean())
            theta = fit(
                np.column_stack([base.sum(axis=1), msgs]),
                np.array([mean_ratio, centre_overhead]),
                np.array([max(ratio_sd * mean_ratio, MIN_SD), overhead_sd]),
            )
            ratios = dict.fromkeys(RATIO_KEYS, float(theta[0]))
        return GroupFit(ratios, float(theta[-1]), class_weights)

    def _default_class_weights(self) -> np.ndarray:
        defaults: Mapping[str, float] = DEFAULT_WEIGHTS
        return np.array([float(defaults.get(c, 0.25)) for c in self.classes or []])

    def _fit_static(self, training: _TrainingSet) -> None:
        """The static overhead per level and, within it, per agent (`agent`): the median of `ctx` minus
        the calibrated full-prompt estimate over the first calls of sessions, whose prompt is mostly
        that overhead and whose text the log holds entirely; a level without first calls takes the
        other calls an agent predicts in full (after a compaction or a model change), then all its
        calls with usage. Later prompts are poorer witnesses: text the log lost (a masked tool output,
        a sub-agent's unrecorded tool results) would count as overhead."""
        self._runtime = None
        parts = [self._static_residuals(rows) for rows in training.witnesses()]
        rows = pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0]

        def median(sub: pl.DataFrame) -> float | None:
            for witnesses in (sub.filter(pl.col("_first")), sub.filter(pl.col("_full")), sub):
                if witnesses.height:
                    value = witnesses["_static"].median()
                    return float(value) if isinstance(value, int | float) else None
            return None

        def by_tool(sub: pl.DataFrame) -> dict[str, float]:
            # per agent (a sub-agent, with a system prompt of its own, as `TOOL/subagent`), and per
            # agent and version where it recorded one (`TOOL@VERSION`, and its minor `TOOL@MAJOR.MINOR`:
            # the system prompt changes with versions)
            values: dict[str, float | None] = {}
            for key in ("_tool", "_version", "_minor"):
                if key not in sub.columns:
                    continue
                for name in sorted(t for t in sub[key].unique().to_list() if t):
                    values[name] = median(sub.filter(pl.col(key) == name))
            return {tool: v for tool, v in values.items() if v is not None}

        def varied(sub: pl.DataFrame) -> set[str]:
            # the agents seen in more than one version: where one is, its versions' figures say more
            # than an agent's figure alone
            if "_version" not in sub.columns:
                return set()
            counts = (
                sub.filter(pl.col("_version").is_not_null())
                .group_by("_tool")
                .agg(pl.col("_version").n_unique().alias("n"))
            )
            return {str(t) for t, n in counts.iter_rows() if n > 1}

        def within(parent: dict[str, float], own: dict[str, float], versions: set[str]) -> dict[str, float]:
            # a level's own figure of an agent is not shadowed by a version's figure from the level
            # above, unless the agent came in several versions there (the version then tells more)
            out = {**parent, **own}
            for key in parent:
                name, at, _ = key.rpartition("@")
                if at and key not in own and name in own and name not in versions:
                    del out[key]
            return out

        # An agent's system prompt differs more between agents than between models: a level without
        # calls of an agent takes that agent's figure from the level above (a config is read level by
        # level, so each level carries every agent the fit saw above it).
        self.global_.static_overhead = median(rows)
        self.global_.static_by_tool = by_tool(rows)
        for provider, pfit in self.providers_.items():
            sub = rows.filter(pl.col("_provider") == provider)
            pfit.static_overhead = median(sub) if sub.height else self.global_.static_overhead
            pfit.static_by_tool = within(self.global_.static_by_tool, by_tool(sub), varied(rows))
            for (p, model), mfit in self.models_.items():
                if p != provider:
                    continue
                msub = sub.filter(pl.col("_model") == model)
                mfit.static_overhead = median(msub) if msub.height else pfit.static_overhead
                mfit.static_by_tool = within(pfit.static_by_tool, by_tool(msub), varied(sub))
        self._runtime = None

    def _static_residuals(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Of the calls that witness the static overhead (`_TrainingSet.witnesses`), what its medians
        read: `_static`, `ctx` minus the full-prompt estimate of the levels fitted so far, whether the
        call is a session's first (`_first`) or of the full family (`_full`), its normalised provider
        and model and its agent (strings as categories: these rows are kept for every training call)."""
        full = self._predict_frame(rows, scope="f")
        has_family = "family" in rows.columns
        agent = [key for key in ("agent", "tool") if key in rows.columns][:1]
        keys: list[pl.Expr] = [pl.col(agent[0]).alias("_tool")] if agent else []
        if agent and "agent_version" in rows.columns:
            version = pl.col("agent_version")
            minor = version.str.extract(r"^([^.]*\.[^.]*)", 1)
            keys += [
                pl.when(version.is_not_null()).then(pl.col(agent[0]) + "@" + version).alias("_version"),
                pl.when(minor.is_not_null()).then(pl.col(agent[0]) + "@" + minor).alias("_minor"),
            ]
        return rows.select(
            pl.col(["_provider", "_model"]).cast(pl.Categorical),
            *(key.cast(pl.Categorical) for key in keys),
            # Float64 also for a batch without a training call (a piece of a held-out session)
            (pl.col("ctx") - pl.Series(full)).cast(pl.Float64).alias("_static"),
            (pl.col("status") == "baseline").alias("_first"),
            ((pl.col("family") == "full").fill_null(False) if has_family else pl.lit(False)).alias("_full"),
        )

    # -- use ----------------------------------------------------------------------------------------

    def _check_fitted(self) -> None:
        if not hasattr(self, "global_"):
            raise UsageError("this Calibrator is not fitted yet", hint="call fit(X) first")

    def level(self, provider: str | None, model: str | None) -> GroupFit:
        """The fitted parameters for a (provider, model): the model's, else the provider's, else global."""
        self._check_fitted()
        p, m = normalise_provider(provider), normalise_model(model)
        if (p, m) in self.models_:
            return self.models_[(p, m)]
        if p in self.providers_:
            return self.providers_[p]
        return self.global_

    def to_config(self) -> dict[str, Any]:
        """The calibration as a canonical config document (see `calib.core.config`)."""
        self._check_fitted()
        return build_config(self)

    def _calibration(self) -> Any:
        if getattr(self, "_runtime", None) is None:
            self._runtime = CalibratedEstimator.from_config(self.to_config(), name=f"calibrated:{self.base}")
        return self._runtime

    def for_group(self, provider: str | None, model: str | None) -> Any:
        """The exported parameters that apply to a (provider, model), as `calib.scoring.score` consumes them."""
        return self._calibration().for_group(provider, model)

    def _predict_frame(self, frame: pl.DataFrame, scope: str = "a") -> list[float]:
        scored = score_frame(frame, f"calibrated:{self.base}", self)
        return scored["est_delta" if scope == "a" else "est_full"].to_list()

    def predict(self, X: pl.DataFrame) -> np.ndarray:
        """Calibrated `est_delta` for every row of a `calib.scoring.chain.features` frame."""
        self._check_fitted()
        return np.asarray(self._predict_frame(X, "a"), dtype=float)


def fit_together(calibrators: Sequence[Calibrator], batches: Iterable[pl.DataFrame]) -> None:
    """Fit several calibrators (of different bases) on one reading of the same batches: each keeps
    what it reads of every batch (`Calibrator.fit_batches`), and each is fitted as if alone."""
    with contextlib.ExitStack() as stack:
        sets = [
            (c, _TrainingSet(c.sources, stack.enter_context(Spool(prefix="calib-fit-")))) for c in calibrators
        ]
        for batch in batches:
            for _, training in sets:
                training.add(batch)
            del batch  # not held while the next batch is read
        if not sets or not sets[0][1].batches:
            raise UsageError("no batch of calls to fit on", hint="pass the batches of a features frame")
        for calibrator, training in sets:
            calibrator._fit_levels(training)
            calibrator._fit_static(training)


def fit(
    store: Store,
    base: str = DEFAULT_BASE,
    *,
    holdout_fraction: float = HOLDOUT_FRACTION,
    progress: Progress | None = None,
    batch_calls: int = BATCH_CALLS,
    **params: Any,
) -> Calibrator:
    """Fit a Calibrator on the training sessions of a store (held-out sessions are left out), read
    about `batch_calls` calls at a time (`Calibrator.fit_batches`)."""
    calibrator = Calibrator(base, holdout_fraction=holdout_fraction, **params)
    with FeatureTable(
        store, calibrator.sources, progress=progress, holdout_fraction=holdout_fraction
    ) as table:
        return calibrator.fit_batches(table.batches(holdout=False, batch_calls=batch_calls))


# The package exports `fit` under this name: `calib.calibration.fit` is the module once anything imports it.
fit_calibration = fit
