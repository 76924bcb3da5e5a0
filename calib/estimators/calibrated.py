"""The `calibrated:PATH` estimator: an exported calibration config, scored like any other estimator.

It extends the estimator protocol for `calib.scoring.score` with grouping (the "grouped estimator" protocol):

- `sources`: the count sources its counts are made of: the base estimator's registry name, or the
  `class:<name>` character-class counts for the `charclass` base, and the providers' preferred bases
  (schema version 2) and models' own bases (version 3) that load here (a provider whose preferred base does not falls back to the
  config's own, as `calib.runtime` does);
- `for_group(provider, model) -> GroupCalibration`: the parameters that apply to a call, i.e.
  `ratios` per kind group, `message_overhead` per message and `source_weights` per count source
  (and the static overhead, pooled and per agent: `static_for(tool)`).

`calib.scoring.score` then computes, per call, `Σ_g ratios[g] · Σ_s source_weights[s] · count_s(appended parts
of group g) + message_overhead · messages` from the per-part counts it caches for the base, so a
calibration is applied to every call without counting any text again. `count` and `count_many` (the
plain protocol) use the config's default parameters and the default kind group, with no message
overhead. Counts come from `calib.runtime.Calibration` with calib's own estimators as the base, so an
agent embedding `calib/runtime.py` gets the same numbers (the runtime's stdlib copies of the
heuristics are tested against calib's).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from calib.core.config import load_config, preferred_bases, validate_config
from calib.estimators import get_estimator, why_unusable
from calib.estimators.charclass import CLASS_PREFIX, class_counts
from calib.runtime import Calibration, tool_keys

if TYPE_CHECKING:
    from calib.runtime import Part


@dataclass(frozen=True, slots=True)
class GroupCalibration:
    """The parameters of one (provider, model), as `calib.scoring.score` applies them."""

    level: str  # "provider/model", "provider" or "default": where the parameters came from
    ratios: dict[str, float]
    message_overhead: float
    source_weights: dict[str, float]
    static_overhead: float | None
    static_by_tool: dict[str, float] = field(default_factory=dict)  # the static overhead per agent
    base: str = ""  # the base estimator whose counts the parameters apply to

    def static_for(self, tool: str | None) -> float | None:
        """The static overhead of `tool`'s prompts: its own (`TOOL@VERSION` falling back to its minor
        release and to `TOOL`, a `TOOL/subagent` to `TOOL`'s: `calib.runtime.tool_keys`), else all
        agents' (None when neither)."""
        for key in tool_keys(tool):
            if key in self.static_by_tool:
                return self.static_by_tool[key]
        return self.static_overhead


class CalibratedEstimator:
    """A calibration config as an estimator (see the module docstring for the grouped protocol)."""

    def __init__(self, doc: dict[str, Any], name: str) -> None:
        validate_config(doc, path=name.removeprefix("calibrated:"))
        self.name = name
        self.doc = doc
        self.base: str = doc["base"]
        # the preferred bases that can count here, each by calib's estimator of that name
        preferred = sorted(set(preferred_bases(doc).values()))
        self.unavailable = {b: r for b in preferred if (r := why_unusable(b)) is not None}
        counters = {b: _lazy_count(b) for b in preferred if b not in self.unavailable}
        if self.base == "charclass":

            def count_classes(text: str) -> Sequence[int]:
                return class_counts([text]).row(0)

            self.calibration = Calibration(doc, counters=counters, class_counter=count_classes)
            self.sources: list[str] = [CLASS_PREFIX + c for c in doc["classes"]]
        else:
            counters[self.base] = _lazy_count(self.base)
            self.calibration = Calibration(doc, counters=counters)
            self.sources = [self.base]
        self.sources += [b for b in counters if b not in self.sources]
        self._groups: dict[tuple[str | None, str | None], GroupCalibration] = {}

    files: tuple[str, ...] = ()  # the config file `calibrated:PATH` read (rebuilt when it changes)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> CalibratedEstimator:
        """Load a config file as the estimator `calibrated:PATH`."""
        estimator = cls(load_config(path), name=f"calibrated:{os.fspath(path)}")
        estimator.files = (os.fspath(path),)
        return estimator

    @classmethod
    def from_config(cls, doc: dict[str, Any], name: str = "calibrated") -> CalibratedEstimator:
        """An in-memory config as an estimator."""
        return cls(doc, name)

    def for_group(self, provider: str | None, model: str | None) -> GroupCalibration:
        """The parameters that apply to calls of `model` from `provider` (model -> provider -> default)."""
        key = (provider, model)
        found = self._groups.get(key)
        if found is None:
            params = self.calibration.params(provider, model)
            if params.base == "charclass":
                assert params.class_weights is not None
                classes = [CLASS_PREFIX + c for c in self.doc["classes"]]
                weights = dict(zip(classes, params.class_weights, strict=True))
            else:
                weights = {params.base: 1.0}
            found = GroupCalibration(
                params.level,
                dict(params.ratios),
                params.message_overhead,
                weights,
                params.static_overhead,
                dict(params.static_overhead_by_tool),
                params.base,
            )
            self._groups[key] = found
        return found

    def count(self, text: str) -> int:
        """Calibrated tokens of one text with the default parameters and kind group."""
        return self.calibration.count(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """`count` of each text."""
        return [self.calibration.count(t) for t in texts]

    def count_parts(
        self,
        parts: Iterable[Part],
        provider: str | None = None,
        model: str | None = None,
        messages: int | None = None,
    ) -> int:
        """Calibrated tokens of parts plus message framing for a (provider, model); see calib.runtime."""
        return self.calibration.count_parts(parts, provider, model, messages)


def _lazy_count(base: str) -> Callable[[str], int]:
    """The count of estimator `base`, loaded on the first text it counts (scoring reads cached counts
    and may never count a text)."""

    def count(text: str) -> int:
        return get_estimator(base).count(text)

    return count


def calibrated(path: str) -> CalibratedEstimator:
    """Registry constructor for the `calibrated:PATH` family."""
    return CalibratedEstimator.from_path(path)
