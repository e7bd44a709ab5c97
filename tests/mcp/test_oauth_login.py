"""Issue #15, Auth: "OAuth 2.1 authorization code + PKCE with metadata discovery as a CLI step at
configuration time (``agentloom mcp login SERVER``, tokens kept in the store's secret table,
refreshed, audience-bound); no interactive auth during a run (a 401 mid-run is a clear error
naming ``agentloom mcp login``)" (000 §6.2, OAuth row).

The edge fake is ``servers/oauth_lab.py``: the ``mcp`` SDK's own authorization server and
protected resource with an in-memory provider that approves at once. ``agentloom mcp login``
runs as a real process; the "browser" is this test following the URL it prints. Runs go
through the CLI on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from mcp_support import SERVERS, free_port, serve_http
from typer.testing import CliRunner

from agentloom.cli.main import app
from agentloom.mcp.oauth import SECRETS, McpCredentials
from agentloom.store import Put, WriteSet, open_store
from agentloom.store.schema import TABLES

OAUTH_LAB = SERVERS / "oauth_lab.py"
DEADLINE_S = 60.0


@pytest.fixture
def oauth_lab() -> Iterator[str]:
    """``servers/oauth_lab.py`` on a free port: its ``/mcp`` URL."""
    port = free_port()
    yield from serve_http([sys.executable, str(OAUTH_LAB), str(port)], port)


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def project(folder: Path, url: str, turns: str = "", tools: str = "mcp.labo.whoami") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.yaml").write_text("turns:\n" + turns, encoding="utf-8")
    config = folder / "agentloom.yaml"
    config.write_text(
        "version: 1\n"
        f"agents:\n  main:\n    model: {{builtin: script, path: turns.yaml}}\n    tools: [{tools}]\n"
        f"mcp_servers:\n  labo: {{transport: http, url: {json.dumps(url)}}}\n"
        f"  local: {{transport: stdio, command: {json.dumps(sys.executable)}, args: [x.py]}}\n"
        "sandbox: {backend: none}\n", encoding="utf-8")
    return config


def login(config: Path, store: str) -> tuple[dict[str, Any], str]:
    """``agentloom mcp login CONFIG labo`` as a process; the test plays the browser: it follows
    the printed URL (the authorization server approves at once and redirects to the CLI's
    loopback listener). Returns the CLI's JSON and the URL it printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentloom", "mcp", "login", str(config), "labo", "--store", store,
         "--no-browser", "--json", "--timeout", str(DEADLINE_S)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        seen = []
        while not (seen and seen[-1].startswith("http")):
            seen.append(lines.get(timeout=DEADLINE_S))
        url = seen[-1].strip()
        page = httpx2.get(url, follow_redirects=True, timeout=DEADLINE_S)
        assert page.status_code == 200 and "signed in" in page.text, page.text
        out, _ = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out, seen)
    return json.loads(out), url


def secret_row(store: str) -> dict[str, Any]:
    opened = open_store(store)
    try:
        (row,) = opened.query(SECRETS)
        return row
    finally:
        opened.close()


def other_tables(store: str) -> str:
    """Every row of every table but the secret table, as text."""
    opened = open_store(store)
    try:
        return json.dumps({name: opened.query(name) for name in TABLES if name != SECRETS},
                          default=str)
    finally:
        opened.close()


def state(mcp_url: str) -> dict[str, Any]:
    return httpx2.get(mcp_url.removesuffix("/mcp") + "/_test/state", timeout=10).json()


def operations(run_id: str, store: str) -> tuple[list[dict[str, Any]], str]:
    shown = cli("runs", "show", run_id, "--store", store, "--json")
    human = cli("runs", "show", run_id, "--store", store)
    events = cli("runs", "events", run_id, "--store", store, "--json")
    ops = [o for o in json.loads(shown.stdout)["operations"] if o["kind"] == "tool"]
    return ops, shown.stdout + shown.stderr + human.stdout + events.stdout + events.stderr


WHOAMI = """\
  - tool_calls:
      - {id: a, name: mcp__labo__whoami, arguments: {}}
  - expect: {role: tool, contains: "client"}
    text: done
"""


def test_issue15_mcp_login_uses_pkce_s256_and_resource_and_keeps_tokens_only_in_the_secret_table(
    tmp_path: Path, durable_store_url: str, oauth_lab: str,
) -> None:
    config = project(tmp_path / "p", oauth_lab, WHOAMI)

    shown, url = login(config, durable_store_url)

    query = {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["resource"] == oauth_lab  # RFC 8707: the audience is the MCP server's URL
    assert state(oauth_lab)["authorized"] == [{"resource": oauth_lab,
                                              "challenge": query["code_challenge"]}]
    assert state(oauth_lab)["grants"] == {"authorization_code": 1, "refresh_token": 0}
    row = secret_row(durable_store_url)
    token = row["data"]["token"]
    assert (row["server"], row["url"], row["resource"]) == ("labo", oauth_lab, oauth_lab)
    assert token["access_token"] and token["refresh_token"] and row["data"]["expires_at"]
    assert shown["status"] == "signed_in" and shown["resource"] == oauth_lab
    secrets = (token["access_token"], token["refresh_token"])
    assert not any(s in json.dumps(shown) for s in secrets)

    out = json.loads(cli("run", str(config), "who am I", "--store", durable_store_url,
                         "--json").stdout)

    assert out["status"] == "succeeded" and out["output"] == "done", out
    (op,), printed = operations(out["run_id"], durable_store_url)
    client = row["data"]["client"]["client_id"]
    assert op["status"] == "succeeded" and json.loads(op["raw_result"]) == {
        "result": f"client {client} for {oauth_lab}"}  # the bearer reached the server
    assert not any(s in printed for s in secrets)
    assert not any(s in other_tables(durable_store_url) for s in secrets)


def test_issue15_an_expired_access_token_is_refreshed_before_connecting_and_the_new_one_stored(
    tmp_path: Path, durable_store_url: str, oauth_lab: str,
) -> None:
    config = project(tmp_path / "p", oauth_lab, WHOAMI)
    login(config, durable_store_url)
    before = secret_row(durable_store_url)
    httpx2.post(oauth_lab.removesuffix("/mcp") + "/_test/expire", timeout=10)  # the server agrees
    opened = open_store(durable_store_url)
    try:
        expired = {**before, "data": {**before["data"], "expires_at": 1.0}}
        assert opened.commit_many([WriteSet((Put(SECRETS, expired),))]) == [None]
    finally:
        opened.close()

    out = json.loads(cli("run", str(config), "who am I", "--store", durable_store_url,
                         "--json").stdout)

    assert out["status"] == "succeeded", out
    assert state(oauth_lab)["grants"] == {"authorization_code": 1, "refresh_token": 1}
    after = secret_row(durable_store_url)
    old, new = before["data"]["token"], after["data"]["token"]
    assert new["access_token"] != old["access_token"]
    assert new["refresh_token"] != old["refresh_token"]  # rotated by the server, kept
    assert after["data"]["expires_at"] > 1.0 and after["updated_at"] > before["updated_at"]
    assert new["access_token"] not in other_tables(durable_store_url)


REVOKED = """\
  - tool_calls:
      - {id: a, name: mcp__labo__whoami, arguments: {}}
  - expect: {role: tool, contains: "client"}
    tool_calls:
      - {id: b, name: mcp__labo__revoke_all, arguments: {}}
  - expect: {role: tool, contains: "revoked"}
    tool_calls:
      - {id: c, name: mcp__labo__whoami, arguments: {}}
  - expect: {role: tool, contains: "agentloom mcp login"}
    text: told to sign in again
"""


def test_issue15_a_token_revoked_mid_run_fails_the_call_with_mcp_auth_required_naming_mcp_login(
    tmp_path: Path, durable_store_url: str, oauth_lab: str,
) -> None:
    config = project(tmp_path / "p", oauth_lab, REVOKED,
                     tools="mcp.labo.whoami, mcp.labo.revoke_all")
    login(config, durable_store_url)
    token = secret_row(durable_store_url)["data"]["token"]

    out = json.loads(cli("run", str(config), "who am I", "--store", durable_store_url,
                         "--json").stdout)

    assert out["status"] == "succeeded" and out["output"] == "told to sign in again", out
    ops, printed = operations(out["run_id"], durable_store_url)
    assert [o["status"] for o in ops] == ["succeeded", "succeeded", "failed"]
    error = ops[2]["error"]
    assert error["code"] == "MCP_AUTH_REQUIRED" and error["external_outcome"] == "not_started"
    assert "agentloom mcp login" in error["message"] and "labo" in error["message"]
    assert token["access_token"] not in printed and token["refresh_token"] not in printed
    assert token["access_token"] not in other_tables(durable_store_url)
    assert state(oauth_lab)["grants"]["authorization_code"] == 1  # no flow started in the run


def test_issue15_a_server_asking_for_authorization_without_a_login_fails_the_build_naming_mcp_login(
    tmp_path: Path, oauth_lab: str,
) -> None:
    config = project(tmp_path / "p", oauth_lab, WHOAMI)

    result = cli("run", str(config), "who am I", "--store",
                 f"sqlite:///{tmp_path / 's.db'}", "--json")

    assert result.exit_code != 0
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "MCP_AUTH_REQUIRED", error
    assert "agentloom mcp login" in error["message"] and "labo" in error["message"]
    assert state(oauth_lab)["grants"]["authorization_code"] == 0


def test_issue15_mcp_login_refuses_a_stdio_server_clearly(tmp_path: Path) -> None:
    config = project(tmp_path / "p", "http://127.0.0.1:9/mcp")

    result = cli("mcp", "login", str(config), "local", "--no-browser", "--json")

    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "MCP_LOGIN_UNSUPPORTED"
    assert "stdio server" in error["message"] and "transport: http" in error["message"]


def test_issue15_mcp_login_server_alone_reads_agentloom_yaml_of_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's form, ``agentloom mcp login SERVER``: the config is ./agentloom.yaml."""
    config = project(tmp_path / "p", "http://127.0.0.1:9/mcp")
    assert config.name == "agentloom.yaml"
    monkeypatch.chdir(config.parent)

    result = cli("mcp", "login", "local", "--no-browser", "--json")

    assert result.exit_code == 2  # the stdio server of *that* config: read, and refused
    assert json.loads(result.stdout)["error"]["code"] == "MCP_LOGIN_UNSUPPORTED"
    monkeypatch.chdir(tmp_path)  # no agentloom.yaml here: the load error names the file
    missing = cli("mcp", "login", "local", "--no-browser", "--json")
    assert missing.exit_code != 0 and "agentloom.yaml" in missing.stdout + missing.stderr


def test_issue15_the_secret_table_round_trips_a_grant_on_every_durable_store(
    tmp_path: Path, durable_store_url: str, oauth_lab: str,
) -> None:
    config = project(tmp_path / "p", oauth_lab)
    login(config, durable_store_url)
    credentials = McpCredentials(durable_store_url)
    try:
        grant = credentials.load("labo", oauth_lab)
        assert grant is not None and credentials.load("labo", oauth_lab + "/other") is None
        credentials.save(grant)
        again = credentials.load("labo", oauth_lab)
    finally:
        credentials.close()

    assert again == grant and grant.token.access_token not in repr(grant)
    assert grant.resource == oauth_lab and grant.token.refresh_token
