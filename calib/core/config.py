"""The calibration config document: its JSON Schema, validation, canonical text and reading.

Every layer that touches a config shares this one definition: the `calibrated:PATH` estimator reads
it, `calib.calibration.export` writes it, the report hashes its canonical text, and `calib.runtime`
(the stdlib-only copy agents embed) reads the same document.

Layout (schema version 2, `calib/core/calibration.schema.json`):

    {"schema_version": 2, "base": "charclass", "classes": [...],        # classes: charclass base only
     "kind_groups": {"tool_result": "tool", ...}, "ratio_groups": ["model", "tool", "user"],
     "default_group": "user",
     "default": PARAMS,
     "providers": {"google": {"params": PARAMS, "models": {"gemini-2.5-pro": PARAMS}},
                   "openai": {"params": PARAMS, "models": {...},
                              "preferred": {"base": "tiktoken:o200k_base", "params": PARAMS,
                                            "models": {"gpt-5": PARAMS}}}},
     "fit": {...how it was fitted, and `selection`: how each provider's base was chosen...}}

In version 2 the config's own `base` needs no tokenizer (charclass, chars4 or cjk) and every provider
has parameters for it; `preferred` gives a provider a better base with parameters of its own (no class
weights), which a runtime uses when it can count that base (see `calib.runtime`). Version 3 adds a `base` to the
parameters of a model under `preferred` (that model counts with a tokenizer of its own; without its
counter, its tokenizer-free parameters answer); a config is written at version 3 only when a model has
one. Version 1 (one base, possibly a tokenizer, for every provider, no `preferred`) is still read, and
is what a calibrator of a tokenizer base alone writes.
    PARAMS = {"ratios": {"model": r, "tool": r, "user": r}, "message_overhead": o,
              "class_weights": {...}, "static_overhead": s,
              "static_overhead_by_tool": {"gemini-cli": s, "opencode": s, ...}, "calls": n}

`static_overhead` (optional) is the prompt no part accounts for (system prompt and tool schemas), all
agents pooled; `static_overhead_by_tool` (optional) the same per agent (`tool` name), which the
runtime prefers for that agent's prompts. Both may be any finite number.

Canonical: keys sorted, floats rounded to 6 significant digits (`calib.core.figures`), no timestamp
unless asked for, so the same fit always writes the same bytes. Lookup is model -> provider ->
default on normalised names (`normalise_model`): that logic lives in `calib.runtime`.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from typing import Any

from calib.core.errors import ConfigError
from calib.core.figures import round_figure
from calib.core.home import expand_home
from calib.core.jsonfile import read_json_file
from calib.runtime import (
    SCHEMA_VERSION,
    CalibrationError,
    normalise_model,
    normalise_provider,
)
from calib.runtime import validate as validate_structure

__all__ = [
    "CONFIG_FIX",
    "CONFIG_NAME",
    "SCHEMA_VERSION",
    "canonical",
    "dumps",
    "load_config",
    "normalise_model",
    "normalise_provider",
    "preferred_bases",
    "schema",
    "validate_config",
]

# How a message names a config file, and what to do when its content is wrong.
CONFIG_NAME = "the calibration config"
CONFIG_FIX = "re-export it with `calib fit`"


def canonical(value: Any) -> Any:
    """`value` with every float rounded as figures are; a non-finite number or an unknown type raises."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        rounded = round_figure(value)
        if rounded is None:
            raise ConfigError(
                f"cannot export a non-finite number ({value})", hint="the fit diverged; report it"
            )
        return rounded
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    raise ConfigError(f"cannot export a {type(value).__name__} in a calibration config")


def dumps(doc: dict[str, Any]) -> str:
    """The canonical text of a config: sorted keys, two-space indent, UTF-8, final newline."""
    return json.dumps(canonical(doc), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def schema() -> dict[str, Any]:
    """The JSON Schema of calibration configs shipped in the package."""
    text = resources.files("calib.core").joinpath("calibration.schema.json").read_text(encoding="utf-8")
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


def preferred_bases(doc: dict[str, Any]) -> dict[str, str]:
    """The tokenizers a config names, by who prefers them: `provider` -> its preferred base (version
    2), `provider/model` -> a model's own base (version 3)."""
    found: dict[str, str] = {}
    for provider, entry in doc.get("providers", {}).items():
        if "preferred" in entry:
            found[provider] = entry["preferred"]["base"]
            for model, params in entry["preferred"].get("models", {}).items():
                if "base" in params:
                    found[f"{provider}/{model}"] = params["base"]
    return found


def load_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate a calibration config file (`~` expanded)."""
    _, doc = read_json_file(path, CONFIG_NAME, hint="run `calib fit` to write one", fix=CONFIG_FIX)
    validate_config(doc, path=str(expand_home(path)))
    result: dict[str, Any] = doc
    return result
