"""The built-in registry entries (constructors are imported only when an estimator is used)."""

from __future__ import annotations

from calib.estimators import EstimatorSpec

BUILTIN_SPECS: list[EstimatorSpec] = []
