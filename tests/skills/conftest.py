from __future__ import annotations

import pytest

from agentloom.skills._git import ALLOW_HTTP_LOOPBACK_ENV


@pytest.fixture
def loopback_http(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented test switch: plain http:// to a loopback git server."""
    monkeypatch.setenv(ALLOW_HTTP_LOOPBACK_ENV, "1")
