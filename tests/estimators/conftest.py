"""Estimator tests: vocabularies are unpacked into a temporary calib cache, never the user's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _calib_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point CALIB_CACHE_DIR at a fresh folder for the whole session."""
    folder = tmp_path_factory.mktemp("calib-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CALIB_CACHE_DIR", str(folder))
        yield folder
