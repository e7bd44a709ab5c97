"""Starting the scripted A2A lab server (``servers/lab.py``, the official ``a2a-sdk``) on
127.0.0.1 in a subprocess, and writing projects whose scripted model calls it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAB = Path(__file__).resolve().parent / "servers" / "lab.py"
START_TIMEOUT_S = 30


@dataclass
class Lab:
    """One running lab server: its base URL, card URL and the log of messages it received."""

    process: subprocess.Popen[bytes]
    base: str
    log: Path

    @property
    def card_url(self) -> str:
        return f"{self.base}/.well-known/agent-card.json"

    def sent(self, containing: str = "") -> list[dict[str, Any]]:
        """Every SendMessage the server received (whose text holds ``containing``)."""
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]
        return [m for m in lines if containing in m["text"]]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def start_lab(folder: Path, *, binding: str = "jsonrpc", streaming: bool = True,
              card_version: str = "1.0") -> Lab:
    folder.mkdir(parents=True, exist_ok=True)
    port_file, log = folder / "port", folder / "sent.jsonl"
    args = [sys.executable, str(LAB), "--port-file", str(port_file), "--log", str(log),
            "--binding", binding, "--card-version", card_version]
    if not streaming:
        args.append("--no-streaming")
    process = subprocess.Popen(args)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not (port_file.exists() and port_file.read_text(encoding="utf-8")):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"the A2A lab server did not start (exit {process.poll()})")
        time.sleep(0.02)
    return Lab(process, f"http://127.0.0.1:{port_file.read_text(encoding='utf-8')}", log)


def project(folder: Path, turns: str, *, agents: str, tools: str = "a2a.lab",
            extra: str = "") -> Path:
    """A config whose ``main`` agent runs the scripted ``turns`` with ``tools``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        f"agents:\n  main:\n    model: {{builtin: script, path: turns.yaml}}\n    tools: [{tools}]\n"
        f"a2a_agents:\n{agents}{extra}sandbox: {{backend: none}}\n", encoding="utf-8")
    return config


def send_turns(message: str, *, then: str = "  - text: done\n") -> str:
    """One model turn calling ``a2a__lab__send`` with ``message``, then ``then``."""
    return ("  - tool_calls:\n"
            f"      - {{id: a, name: a2a__lab__send, arguments: {{message: {json.dumps(message)}}}}}\n"
            + then)


def agentloom(*args: str, cwd: Path, crash_at: str | None = None,
              timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m agentloom ARGS`` in a clean environment (``AGENTLOOM_CRASH_AT`` if given)."""
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOOM_STORE", "AGENTLOOM_CRASH_AT")}
    if crash_at:
        env["AGENTLOOM_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "agentloom", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
