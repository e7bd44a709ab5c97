"""The client command the MCP conformance suite runs for each client scenario: AgentLoom's CLI,
driven as a person would drive it.

``@modelcontextprotocol/conformance client --command "python tests/mcp/conformance/client.py"``
starts a scenario's test server and runs this script with its URL as the last argument (and
``MCP_CONFORMANCE_SCENARIO`` / ``MCP_CONFORMANCE_CONTEXT`` in the environment). The script

1. writes a one-server config (``mcp_servers.conformance``: Streamable HTTP at that URL) in a
   fresh folder, its store beside it;
2. for an ``auth/*`` scenario, signs in first: ``agentloom mcp login --no-browser``, reading the
   printed authorization URL from stderr and following it (the test authorization server
   approves at once and redirects to the login's loopback listener);
3. ``agentloom mcp call --json`` of the scenario's tool (the call lists the server first), or
   ``agentloom mcp list --json`` where the scenario has no tool to call; a call refused with
   ``MCP_AUTH_REQUIRED`` (the server asks for a larger scope) is followed, as its message says,
   by ``agentloom mcp login`` once more and the call again — once.

It exits 0 when the last step succeeded. Nothing here talks to the server itself: every byte
the suite checks is AgentLoom's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

SERVER = "conformance"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client metadata document URL the suite's ``auth/basic-cimd`` authorization server expects."""
STEP_TIMEOUT_S = 60.0

TOOL_ARGS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "auth/": ("test-tool", {}),
}
"""The tool a scenario calls (``mcp call`` lists the server first) and its arguments; the
others (``initialize``, ``sse-retry``) are listed only (``mcp list``)."""


def _log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _agentloom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentloom", *args]
    _log("+ agentloom " + " ".join(args))
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          timeout=STEP_TIMEOUT_S, check=False)
    _log(f"  exit {done.returncode}\n  stdout: {done.stdout.strip()[:2000]}\n"
         f"  stderr: {done.stderr.strip()[-2000:]}")
    return done


def _follow(url: str) -> None:
    """Open the authorization URL as a browser would: the redirect reaches the loopback."""
    try:
        with urllib.request.urlopen(url, timeout=STEP_TIMEOUT_S) as answer:
            answer.read()
    except Exception as exc:  # an error page is the login's to report
        _log(f"  following the authorization URL: {type(exc).__name__}: {exc}")


def login(folder: Path) -> bool:
    """``agentloom mcp login --no-browser``, its printed URL followed; True when it exits 0."""
    _log(f"+ agentloom mcp login agentloom.yaml {SERVER} --no-browser --json")
    process = subprocess.Popen(
        [sys.executable, "-m", "agentloom", "mcp", "login", "agentloom.yaml", SERVER,
         "--no-browser", "--json", "--timeout", str(int(STEP_TIMEOUT_S))],
        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None and process.stdout is not None
    stderr: list[str] = []

    def read_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            stderr.append(line)
            if line.startswith(("http://", "https://")):
                threading.Thread(target=_follow, args=(line.strip(),), daemon=True).start()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        out = process.stdout.read()
        process.wait(timeout=STEP_TIMEOUT_S * 2)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        out = ""
    reader.join(timeout=5)
    _log(f"  exit {process.returncode}\n  stdout: {out.strip()[:2000]}\n"
         f"  stderr: {''.join(stderr).strip()[-2000:]}")
    return process.returncode == 0


def _error_code(done: subprocess.CompletedProcess[str]) -> str | None:
    try:
        shown = json.loads(done.stdout)
    except ValueError:
        return None
    if isinstance(shown, list) and shown:  # ``mcp list``: one entry a server
        shown = shown[0]
    if isinstance(shown, dict):
        error = shown.get("error")
        return error.get("code") if isinstance(error, dict) else None
    return None


SECRET_VAR = "CONFORMANCE_CLIENT_SECRET"
"""The variable ``oauth.client_secret`` names; the adapter sets it for its commands."""


def write_config(folder: Path, url: str, scenario: str, context: dict[str, Any]) -> None:
    """One server. An ``auth/*`` scenario signs in with the credentials its context gives (a
    client registered beforehand, its secret through ``${VAR}``), else with the client ID
    metadata document the suite's ``auth/basic-cimd`` expects — where the authorization server
    does not advertise that, the login falls back to dynamic registration, as the spec says."""
    oauth = ""
    if "client_id" in context:
        secret = f", client_secret: \"${{{SECRET_VAR}}}\"" if "client_secret" in context else ""
        oauth = f", oauth: {{client_id: {json.dumps(context['client_id'])}{secret}}}"
    elif scenario.startswith("auth/"):
        oauth = f", oauth: {{client_metadata_url: {json.dumps(CIMD_URL)}}}"
    (folder / "agentloom.yaml").write_text(
        "version: 1\n"
        "agents:\n  main: {model: {builtin: test}}\n"
        f"mcp_servers:\n  {SERVER}: {{transport: http, url: {json.dumps(url)}, timeout_s: 10{oauth}}}\n"
        "sandbox: {backend: none}\n", encoding="utf-8")


def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    _log(f"scenario {scenario!r}, server {url}")
    with tempfile.TemporaryDirectory(prefix="agentloom-conformance-") as name:
        folder = Path(name)
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        if "client_secret" in context:
            os.environ[SECRET_VAR] = str(context["client_secret"])
        write_config(folder, url, scenario, context)
        if scenario.startswith("auth/"):
            login(folder)
        tool, arguments = TOOL_ARGS.get(scenario, TOOL_ARGS.get(scenario[:5], ("", {})))
        if not tool:
            return 0 if _agentloom("mcp", "list", "agentloom.yaml", "--json",
                                   cwd=folder).returncode == 0 else 1
        call = ("mcp", "call", "agentloom.yaml", SERVER, tool, "--args", json.dumps(arguments),
                "--json")
        called = _agentloom(*call, cwd=folder)
        if called.returncode != 0 and _error_code(called) == "MCP_AUTH_REQUIRED":
            # as its message says: sign in (again: a step-up to the scope the server asked for)
            login(folder)
            called = _agentloom(*call, cwd=folder)
        return 0 if called.returncode == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: client.py SERVER_URL (run by @modelcontextprotocol/conformance)\n")
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
