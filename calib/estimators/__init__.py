"""Token estimators behind one protocol, and the registry that builds them lazily by name.

A name is either fixed (`chars4`, `cjk`, `tiktoken:o200k_base`, ...) or a family prefix with an
argument (`cjk:1.3`, `hf:/path/to/tokenizer`, `calibrated:calibration.json`). Constructors are
imported only when an estimator is asked for, so `import calib` stays light.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from calib.core.errors import CalibError, EstimatorError, UnknownEstimatorError
from calib.core.memory import give_back
from calib.estimators.base import Estimator, EstimatorSpec, files_stamp
from calib.estimators.catalog import ALL_ESTIMATORS, BUILTIN_SPECS, DEFAULT_SCORE_SET

__all__ = [
    "ALL_ESTIMATORS",
    "DEFAULT_SCORE_SET",
    "Estimator",
    "EstimatorInfo",
    "EstimatorSpec",
    "cache_version",
    "estimator_family",
    "get_estimator",
    "grouped_estimator",
    "list_estimators",
    "loaded_for_now",
    "register",
    "specs",
    "why_missing",
    "why_unusable",
]


_SPECS: dict[str, EstimatorSpec] = {spec.name: spec for spec in BUILTIN_SPECS}
_CACHE: dict[str, Estimator] = {}
_STAMPS: dict[str, tuple[tuple[int, int] | None, ...]] = {}  # the files each cached estimator read


def register(spec: EstimatorSpec) -> None:
    """Add an entry to the registry (a later entry of the same name replaces the earlier)."""
    _SPECS[spec.name] = spec


def specs() -> list[EstimatorSpec]:
    """Every registry entry, fixed names first, in registration order."""
    return sorted(_SPECS.values(), key=lambda s: s.is_family)


def _resolve(name: str) -> tuple[EstimatorSpec, str | None]:
    if name in _SPECS and not _SPECS[name].is_family:
        return _SPECS[name], None
    prefix, sep, arg = name.partition(":")
    family = _SPECS.get(prefix + ":") if sep else None
    if family is None or not arg:
        valid = ", ".join(s.name + ("ARG" if s.is_family else "") for s in specs())
        raise UnknownEstimatorError(f"unknown estimator {name!r}", hint=f"valid names: {valid}")
    return family, arg


def _call(ref: str, arg: str | None = None) -> Any:
    """Call a spec's "module:function" (with `arg`, a family's argument) or "module:function:arg"."""
    module_name, _, target = ref.partition(":")
    func_name, has_arg, fixed = target.partition(":")
    func = getattr(importlib.import_module(module_name), func_name)
    if has_arg:
        return func(fixed)
    return func() if arg is None else func(arg)


def why_missing(name: str) -> str | None:
    """Why estimator `name` cannot be used here (what to install), or None when it can; nothing is
    loaded (an unknown name raises `UnknownEstimatorError`)."""
    spec, _ = _resolve(name)
    if not spec.probe:
        return None
    reason: str | None = _call(spec.probe)
    return reason


def why_unusable(name: str) -> str | None:
    """Why estimator `name` cannot count here, or None when it can: an unknown name (a config from a
    calib with more estimators), a package to install, or a family's file that cannot be read
    (`hf:PATH` that is not there); nothing is loaded, a family's files are read to be versioned."""
    try:
        reason = why_missing(name)
        if reason is None:
            cache_version(name)
    except CalibError as exc:
        return f"{exc.what}; {exc.hint}" if exc.hint else exc.what
    return reason


def cache_version(name: str) -> str:
    """The version that keys the counts of estimator `name` in the count cache, learnt without loading
    a tokenizer when the registry says how (`EstimatorSpec.version`), else from the built estimator.

    Counting reads it first and builds the estimator only for texts it has not counted yet: a
    tokenizer costs seconds and tens of MB to load, which a store whose counts are all cached never needs.
    """
    cached = _CACHE.get(name)
    spec, arg = _resolve(name)
    if cached is None and spec.version is not None:
        return str(_call(spec.version, arg))
    return str(getattr(get_estimator(name), "version", 1))


def estimator_family(name: str) -> str:
    """The registry family of estimator `name` (`heuristic`, `tiktoken`, `hf`, ...), without building it."""
    spec, _ = _resolve(name)
    return spec.family


def grouped_estimator(name: str) -> Estimator | None:
    """The estimator `name` when it applies its counts per (provider, model) (a calibration, with
    `for_group` and `sources`), else None without building it (it is then the counts of `name`)."""
    spec, _ = _resolve(name)
    if spec.family != "calibrated":
        return None
    return get_estimator(name)


@contextmanager
def loaded_for_now() -> Iterator[None]:
    """Estimators first built inside the block are dropped from the cache when it ends (those built
    before stay): counting loads tokenizers of tens of MB each that the rest of a command never uses."""
    before = set(_CACHE)
    try:
        yield
    finally:
        dropped = set(_CACHE) - before
        for name in dropped:
            del _CACHE[name]
            _STAMPS.pop(name, None)
        if dropped:
            gc.collect()  # a tokenizer may sit in a reference cycle
            give_back()  # its pages go back to the system, not to the next phase's peak


def get_estimator(name: str) -> Estimator:
    """The estimator registered under `name`, built on first use and cached (built again when a file
    it read has changed since)."""
    cached = _CACHE.get(name)
    if cached is not None:
        files = getattr(cached, "files", None)
        if not files or _STAMPS.get(name) == files_stamp(files):
            return cached
    spec, arg = _resolve(name)
    module_name, _, func_name = spec.factory.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        need = spec.needs or exc.name or "a missing package"
        raise EstimatorError(
            f"estimator {name!r} needs {need}, which is not installed", hint=f"pip install {need}"
        ) from exc
    factory: Callable[..., Estimator] = getattr(module, func_name)
    estimator = factory(arg) if spec.is_family else factory()
    _CACHE[name] = estimator
    files = getattr(estimator, "files", None)
    if files:
        _STAMPS[name] = files_stamp(files)
    return estimator


@dataclass(frozen=True, slots=True)
class EstimatorInfo:
    """One line of `calib estimators`: a registry entry and whether it can be used here."""

    name: str
    family: str
    description: str
    available: bool
    reason: str | None  # why it is unavailable, with what to install

    def to_dict(self) -> dict[str, object]:
        """The entry as JSON-ready data."""
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "available": self.available,
            "reason": self.reason,
        }


def list_estimators() -> list[EstimatorInfo]:
    """Every registered estimator and family, with whether it is usable here (nothing is loaded)."""
    infos = []
    for spec in specs():
        reason: str | None = _call(spec.probe) if spec.probe else None
        infos.append(EstimatorInfo(spec.name, spec.family, spec.description, reason is None, reason))
    return infos
