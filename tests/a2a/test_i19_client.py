"""Issue 19, the client half: a remote agent is a capability (``a2a.<name>.send``, shown as
``a2a__<name>__send``) called through the one pipeline, against the official ``a2a-sdk``
server (``servers/lab.py``) on 127.0.0.1 — JSON-RPC and HTTP+JSON, streaming and not —
through the CLI on a real SQLite store. Acceptance 1 (client side) and 3 (the state table of
docs/a2a.md, one test per row)."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from a2a_lab import Lab, project, send_turns
from typer.testing import CliRunner

from agentloom.a2a.card import fetch_agent
from agentloom.assembly import runtime_from_config
from agentloom.cli.main import app
from agentloom.config import load_config
from agentloom.config.a2a import A2aAgentConfig
from agentloom.errors import ConfigError
from agentloom.pipeline.records import stored_envelope

WAIT_S = 30
BINDINGS = [("jsonrpc", True), ("jsonrpc", False), ("rest", True), ("rest", False)]


def cli_json(*args: str, exit_code: int | None = 0) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"], catch_exceptions=False)
    if exit_code is not None:
        assert result.exit_code == exit_code, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def agents_entry(lab: Lab, name: str = "lab") -> str:
    return f"  {name}: {{card_url: {json.dumps(lab.card_url)}}}\n"


def run_once(tmp_path: Path, lab: Lab, message: str, *, then: str = "  - text: done\n",
             ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``main`` once (its model sends ``message`` to the lab); the run and the A2A op."""
    config = project(tmp_path / "p", send_turns(message, then=then), agents=agents_entry(lab))
    store = f"sqlite:///{tmp_path / 'store.db'}"
    out = cli_json("run", str(config), "ask the lab", "--store", store, exit_code=None)
    shown = cli_json("runs", "show", out["run_id"], "--store", store)
    (op,) = [o for o in shown["operations"] if o["capability"] == "a2a.lab.send"]
    return out, op


@pytest.mark.parametrize(("binding", "streaming"), BINDINGS)
def test_i19_1_an_agent_sends_a_message_to_an_sdk_server_over_each_binding(
    binding: str, streaming: bool, tmp_path: Path, labs: Any,
) -> None:
    lab = labs(binding, streaming)
    tag = uuid.uuid4().hex[:8]
    out, op = run_once(tmp_path, lab, f"echo hello {tag}", then=(
        f'  - expect: {{role: tool, contains: "echo: hello {tag}"}}\n    text: done\n'))

    assert out["status"] == "succeeded" and out["output"] == "done", out
    assert op["outcome"] == "succeeded" and op["attempts"]["count"] == 1, op
    (sent,) = lab.sent(tag)  # exactly one SendMessage reached the server
    assert sent["message_id"] == f"{op['operation_id']}-1" and sent["a2a_version"] == "1.0"


# -- acceptance 3: the state table of docs/a2a.md, one row each -------------------------------
ROWS = {
    # row id: (message, operation outcome, error code or None, external_outcome or None)
    "completed": ("echo row", "succeeded", None, None),
    "failed": ("fail", "failed", "A2A_TASK_FAILED", "known"),
    "rejected": ("reject", "failed", "A2A_TASK_REJECTED", "known"),
    "canceled": ("cancelled", "cancelled", "A2A_TASK_CANCELED", "unknown"),
    "input_required": ("ask", "failed", "A2A_INPUT_REQUIRED", "known"),
    "auth_required": ("auth", "failed", "A2A_AUTH_REQUIRED", "known"),
    "unknown_state": ("odd", "unknown", "A2A_STATE_UNKNOWN", "unknown"),
    "message": ("message row", "succeeded", None, None),
}


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "poll"])
@pytest.mark.parametrize("row", list(ROWS))
def test_i19_3_state_table_row(row: str, streaming: bool, tmp_path: Path, labs: Any) -> None:
    message, outcome, code, external = ROWS[row]
    _, op = run_once(tmp_path, labs("jsonrpc", streaming), message)

    assert op["outcome"] == outcome, op
    assert op["attempts"]["count"] == 1
    if code is None:
        assert op["error"] is None
    else:
        assert op["error"]["code"] == code and op["error"]["external_outcome"] == external


def test_i19_3_input_required_fails_with_the_question_never_as_success(
    tmp_path: Path, labs: Any,
) -> None:
    out, op = run_once(tmp_path, labs(), "ask", then=(
        '  - expect: {role: tool, contains: ["needs input to go on: which account?"]}\n'
        "    text: done\n"))

    assert out["status"] == "succeeded", out  # the model was told, and went on
    assert op["outcome"] == "failed" and op["error"]["details"]["said"] == "which account?"
    assert op["error"]["details"]["task_id"] and op["error"]["details"]["context_id"]


# -- stop: CancelTask, and the receipt ---------------------------------------------------------
@pytest.mark.parametrize(("binding", "streaming"), BINDINGS)
async def test_i19_1_a_stop_sends_cancel_task_and_reports_the_servers_receipt(
    binding: str, streaming: bool, tmp_path: Path, labs: Any,
) -> None:
    lab = labs(binding, streaming)
    tag = uuid.uuid4().hex[:8]
    config = project(tmp_path / "p", send_turns(f"slow 60 {tag}"), agents=agents_entry(lab))
    runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    working = asyncio.Event()
    runtime.kernel.bus.subscribe(lambda kind, payload: working.set() if kind == "a2a.task"
                                 and payload["state"] == "TASK_STATE_WORKING" else None)
    try:
        handle = await runtime.start("ask the lab")
        await asyncio.wait_for(working.wait(), WAIT_S)
        await handle.stop("enough")
        result = await asyncio.wait_for(handle.result(), WAIT_S)
        ops = [o for o in runtime.kernel.operations(result.run_id)
               if o["capability_key"] == "a2a.lab.send"]
        (envelope,) = [stored_envelope(o, runtime.store) for o in ops]
    finally:
        await runtime.aclose()

    assert envelope is not None and envelope.outcome == "cancelled", envelope
    assert envelope.error is not None and envelope.error.code == "A2A_TASK_CANCELED"
    assert "CancelTask was sent" in envelope.error.message
    assert "answered TASK_STATE_CANCELED" in envelope.error.message
    assert "undone" not in envelope.error.message.replace("not undone", "")
    assert envelope.raw is not None and envelope.raw.metadata["a2a"]["receipt"]
    assert len(lab.sent(tag)) == 1


@pytest.mark.parametrize(("binding", "streaming"), [("jsonrpc", True), ("rest", False)])
async def test_i19_1_the_run_deadline_sends_cancel_task_and_reports_the_servers_receipt(
    binding: str, streaming: bool, tmp_path: Path, labs: Any,
) -> None:
    """A remote task still working when the run's deadline passes is cancelled, as on a stop:
    the call ends with the server's receipt, never left running behind a timed-out run."""
    lab = labs(binding, streaming)
    tag = uuid.uuid4().hex[:8]
    config = project(tmp_path / "p", send_turns(f"slow 60 {tag}"), agents=agents_entry(lab))
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("    tools: [a2a.lab]\n",
                                   "    tools: [a2a.lab]\n    limits: {run_deadline_s: 4}\n"),
                      encoding="utf-8")
    runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    try:
        result = await asyncio.wait_for(runtime.run("ask the lab"), WAIT_S)
        ops = [o for o in runtime.kernel.operations(result.run_id)
               if o["capability_key"] == "a2a.lab.send"]
        (envelope,) = [stored_envelope(o, runtime.store) for o in ops]
    finally:
        await runtime.aclose()

    assert result.status == "timed_out", result
    assert envelope is not None and envelope.outcome == "cancelled", envelope
    assert envelope.error is not None and envelope.error.code == "A2A_TASK_CANCELED"
    assert envelope.error.message.startswith("the run deadline passed: CancelTask was sent")
    assert "answered TASK_STATE_CANCELED" in envelope.error.message
    assert len(lab.sent(tag)) == 1


# -- the catalog entry and the card check ------------------------------------------------------
def test_i19_the_model_sees_one_tool_named_a2a__name__send_described_by_the_card(
    labs: Any,
) -> None:
    agent = fetch_agent("lab", A2aAgentConfig(card_url=labs().card_url))
    spec = agent.spec("rel")

    assert spec.capability_key == "a2a.lab.send" and spec.exposed_name == "a2a__lab__send"
    assert "A scripted lab agent." in spec.description
    assert "skill echo: echoes what it is sent" in spec.description
    assert "skill ledger: books ledger entries" in spec.description
    assert spec.input_schema["required"] == ["message"]


def test_i19_a_0_3_only_agent_is_refused_when_the_runtime_is_built(
    tmp_path: Path, labs: Any,
) -> None:
    config = project(tmp_path / "p", send_turns("echo x"),
                     agents=agents_entry(labs(card_version="0.3")))

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")

    assert caught.value.code == "A2A_VERSION_UNSUPPORTED"
    message = str(caught.value)
    assert "a2a_agents.lab" in message and "0.3" in message and "1.0" in message


def test_i19_an_unreachable_card_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    config = project(tmp_path / "p", send_turns("echo x"),
                     agents='  lab: {card_url: "http://127.0.0.1:9/.well-known/agent-card.json"}\n')

    with pytest.raises(ConfigError) as caught:
        runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / 's.db'}")
    assert caught.value.code == "A2A_CARD_UNAVAILABLE" and "a2a_agents.lab" in str(caught.value)


@pytest.mark.parametrize(("agents", "tools", "where"), [
    ('  lab: {card_url: "http://127.0.0.1:9/c.json", header: {}}\n', "a2a.lab",
     "a2a_agents.lab.header"),
    ('  lab: {card_url: "ftp://127.0.0.1/c.json"}\n', "a2a.lab", "a2a_agents.lab.card_url"),
    ('  lab: {card_url: "http://127.0.0.1:9/c.json"}\n', "a2a.billing", "agents.main.tools[0]"),
    ('  lab: {card_url: "http://127.0.0.1:9/c.json", headers: {"Bad Name": x}}\n', "a2a.lab",
     "a2a_agents.lab.headers"),
])
def test_i19_a_bad_a2a_agents_entry_is_refused_at_load_naming_the_key(
    agents: str, tools: str, where: str, tmp_path: Path,
) -> None:
    config = project(tmp_path / "p", send_turns("echo x"), agents=agents, tools=tools)

    with pytest.raises(ConfigError, match=re.escape(where)):
        load_config(config)


def test_i19_header_secrets_are_read_at_connection_time_and_never_stored(
    tmp_path: Path, labs: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    lab = labs()
    agents = (f"  lab: {{card_url: {json.dumps(lab.card_url)}, "
              'headers: {Authorization: "Bearer ${LAB_TOKEN}"}}\n')
    config = project(tmp_path / "p", send_turns("echo secret-test"), agents=agents)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.delenv("LAB_TOKEN", raising=False)
    unset = CliRunner().invoke(app, ["run", str(config), "x", "--store", store, "--json"])
    assert unset.exit_code != 0 and "A2A_SECRET_MISSING" in unset.stdout + unset.stderr
    assert "a2a_agents.lab.headers.Authorization" in unset.stdout + unset.stderr

    monkeypatch.setenv("LAB_TOKEN", "tok-8c1e55d0a7")
    out = cli_json("run", str(config), "x", "--store", store)
    assert out["status"] == "succeeded"
    (sent,) = lab.sent("secret-test")
    assert sent["authorization"] == "Bearer tok-8c1e55d0a7"  # read from the environment
    shown = CliRunner().invoke(app, ["runs", "show", out["run_id"], "--store", store, "--json"])
    assert "tok-8c1e55d0a7" not in shown.stdout
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("store.db*"))
    assert b"tok-8c1e55d0a7" not in stored and b"${LAB_TOKEN}" in stored
