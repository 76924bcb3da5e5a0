"""A fitted calibration exported as its config document (the format itself is `calib.core.config`).

The calibrator is read through `Fitted`, the attributes `build_config` needs, so that the fit
(`calib.calibration.fit`, which exports itself to apply its parameters exactly as the runtime would)
can import this module and not the other way round.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from calib.core.config import SCHEMA_VERSION, canonical, dumps, validate_config
from calib.core.paths import expand_home
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.core.version import __version__


@dataclass(slots=True)
class GroupFit:
    """Calibration of one level (global, a provider or a model): the PARAMS of the config."""

    ratios: dict[str, float]
    message_overhead: float
    class_weights: dict[str, float] | None = None
    calls: int = 0
    static_overhead: float | None = None
    static_by_tool: dict[str, float] = field(default_factory=dict)  # the static overhead per agent


class Fitted(Protocol):
    """What a fitted calibrator offers the export (`calib.calibration.fit.Calibrator` is one)."""

    base: str
    global_: GroupFit
    providers_: dict[str, GroupFit]
    models_: dict[tuple[str, str], GroupFit]
    n_calls_: int

    @property
    def classes(self) -> list[str] | None: ...

    def get_params(self) -> dict[str, Any]: ...


def _params(level: GroupFit, classes: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ratios": {g: level.ratios[g] for g in RATIO_KEYS},
        "message_overhead": level.message_overhead,
        "calls": level.calls,
    }
    if level.static_overhead is not None:
        out["static_overhead"] = level.static_overhead
    if level.static_by_tool:
        out["static_overhead_by_tool"] = {t: level.static_by_tool[t] for t in sorted(level.static_by_tool)}
    if classes is not None:
        assert level.class_weights is not None
        out["class_weights"] = {c: level.class_weights[c] for c in classes}
    return out


def build_config(calibrator: Fitted, *, created_at: datetime | None = None) -> dict[str, Any]:
    """The config document of a fitted calibrator (canonical values, validated)."""
    classes = calibrator.classes
    providers: dict[str, Any] = {}
    for provider, level in sorted(calibrator.providers_.items()):
        models = {
            model: _params(fit, classes)
            for (p, model), fit in sorted(calibrator.models_.items())
            if p == provider and model
        }
        providers[provider or "unknown"] = {"params": _params(level, classes), "models": models}
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "base": calibrator.base,
        "kind_groups": dict(KIND_GROUPS),
        "ratio_groups": list(RATIO_KEYS),
        "default_group": DEFAULT_KIND_GROUP,
        "default": _params(calibrator.global_, classes),
        "providers": providers,
        "fit": {**calibrator.get_params(), "calls": calibrator.n_calls_, "calib_version": __version__},
    }
    if classes is not None:
        doc["classes"] = list(classes)
    if created_at is not None:
        doc["created_at"] = created_at.isoformat(timespec="seconds")
    doc = canonical(doc)
    validate_config(doc)
    return doc


def export_config(
    calibrator: Fitted, path: str | os.PathLike[str] | None = None, *, created_at: datetime | None = None
) -> dict[str, Any]:
    """Build the config of a fitted calibrator and, given a path, write it there atomically."""
    doc = build_config(calibrator, created_at=created_at)
    if path is not None:
        target = expand_home(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(dumps(doc), encoding="utf-8")
        os.replace(tmp, target)
    return doc
