"""What every estimator is (`Estimator`) and what a registry entry says about one (`EstimatorSpec`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@runtime_checkable
class Estimator(Protocol):
    """Counts tokens in text. Pure and deterministic; `count_many` is the hot path."""

    name: str

    def count(self, text: str) -> int:
        """Tokens in one text (0 for the empty string, never negative)."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens in each text; equal to `[count(t) for t in texts]`."""
        ...


@dataclass(frozen=True, slots=True)
class EstimatorSpec:
    """A registry entry: a fixed name or a `prefix:` family, and where its constructor lives."""

    name: str  # "chars4", or "hf:" for a family
    factory: str  # "module:function"; a family's function takes the argument after the prefix
    family: str  # heuristic | tiktoken | hf | calibrated
    description: str
    needs: str | None = None  # the extra or package it needs, for error messages
    # "module:function" or "module:function:arg" (called with the string arg) returning None when usable
    # here, else why not; cheap (no tokenizer load)
    probe: str | None = None

    @property
    def is_family(self) -> bool:
        return self.name.endswith(":")
