"""Helpers for the CLI tests: the in-process runner, a script-model project, subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.sandbox import RevocationReceipt, SandboxError
from agentloom.sandbox.errors import SPAWN_FAILED

SUBPROCESS_TIMEOUT_S = 120


@dataclass
class Cli:
    """Runs ``agentloom`` in this process (typer's CliRunner): stdout and stderr apart."""

    store: str

    def __call__(self, *args: str, input: str | None = None) -> Any:
        return CliRunner().invoke(app, list(args), input=input, catch_exceptions=False)

    def json(self, *args: str, input: str | None = None, exit_code: int = 0) -> Any:
        result = self(*args, "--json", input=input)
        assert result.exit_code == exit_code, (result.stdout, result.stderr)
        return json.loads(result.stdout)


def write_project(folder: Path, turns: str, *, tools: Sequence[str] = ("fs.read", "fs.write", "exec"),
                  extra: str = "") -> Path:
    """A one-agent config on the script model with ``turns`` (YAML list items)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\nagents:\n  main:\n    model: {builtin: script, path: turns.yaml}\n"
        f"    tools: [{', '.join(tools)}]\n{extra}", encoding="utf-8")
    return config


EXEC_ONCE = """\
  - tool_calls:
      - name: exec
        arguments: {argv: [touch, ran-once], timeout_s: 60}
  - text: finished
"""
ASK_EXEC = '''\
def ask_exec(event):
    return {"decision": "ask", "reason": "Run it?"}
'''


def asking_exec_project(folder: Path, turns: str = EXEC_ONCE, *, extra: str = "") -> Path:
    """A config whose exec calls a before-hook asks a person about (``guards:ask_exec``,
    written beside it), the script model playing ``turns``."""
    hooks = ("    hooks:\n      - {timing: before, event: tool, match: {capability: exec}, "
             "handler: {ref: \"guards:ask_exec\"}}\n")
    config = write_project(folder, turns, tools=["exec"], extra=hooks + extra)
    (folder / "guards.py").write_text(ASK_EXEC, encoding="utf-8")
    return config


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "AGENTLOOM_STORE"}


def agentloom(*args: str, cwd: Path, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m agentloom ARGS`` in a real subprocess."""
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=_env(),
                          input=input, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


def spawn(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """``python -m agentloom ARGS`` started in the background."""
    return subprocess.Popen([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class RevokingGateway:
    """A sandbox gateway that starts nothing (every ``exec`` fails) and whose revocation
    says ``confirmed``: the run's end is what is tested, not the sandbox."""

    sandbox_mode = "bubblewrap"

    def __init__(self, *, confirmed: bool) -> None:
        self.confirmed = confirmed
        self.revoked: list[str] = []

    def check_scope(self, scope: Any) -> None:
        return None

    async def ensure(self, *args: Any) -> Any:
        raise SandboxError(SPAWN_FAILED, "this test gateway starts no command")

    async def revoke(self, run_id: str, lease_epoch: int) -> RevocationReceipt:
        self.revoked.append(run_id)
        return RevocationReceipt(run_id=run_id, lease_epoch=lease_epoch, killed=1,
                                 confirmed=self.confirmed, at=time.time())


SERVER_KEY_ENV = "AGENTLOOM_TEST_KEY"


def openai_project(folder: Path, base_url: str, *,
                   tools: Sequence[str] = ("fs.read", "fs.write", "exec"), extra: str = "") -> Path:
    """A one-agent config whose model is served over the real OpenAI wire at ``base_url``
    (the scripted server); its key is read from ``$AGENTLOOM_TEST_KEY`` (set it)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        f"connections:\n  local: {{preset: openai, base_url: \"{base_url}\", "
        f"api_key_env: {SERVER_KEY_ENV}}}\n"
        "agents:\n  main:\n    model: {connection: local, name: scripted-model}\n"
        f"    tools: [{', '.join(tools)}]\n{extra}", encoding="utf-8")
    return config
