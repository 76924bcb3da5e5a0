"""A fitted calibration exported as its config document (the format itself is `calib.core.config`).

The calibrator is read through `Fitted`, the attributes `build_config` needs, so that the fit
(`calib.calibration.fit`, which exports itself to apply its parameters exactly as the runtime would)
can import this module and not the other way round.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from calib.core.config import canonical, dumps, validate_config
from calib.core.outputs import OutputKind, Sniff, write_output
from calib.core.records import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS
from calib.core.version import __version__
from calib.runtime import RUNTIME_BASES

# Larger than any config calib writes (tens of kB): a file this big is read no further to be recognised.
_MAX_CONFIG_BYTES = 64 << 20


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


def _models(calibrator: Fitted, provider: str, classes: list[str] | None) -> dict[str, Any]:
    """The parameters of each of `provider`'s models a calibrator fitted."""
    return {
        model: _params(fit, classes)
        for (p, model), fit in sorted(calibrator.models_.items())
        if p == provider and model
    }


def build_config(
    calibrator: Fitted,
    *,
    preferred: Mapping[str, Fitted] | None = None,
    model_bases: Mapping[tuple[str, str], Fitted] | None = None,
    selection: dict[str, Any] | None = None,
    created_at: datetime | None = None,
) -> dict[str, Any]:
    """The config document of a fitted calibrator (canonical values, validated).

    A calibrator of a base the runtimes compute without a tokenizer (charclass, chars4, cjk) writes a
    config where `preferred` (provider -> a calibrator of another base, fitted on the same sessions)
    gives a provider its preferred base, `model_bases` ((provider, model) -> a calibrator of a third
    base) gives a model under a preferred provider a base of its own, and `selection` says in the
    `fit` record how each provider's base was chosen. A calibrator of a tokenizer base alone writes a
    version 1 config: one base for every provider, with no tokenizer-free fallback.

    A config is written at the lowest schema version that holds it (2 unless a model has a base of
    its own), so that a runtime vendored before version 3 still reads every config that needs nothing
    newer."""
    classes = calibrator.classes
    preferred = preferred or {}
    model_bases = model_bases or {}
    own_base = calibrator.base in RUNTIME_BASES
    if preferred and not own_base:
        raise ValueError(f"a preferred base needs a config whose own base is one of {RUNTIME_BASES}")
    if any(p not in preferred for p, _ in model_bases):
        raise ValueError("a model's own base needs its provider to have a preferred base")
    providers: dict[str, Any] = {}
    for provider, level in sorted(calibrator.providers_.items()):
        entry: dict[str, Any] = {
            "params": _params(level, classes),
            "models": _models(calibrator, provider, classes),
        }
        other = preferred.get(provider)
        if other is not None:
            own = other.providers_[provider]
            models = _models(other, provider, None)
            # a model the other calibrator did not see (it may be fitted on a sample of the sessions)
            # takes its provider's parameters, as a fit with no call of the model gives: the preferred
            # base then knows every model the config names
            for model in entry["models"]:
                models.setdefault(model, {**_params(own, None), "calls": 0})
            for (p, model), third in model_bases.items():
                if p == provider:
                    models[model] = {**_params(third.models_[(p, model)], None), "base": third.base}
            entry["preferred"] = {
                "base": other.base,
                "params": _params(own, None),
                "models": dict(sorted(models.items())),
            }
        providers[provider or "unknown"] = entry
    fit = {**calibrator.get_params(), "calls": calibrator.n_calls_, "calib_version": __version__}
    if selection is not None:
        fit["selection"] = selection
    doc: dict[str, Any] = {
        "schema_version": (3 if model_bases else 2) if own_base else 1,
        "base": calibrator.base,
        "kind_groups": dict(KIND_GROUPS),
        "ratio_groups": list(RATIO_KEYS),
        "default_group": DEFAULT_KIND_GROUP,
        "default": _params(calibrator.global_, classes),
        "providers": providers,
        "fit": fit,
    }
    if classes is not None:
        doc["classes"] = list(classes)
    if created_at is not None:
        doc["created_at"] = created_at.isoformat(timespec="seconds")
    doc = canonical(doc)
    validate_config(doc)
    return doc


def _foreign_config(path: Path) -> str | None:
    """None when `path` holds a calibration config calib wrote (of any schema version), else why not.

    Recognised by its content, not validated: a config of an older calib may be replaced by a new one."""
    reason = "a file that is not a calibration config"
    try:
        if path.stat().st_size > _MAX_CONFIG_BYTES:
            return reason
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return reason
    known = isinstance(doc, dict) and isinstance(doc.get("schema_version"), int)
    return None if known and {"base", "default", "providers"} <= doc.keys() else reason


# `calib fit --out`, the config in `calib export --runtime`'s folder and in a report folder.
CONFIG_OUTPUT = OutputKind(
    "the calibration config", _foreign_config, hint="name a new file or an earlier calibration config"
)


def export_config(
    calibrator: Fitted,
    path: str | os.PathLike[str] | None = None,
    *,
    created_at: datetime | None = None,
    store: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Build the config of a fitted calibrator and, given a path, write it there (`write_config`)."""
    doc = build_config(calibrator, created_at=created_at)
    if path is not None:
        write_config(doc, path, store=store)
    return doc


def write_config(
    doc: dict[str, Any],
    path: str | os.PathLike[str],
    *,
    store: str | os.PathLike[str] | None = None,
    sniff: Sniff | None = None,
) -> Path:
    """Write a config document to `path` whole, refusing (`UsageError`) the store `store`, and any
    existing file but a calibration config (see `calib.core.outputs`; `sniff` names an agent's session)."""
    return write_output(path, dumps(doc), CONFIG_OUTPUT, store=store, sniff=sniff)
