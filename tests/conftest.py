"""Shared test helpers: where the real fixtures live, and a fresh store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from calib.store.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A new empty store in a temporary folder."""
    with Store(tmp_path / "calib.duckdb") as s:
        yield s


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never touch the network: any socket connection attempt fails loudly."""
    import socket

    def guard(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a test tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", guard)
    monkeypatch.setattr(socket, "create_connection", guard)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
