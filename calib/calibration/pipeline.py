"""`calib fit`, the main job: ingest -> score -> fit -> export -> summary, in one function."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from calib.calibration.export import CONFIG_OUTPUT, build_config, write_config
from calib.calibration.fit import Calibrator, fit_together
from calib.calibration.selection import (
    AUTO,
    SELECTION_CALLS,
    Choice,
    choose,
    choose_models,
    figures_by_provider,
    plan,
    reference,
)
from calib.core.errors import UsageError
from calib.core.figures import round_figures
from calib.core.home import expand_home
from calib.core.outputs import check_output
from calib.core.progress import Progress
from calib.core.spool import Spool
from calib.estimators.calibrated import CalibratedEstimator
from calib.importers import sniff_file
from calib.ingest.pipeline import given_paths
from calib.ingest.pipeline import ingest as run_ingest
from calib.ingest.result import IngestResult
from calib.ingest.sources import default_paths
from calib.scoring.chain import BATCH_CALLS, HOLDOUT_FRACTION, FeatureTable, session_sample
from calib.scoring.score import SummarySpool, score_frame
from calib.store import default_db_path
from calib.store.store import open_store

DEFAULT_OUT = "calibration.json"
# The phases `run_fit` reports to its progress once the sessions are ingested and the texts counted:
# fitting (on the whole store), then, on a sample of a big store, fitting and comparing the bases.
FITTING = "fitting"
COMPARING = "comparing bases"

# Figures compared before (the base estimator as it is) and after calibration, on held-out sessions:
# the scored ones (incremental calls whose chain holds) and the end-to-end ones (every call with usage,
# each predicted as an agent would, breaks included; the full-prompt family among them).
BEFORE_AFTER_FIGURES = (
    "delta_mae",
    "delta_bias",
    "ctx_err_p50",
    "ctx_err_p90",
    "ctx_err_p99",
    "e2e_err_p50",
    "e2e_err_p90",
    "e2e_err_p99",
    "full_err_p50",
    "full_err_p90",
)


@dataclass
class FitReport:
    """What `calib fit` did: the ingest, the calls used, the bases chosen, the config written and
    held-out figures."""

    base: str  # as asked: `auto` (chosen per provider) or the base forced
    before: str  # the estimator the calibration is compared with: plain o200k_base, or the base as it is
    out: str | None
    config: dict[str, Any]
    train_calls: int
    holdout_calls: int
    holdout_sessions: int
    rows: list[dict[str, Any]] = field(default_factory=list)  # per provider/model, before vs after
    ingest: IngestResult | None = None
    choices: dict[str, Choice] = field(default_factory=dict)  # per provider, the base it got and why
    skipped: dict[str, str] = field(default_factory=dict)  # candidate bases that do not load here, and why
    compared: tuple[str, ...] = ()  # the bases fitted and compared, the fallback first
    # the sessions the bases were fitted and compared on, when a sample of the store (else None)
    sample_sessions: int | None = None
    # with no path given: each agent folder read, its agents and the sessions the store holds from it
    folders: list[dict[str, Any]] = field(default_factory=list)

    @property
    def fallback(self) -> str:
        """The config's own base, which needs no tokenizer (the first base compared)."""
        return self.compared[0] if self.compared else self.base

    @property
    def bases(self) -> dict[str, str]:
        """Provider -> the base its calibration counts with."""
        return {p: c.base for p, c in sorted(self.choices.items())}

    def to_dict(self) -> dict[str, Any]:
        """The `calib fit --json` document."""
        return {
            "base": self.base,
            "fallback": self.fallback,
            "bases": self.bases,
            "selection": {p: c.to_dict() for p, c in sorted(self.choices.items())},
            "compared": list(self.compared),
            "sample_sessions": self.sample_sessions,
            "folders": self.folders,
            "skipped": dict(sorted(self.skipped.items())),
            "before": self.before,
            "out": self.out,
            "train_calls": self.train_calls,
            "holdout_calls": self.holdout_calls,
            "holdout_sessions": self.holdout_sessions,
            "models": self.rows,
            "ingest": self.ingest.to_dict() if self.ingest is not None else None,
            "config": self.config,
        }


def run_fit(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    db: str | os.PathLike[str] | None = None,
    base: str = AUTO,
    candidates: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = DEFAULT_OUT,
    holdout_fraction: float = HOLDOUT_FRACTION,
    ingest: bool = True,
    format: str | None = None,
    progress: Progress | None = None,
    batch_calls: int = BATCH_CALLS,
    selection_calls: int = SELECTION_CALLS,
    **params: Any,
) -> FitReport:
    """Ingest `paths` (or the agents' default folders), fit a calibration of each candidate base on
    the training sessions, give each provider the base that counts it best on the held-out sessions
    (`calib.calibration.selection`; `base` other than `auto` forces one), write the config to `out`
    (None: do not write) and compare the result with plain o200k_base (or the base forced, as it is)
    on the held-out sessions, per provider and model. `candidates` replaces the default candidates.

    In a store of more than `selection_calls` calls of a provider the candidate bases are fitted and
    compared on a stable sample of its sessions of about that many calls per provider
    (`session_sample`), so that a tokenizer
    counts a bounded share of the store; the tokenizer-free fallback is fitted on every training
    session, and the held-out figures are those of the sample's held-out sessions.

    The store is read once, about `batch_calls` calls at a time (`_FitPass`): memory holds a batch and
    the numbers the fit learns from, whatever the store's size.

    `out` is refused (`UsageError`) before any work when it is the store, or an existing file but a
    calibration config (`calib.core.outputs.check_output`); it is written once everything else has
    succeeded, so a failed fit writes nothing."""
    out = expand_home(out) if out is not None else None  # a `~user` naming nobody fails before the ingest
    if not 0 <= holdout_fraction < 1:
        raise UsageError(f"holdout fraction must be in [0, 1), got {holdout_fraction}")
    if base.startswith("calibrated:"):
        raise UsageError(
            "a calibrated estimator cannot be the base of a calibration", hint="use e.g. --base charclass"
        )
    given = given_paths(paths)  # what is not a path, or an empty one, fails before the store opens
    store_path = expand_home(db) if db is not None else default_db_path()
    if out is not None:
        check_output(out, CONFIG_OUTPUT, store=store_path, sniff=sniff_file)  # not after a long fit
    bases = plan(base, candidates)
    calibrators = {b: Calibrator(b, holdout_fraction=holdout_fraction, **params) for b in bases.bases}
    fallback = calibrators[bases.fallback]
    before, after = reference(bases), "calibrated"  # plain o200k (or the base as it is) against the result
    held = holdout_fraction > 0  # else the comparison runs on the training sessions
    with open_store(db) as store:
        ingested = None
        roots = [] if given else default_paths()
        folders: list[dict[str, Any]] = []
        if ingest and (given or roots):
            ingested = run_ingest(given, store=store, format=format, progress=progress)
            folders = _sessions_under(store, roots)
        elif given:
            raise UsageError("paths given with ingest turned off", hint="drop the paths or allow ingest")
        # past `selection_calls`, the candidates are fitted and compared on a sample of sessions, so
        # that a tokenizer counts a bounded share of a big store; the fallback is fitted on all of it
        sample = session_sample(store, selection_calls) if bases.candidates else None
        whole = _Tally()
        sources = sorted({before, *(s for c in calibrators.values() for s in c.sources)})
        if sample is not None:
            with FeatureTable(
                store, fallback.sources, progress=progress, holdout_fraction=holdout_fraction
            ) as table:
                batches = table.batches(batch_calls=batch_calls, label=FITTING)
                fit_together([fallback], (whole.add(b.filter(~pl.col("holdout"))) for b in batches))
        with (
            FeatureTable(
                store, sources, progress=progress, holdout_fraction=holdout_fraction, sessions=sample
            ) as table,
            _FitPass(before, held=held) as reading,
        ):
            label = FITTING if sample is None else COMPARING
            batches = table.batches(batch_calls=batch_calls, label=label)  # reported to `progress`
            fitting = [c for name, c in calibrators.items() if sample is None or name != bases.fallback]
            fit_together(fitting, reading.training(batches))
            if sample is None:
                whole = reading.train
            if not whole.calls or not reading.train.calls:
                raise UsageError(
                    "no scorable calls to fit on (every call is a baseline, a chain break or held out)",
                    hint="ingest more sessions, or lower --holdout",
                )
            for name, calibrator in calibrators.items():
                reading.score(f"calibrated:{name}", calibrator)
            fitted = {name: set(c.providers_) for name, c in calibrators.items()}
            figures = figures_by_provider(reading.summary(per_provider=True))
            choices = choose(fallback.providers_, figures, bases, fitted)
            preferred = {p: calibrators[c.base] for p, c in choices.items() if c.base != bases.fallback}
            checks = {name: c.model_checks_ for name, c in calibrators.items()}
            routed = choose_models(choices, checks, bases)
            model_bases = {key: calibrators[c.base] for key, c in routed.items()}
            selection = {p: c.to_dict() for p, c in choices.items()}
            config = build_config(fallback, preferred=preferred, model_bases=model_bases, selection=selection)
            calibration = CalibratedEstimator.from_config(config, name=after)
            reading.score(after, calibration)
            summary = reading.summary()
    if out is not None:
        write_config(config, out, store=store_path, sniff=sniff_file)
    groups = whole.groups | reading.train.groups | reading.compared.groups
    rows = round_figures(before_after(summary, before, after, calibration, groups))
    return FitReport(
        base=base,
        before=before,
        out=str(Path(out)) if out is not None else None,
        config=config,
        train_calls=whole.calls,
        holdout_calls=reading.compared.calls if held else 0,
        holdout_sessions=reading.compared.sessions if held else 0,
        rows=rows,
        ingest=ingested,
        choices=choices,
        skipped=dict(bases.skipped),
        compared=bases.bases,
        sample_sessions=len(sample) if sample is not None else None,
        folders=folders,
    )


def _sessions_under(store: Any, roots: Sequence[Path]) -> list[dict[str, Any]]:
    """Per default agent folder read, the agents whose sessions the store holds from under it, and how
    many sessions."""
    found = []
    for root in roots:
        prefix = str(root).rstrip(os.sep) + os.sep
        rows = store.con.execute(
            "SELECT tool, count(*) FROM sessions WHERE starts_with(source_path, $p) GROUP BY tool ORDER BY tool",
            {"p": prefix},
        ).fetchall()
        found.append(
            {"path": str(root), "tools": [t for t, _ in rows], "sessions": sum(int(n) for _, n in rows)}
        )
    return found


@dataclass
class _Tally:
    """What `run_fit` reports of rows it reads a batch at a time: their scorable calls (`status ==
    "ok"`), their sessions (a batch holds whole sessions, or a piece of one long session that goes on
    in the next batch) and their (provider, model) groups."""

    calls: int = 0
    sessions: int = 0
    groups: set[tuple[str | None, str | None]] = field(default_factory=set)
    _last: str | None = None  # the last session counted, which the next batch may go on with

    def add(self, rows: pl.DataFrame) -> pl.DataFrame:
        """Count `rows` in, and hand them on."""
        self.calls += int((rows.get_column("status") == "ok").sum())
        uids = rows.get_column("session_uid")
        if len(uids):
            self.sessions += uids.n_unique() - (1 if uids[0] == self._last else 0)
            self._last = uids[-1]
        self.groups.update(rows.select("provider", "model").unique().iter_rows())
        return rows


class _FitPass:
    """`run_fit`'s one reading of the store, a batch of sessions at a time (`training`): the training
    rows go on to the fit, while the rows the calibrations are compared on (the held-out sessions, or
    the training ones when none are held out) are scored by the reference at once and wait on disk
    until the calibrations are fitted to score them too (`score`, then `summary`).

    One pass rather than one per split: `FeatureTable` builds a batch from a range of session uids, and
    a batch of held-out sessions alone would span the range of the whole store's."""

    def __init__(self, before: str, *, held: bool) -> None:
        self.before, self.held = before, held
        self.train, self.compared = _Tally(), _Tally()
        self._figures = SummarySpool(prefix="calib-fit-")
        self._rows = Spool(prefix="calib-fit-rows-")
        self._batches = 0

    def __enter__(self) -> _FitPass:
        return self

    def __exit__(self, *exc: object) -> None:
        self._figures.close()
        self._rows.close()

    def training(self, batches: Iterable[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        """The training rows of each batch; the compared rows are kept on the way."""
        for batch in batches:
            self._compare(batch.filter(pl.col("holdout")) if self.held else batch)
            yield self.train.add(batch.filter(~pl.col("holdout")))

    def _compare(self, rows: pl.DataFrame) -> None:
        """Score `rows` by the base and keep them until the calibration can score them too."""
        self.compared.add(rows)
        self._figures.add(self.before, score_frame(rows, self.before))
        self._rows.append(self._batches, rows)
        self._batches += 1

    def score(self, name: str, calibration: Calibrator | CalibratedEstimator) -> None:
        """Score the compared rows by `calibration` (fitted meanwhile), as the estimator `name`."""
        for batch in range(self._batches):
            self._figures.add(name, score_frame(self._rows.read(batch), name, calibration))

    def summary(self, *, per_provider: bool = False) -> pl.DataFrame:
        """`summarise` of the compared rows by every estimator scored, per provider and model (or, with
        `per_provider`, per provider)."""
        return self._figures.summary(per_provider=per_provider)


def before_after(
    summary: pl.DataFrame,
    before: str,
    after: str,
    calibration: Calibrator | CalibratedEstimator,
    groups: set[tuple[str | None, str | None]] | None = None,
) -> list[dict[str, Any]]:
    """Per (provider, model), the figures of `before` and `after` side by side from a `summarise`
    frame, with the config level whose parameters apply; `groups` (default: those in `summary`) are
    listed in provider and model order, a group without scored calls with its figures None."""
    keyed = {(r["estimator"], r["provider"], r["model"]): r for r in summary.to_dicts()}
    if groups is None:
        groups = {(p, m) for _, p, m in keyed}
    rows = []
    for provider, model in sorted(groups, key=lambda k: (k[0] or "", k[1] or "")):
        b = keyed.get((before, provider, model), {})
        a = keyed.get((after, provider, model), {})
        group = calibration.for_group(provider, model)
        row: dict[str, Any] = {
            "provider": provider,
            "model": model,
            "calls": a.get("calls", 0),
            "e2e_calls": a.get("e2e_calls", 0),
            "coverage": a.get("coverage"),
            "level": group.level,
            "base": getattr(group, "base", None) or getattr(calibration, "base", None),
        }
        for figure in BEFORE_AFTER_FIGURES:
            row[f"{figure}_before"] = b.get(figure)
            row[f"{figure}_after"] = a.get(figure)
        rows.append(row)
    return rows
