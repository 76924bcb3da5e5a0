"""The exported calibration: a versioned, canonical JSON document, its JSON Schema, and loading it back.

Layout (schema version 1, `calib/schema/calibration.schema.json`):

    {"schema_version": 1, "base": "charclass", "classes": [...],        # classes: charclass base only
     "kind_groups": {"tool_result": "tool", ...}, "ratio_groups": ["model", "tool", "user"],
     "default_group": "user",
     "default": PARAMS,
     "providers": {"google": {"params": PARAMS, "models": {"gemini-2.5-pro": PARAMS}}},
     "fit": {...how it was fitted...}}
    PARAMS = {"ratios": {"model": r, "tool": r, "user": r}, "message_overhead": o,
              "class_weights": {...}, "static_overhead": s, "calls": n}

Canonical: keys sorted, floats rounded to 6 significant digits, no timestamp unless asked for, so the
same fit always writes the same bytes. Lookup is model -> provider -> default on normalised names
(`normalise_model`): that logic lives in `calib.runtime`, the stdlib-only reader agents embed.
"""

from __future__ import annotations

import json
import math
import os
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calib.core.errors import ConfigError
from calib.runtime import (
    SCHEMA_VERSION,
    CalibrationError,
    normalise_model,
    normalise_provider,
)
from calib.runtime import validate as validate_structure
from calib.scoring.score import DEFAULT_KIND_GROUP, KIND_GROUPS, RATIO_KEYS

if TYPE_CHECKING:
    from calib.calibration.fit import Calibrator, GroupFit

__all__ = [
    "SCHEMA_VERSION",
    "build_config",
    "dumps",
    "export_config",
    "load_config",
    "normalise_model",
    "normalise_provider",
    "schema",
    "validate_config",
]

SIGNIFICANT_DIGITS = 6


def _round(value: float) -> float:
    if not math.isfinite(value):
        raise ConfigError(f"cannot export a non-finite number ({value})", hint="the fit diverged; report it")
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return 0.0 if rounded == 0 else rounded  # no -0.0


def _canonical(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return _round(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    raise ConfigError(f"cannot export a {type(value).__name__} in a calibration config")


def _params(level: GroupFit, classes: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ratios": {g: level.ratios[g] for g in RATIO_KEYS},
        "message_overhead": level.message_overhead,
        "calls": level.calls,
    }
    if level.static_overhead is not None:
        out["static_overhead"] = level.static_overhead
    if classes is not None:
        assert level.class_weights is not None
        out["class_weights"] = {c: level.class_weights[c] for c in classes}
    return out


def build_config(calibrator: Calibrator, *, created_at: datetime | None = None) -> dict[str, Any]:
    """The config document of a fitted Calibrator (canonical values, validated)."""
    from calib import __version__

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
    doc = _canonical(doc)
    validate_config(doc)
    return doc


def dumps(doc: dict[str, Any]) -> str:
    """The canonical text of a config: sorted keys, two-space indent, UTF-8, final newline."""
    return json.dumps(_canonical(doc), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def export_config(
    calibrator: Calibrator, path: str | os.PathLike[str] | None = None, *, created_at: datetime | None = None
) -> dict[str, Any]:
    """Build the config of a fitted Calibrator and, given a path, write it there atomically."""
    doc = build_config(calibrator, created_at=created_at)
    if path is not None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(dumps(doc), encoding="utf-8")
        os.replace(tmp, target)
    return doc


def schema() -> dict[str, Any]:
    """The JSON Schema of calibration configs shipped in the package."""
    text = (
        resources.files("calib.calibration")
        .joinpath("schema/calibration.schema.json")
        .read_text(encoding="utf-8")
    )
    result: dict[str, Any] = json.loads(text)
    return result


def validate_config(doc: Any, *, path: str | None = None) -> None:
    """Check a config against the JSON Schema (when jsonschema is installed) and the runtime's rules."""
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(schema())
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path) or "(top level)"
            raise ConfigError(
                f"invalid calibration config at {where}: {first.message}",
                path=path,
                hint="re-export it with `calib fit`",
            )
    try:
        validate_structure(doc)
    except CalibrationError as exc:
        raise ConfigError(
            f"invalid calibration config: {exc}", path=path, hint="re-export it with `calib fit`"
        ) from None


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a calibration config file."""
    target = Path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"cannot read the calibration config: {exc.strerror}",
            path=str(target),
            hint="run `calib fit` to write one",
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not valid JSON: {exc.msg}", path=str(target), line=exc.lineno) from None
    validate_config(doc, path=str(target))
    result: dict[str, Any] = doc
    return result
