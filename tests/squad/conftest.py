"""Workflow runs end to end: ``Runtime`` with a ``WorkflowProgram`` → the graph driver → the
bus and the pipeline → agents on scripted OpenAI servers (127.0.0.1), real MCP servers, real
stores. The fixtures of tests/agent (scripted servers, a runtime factory) are shared; ``cli``
runs ``agentloom`` in this process on a SQLite store under ``tmp_path``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.agent.conftest import runtime_factory, server, servers  # noqa: F401  (fixtures)
from tests.cli.conftest import isolated  # noqa: F401  (autouse: no AGENTLOOM_STORE, sys.path)
from tests.cli.support import Cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp"))  # mcp_support, servers/


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(f"sqlite:///{tmp_path / 'store' / 'agentloom.db'}")
