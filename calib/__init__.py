"""calib: how many tokens an AI coding agent's context really holds.

The public API. Heavy modules (duckdb, polars, tokenizers, matplotlib) load on first use.
Import goes through the store: `calib.open_store(path).ingest(paths)`. Functions whose natural name is
also a submodule's (`ingest`, `score`, `fit`) are exported under other names, because importing the
submodule rebinds that name on the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calib.core.errors import CalibError, ConfigError, EstimatorError, InputError, StoreError, UsageError

__version__ = "0.1.0"

__all__ = [
    "CalibError",
    "Calibrator",
    "ConfigError",
    "EstimatorError",
    "InputError",
    "Store",
    "StoreError",
    "UsageError",
    "appended_content",
    "build_report",
    "compare_summaries",
    "content_kind",
    "export_config",
    "fit_calibration",
    "get_estimator",
    "list_estimators",
    "load_config",
    "load_summary",
    "open_store",
    "render_markdown",
    "replay_calls",
    "run_fit",
    "run_report",
    "score_calls",
    "summarise",
    "summarise_replay",
]

# public name -> module that defines it
_LAZY = {
    "Store": "calib.store.store",
    "open_store": "calib.store.store",
    "get_estimator": "calib.estimators",
    "list_estimators": "calib.estimators",
    # `score` and `fit` are also submodule names, which an import would rebind on the package
    "score_calls": "calib.scoring.score",
    "summarise": "calib.scoring.score",
    "fit_calibration": "calib.calibration.fit",
    "Calibrator": "calib.calibration.fit",
    "export_config": "calib.calibration.config",
    "load_config": "calib.calibration.config",
    "run_fit": "calib.calibration.pipeline",
    # `report` is also a submodule name
    "build_report": "calib.analysis.report",
    "run_report": "calib.analysis.report",
    "render_markdown": "calib.analysis.report",
    "appended_content": "calib.analysis.report",
    "content_kind": "calib.analysis.report",
    "compare_summaries": "calib.analysis.gate",
    "load_summary": "calib.analysis.gate",
    # `replay` is also a submodule name
    "replay_calls": "calib.analysis.replay",
    "summarise_replay": "calib.analysis.replay",
}

if TYPE_CHECKING:
    from calib.analysis.gate import compare_summaries, load_summary
    from calib.analysis.replay import replay_calls, summarise_replay
    from calib.analysis.report import (
        appended_content,
        build_report,
        content_kind,
        render_markdown,
        run_report,
    )
    from calib.calibration.config import export_config, load_config
    from calib.calibration.fit import Calibrator, fit_calibration
    from calib.calibration.pipeline import run_fit
    from calib.estimators import get_estimator, list_estimators
    from calib.scoring.score import score_calls, summarise
    from calib.store.store import Store, open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'calib' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
