"""calib: how many tokens an AI coding agent's context really holds.

The public API. Heavy modules (duckdb, polars, tokenizers, matplotlib) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calib.errors import CalibError, ConfigError, EstimatorError, InputError, StoreError, UsageError

__version__ = "0.1.0"

__all__ = [
    "CalibError",
    "ConfigError",
    "EstimatorError",
    "InputError",
    "Store",
    "StoreError",
    "UsageError",
    "get_estimator",
    "ingest",
    "open_store",
]

# public name -> module that defines it
_LAZY = {
    "Store": "calib.store",
    "open_store": "calib.store",
    "ingest": "calib.ingest",
    "get_estimator": "calib.estimators",
}

if TYPE_CHECKING:
    from calib.estimators import get_estimator
    from calib.ingest import ingest
    from calib.store import Store, open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'calib' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
