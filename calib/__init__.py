"""calib: how many tokens an AI coding agent's context really holds.

The public API, the same functions the CLI calls. Heavy modules (duckdb, polars, tokenizers,
matplotlib) load on first use: `import calib` loads none of them.

    store = calib.open_store("calib.duckdb")
    calib.ingest_sessions(["~/.gemini/tmp"], store=store)
    rows = calib.score_calls(store, ["chars4"])
    frame = calib.call_frame(rows)  # one row per call and estimator: family, predicted_ctx, ...

Functions whose natural name is also a package's (`ingest`, `fit`, `report`, `replay`) are exported
under other names, because importing the package would rebind that name on `calib`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calib.core.errors import CalibError, ConfigError, EstimatorError, InputError, StoreError, UsageError
from calib.core.version import __version__

__all__ = [
    "CalibError",
    "Calibrator",
    "ConfigError",
    "EstimatorError",
    "InputError",
    "Store",
    "StoreError",
    "UsageError",
    "__version__",
    "appended_content",
    "build_report",
    "call_frame",
    "compare_summaries",
    "content_kind",
    "export_config",
    "export_parquet",
    "fit_calibration",
    "get_estimator",
    "ingest_sessions",
    "list_estimators",
    "load_config",
    "load_summary",
    "open_store",
    "removal_ledger",
    "render_markdown",
    "replay_calls",
    "run_cost",
    "run_fit",
    "run_report",
    "run_savings",
    "score_calls",
    "summarise",
    "summarise_replay",
]

# public name -> module that defines it
_LAZY = {
    "Store": "calib.store.store",
    "open_store": "calib.store.store",
    "export_parquet": "calib.store.store",
    "ingest_sessions": "calib.ingest.pipeline",
    "get_estimator": "calib.estimators",
    "list_estimators": "calib.estimators",
    # `score` and `fit` are also submodule names, which an import would rebind on the package
    "score_calls": "calib.scoring.score",
    "summarise": "calib.scoring.score",
    "call_frame": "calib.scoring.score",
    "fit_calibration": "calib.calibration.fit",
    "Calibrator": "calib.calibration.fit",
    "export_config": "calib.calibration.export",
    "load_config": "calib.core.config",
    "run_fit": "calib.calibration.pipeline",
    # `report` is also a submodule name
    "build_report": "calib.analysis.build",
    "run_report": "calib.analysis.report",
    "render_markdown": "calib.analysis.markdown",
    "appended_content": "calib.analysis.content",
    "content_kind": "calib.analysis.content",
    "compare_summaries": "calib.analysis.gate",
    "load_summary": "calib.analysis.summary",
    # `replay` is also a submodule name
    "replay_calls": "calib.analysis.replay",
    "summarise_replay": "calib.analysis.replay",
    "run_cost": "calib.analysis.cost",
    "removal_ledger": "calib.analysis.removals",
    "run_savings": "calib.analysis.savings",
}

if TYPE_CHECKING:
    from calib.analysis.build import build_report
    from calib.analysis.content import appended_content, content_kind
    from calib.analysis.cost import run_cost
    from calib.analysis.gate import compare_summaries
    from calib.analysis.markdown import render_markdown
    from calib.analysis.removals import removal_ledger
    from calib.analysis.replay import replay_calls, summarise_replay
    from calib.analysis.report import run_report
    from calib.analysis.savings import run_savings
    from calib.analysis.summary import load_summary
    from calib.calibration.export import export_config
    from calib.calibration.fit import Calibrator, fit_calibration
    from calib.calibration.pipeline import run_fit
    from calib.core.config import load_config
    from calib.estimators import get_estimator, list_estimators
    from calib.ingest.pipeline import ingest_sessions
    from calib.scoring.score import call_frame, score_calls, summarise
    from calib.store.store import Store, export_parquet, open_store


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'calib' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
