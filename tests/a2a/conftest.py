"""Fixtures for the A2A client tests: real ``a2a-sdk`` lab servers on 127.0.0.1 (one per
binding × streaming, started once per module; each test tells its messages apart by text)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from a2a_lab import Lab, start_lab


@pytest.fixture(scope="module")
def labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Lab]]:
    """``labs(binding="jsonrpc", streaming=True, card_version="1.0")``: that server, started
    on first use and stopped after the module."""
    started: dict[tuple[str, bool, str], Lab] = {}

    def get(binding: str = "jsonrpc", streaming: bool = True, card_version: str = "1.0") -> Lab:
        key = (binding, streaming, card_version)
        if key not in started:
            folder: Path = tmp_path_factory.mktemp(f"lab-{binding}-{streaming}-{card_version}")
            started[key] = start_lab(folder, binding=binding, streaming=streaming,
                                     card_version=card_version)
        return started[key]

    yield get
    for lab in started.values():
        lab.stop()
