"""What every estimator is (`Estimator`) and what a registry entry says about one (`EstimatorSpec`)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from calib.core.errors import EstimatorError
from calib.core.home import expand_home


def cache_root() -> Path:
    """calib's cache folder, where vocabularies a package ships are unpacked or built:
    `$CALIB_CACHE_DIR`, else `$XDG_CACHE_HOME/calib` or `~/.cache/calib`."""
    root = os.environ.get("CALIB_CACHE_DIR")
    if root:
        return expand_home(root)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "calib"


def unwritable_cache(what: str, folder: Path, exc: OSError) -> EstimatorError:
    """The error for a file (`what`: "the o200k_base vocabulary") calib could not write to its cache."""
    return EstimatorError(
        f"cannot write {what} to {folder}: {exc.strerror or exc}",
        path=str(folder),
        hint="set CALIB_CACHE_DIR to a writable folder",
    )


def package_dir(module: str) -> Path | None:
    """Where an installed top-level package lives, found without importing it (None: not installed)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def files_digest(paths: Sequence[str | os.PathLike[str]]) -> str:
    """A short hash of the contents of the files an estimator reads (weights, a tokenizer).

    It goes into the estimator's `version`, which keys the count cache (`part_estimates`): an edited
    file is a new estimator whose counts are made again, never the old file's counts reused.
    """
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as fh:
            while block := fh.read(1 << 20):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def files_stamp(paths: Sequence[str | os.PathLike[str]]) -> tuple[tuple[int, int] | None, ...]:
    """Size and modification time of each file (None when gone): what tells a built estimator is stale."""
    stamp: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamp.append(None)
        else:
            stamp.append((st.st_size, st.st_mtime_ns))
    return tuple(stamp)


@runtime_checkable
class Estimator(Protocol):
    """Counts tokens in text. Pure and deterministic; `count_many` is the hot path.

    Optional attributes: `version` (a string or number; it keys the count cache, so it changes
    whenever the counts could: an estimator built from files includes `files_digest` of them) and
    `files` (the paths it read, so that the registry rebuilds it when one changes).
    """

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
    family: str  # heuristic | tiktoken | hf | ctok | calibrated
    description: str
    needs: str | None = None  # the extra or package it needs, for error messages
    # "module:function" or "module:function:arg" (called with the string arg) returning None when usable
    # here, else why not; cheap (no tokenizer load)
    probe: str | None = None
    # for an estimator costly to build (a tokenizer to load): "module:function" or "module:function:arg"
    # returning its `version` without building it (a family's function takes the argument). None: the
    # estimator is built to learn its version (cheap ones).
    version: str | None = None

    @property
    def is_family(self) -> bool:
        return self.name.endswith(":")
