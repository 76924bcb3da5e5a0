"""The one rounding of every figure calib reports: the report, its summary.json, the config and `--json`.

Figures keep six significant digits, so a ratio of 0.000123456 and a token count of 12345.6 are both
shown to the precision they carry and the same data always print the same text. A figure that is not
finite (an empty group's mean) becomes None, JSON's null; -0.0 becomes 0.0 so that no sign flips the
bytes of a diffed file.
"""

from __future__ import annotations

import math
from typing import Any

SIGNIFICANT_DIGITS = 6


def round_figure(value: float, digits: int = SIGNIFICANT_DIGITS) -> float | None:
    """`value` to `digits` significant digits; None when it is NaN or infinite."""
    if not math.isfinite(value):
        return None
    rounded = float(f"{value:.{digits}g}")
    return 0.0 if rounded == 0 else rounded


def round_figures(value: Any) -> Any:
    """Every float inside `value` (dicts, lists and tuples, recursively) rounded by `round_figure`."""
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return value
    if isinstance(value, float):
        return round_figure(value)
    if isinstance(value, dict):
        return {str(k): round_figures(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_figures(v) for v in value]
    return value
