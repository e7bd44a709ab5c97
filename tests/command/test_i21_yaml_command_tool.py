"""Issue 21: ``command.<id>`` in a YAML agent's ``tools`` (``commands.<id>.expose_as_tool``) — the
model's call goes through the command bus of the runtime's own kernel for the run's principal
(the host's actor and project, else the local one), its result is the receipt, a dangerous
command only comes back ``accepted``, and a tool naming a command that is not exposed (or none)
is a config error naming the key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentloom.agent.command_receipts import StoreReceiptLog
from agentloom.agent.commands import RecordedCommands
from agentloom.assembly import runtime_from_config
from agentloom.assembly.commands import local_principal
from agentloom.command import CommandBus, CommandRegistry
from agentloom.config import load_config
from agentloom.errors import ConfigError
from agentloom.refs import Principal
from agentloom.store.records import operations
from agentloom.views import operation_detail

from .project import CONFIG, HANDLERS, effects

TURNS = """\
format: 1
turns:
  - tool_calls:
      - {name: command_meeting_move, arguments: {day: friday}}
      - {name: command_disk_wipe, arguments: {disk: d1}}
  - expect: {role: tool}
    text: "Moved; the wipe waits for a person."
"""


def _project(folder: Path, *, exposed: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_commands.py").write_text(HANDLERS, encoding="utf-8")
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    text = CONFIG.replace("    model: {builtin: test}\n",
                          "    model: {builtin: script, path: turns.yaml}\n"
                          "    tools: [command.meeting.move, command.disk.wipe]\n")
    for command in ("meeting.move", "disk.wipe"):
        text = text.replace(f"  {command}:\n", f"  {command}:\n    expose_as_tool: {str(exposed).lower()}\n"
                            if command == "meeting.move" or exposed else f"  {command}:\n")
    config = folder / "agentloom.yaml"
    config.write_text(text, encoding="utf-8")
    return config


@pytest.mark.parametrize("principal", [Principal(actor="alice", project="acme"), None],
                         ids=["host-principal", "local"])
async def test_i21_a_yaml_agent_calls_an_exposed_command_through_the_bus(
        tmp_path: Path, principal: Principal | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "my_commands", raising=False)  # this test's own handlers
    config = _project(tmp_path / "p")
    store = f"sqlite:///{tmp_path / 'al.db'}"
    runtime = runtime_from_config(load_config(config), store=store)
    try:
        handle = await runtime.start("move the meeting and wipe d1", principal=principal)
        result = await handle.result()
    finally:
        await runtime.aclose()
    assert result.status == "succeeded", result.error
    assert result.output == "Moved; the wipe waits for a person."
    [line] = effects(tmp_path / "p")  # the move ran once; the dangerous wipe did not run
    assert line.startswith("move friday ")
    operation_id = line.split()[2]
    acting = principal or local_principal()
    reopened = runtime_from_config(load_config(config), store=store)
    try:
        bus = CommandBus(CommandRegistry(), RecordedCommands(reopened.store),
                         StoreReceiptLog(reopened.store, reopened.kernel.coordinator))
        receipt = await bus.reconcile(operation_id, principal=acting)
        assert (receipt.state, receipt.command) == ("committed", "meeting.move")
        calls = {op.capability_key: op for op in operations(reopened.store, handle.run_id)}
        shown = {key: operation_detail(reopened.store, op) for key, op in calls.items()}
        moved, wiped = shown["command.meeting.move"], shown["command.disk.wipe"]
        assert moved["status"] == "succeeded" and '"state": "committed"' in moved["effective_result"]
        assert wiped["status"] == "succeeded" and '"state": "accepted"' in wiped["effective_result"]
        assert "token" not in wiped["effective_result"]  # the model never sees it
    finally:
        await reopened.aclose()


def test_i21_a_tool_naming_a_command_not_exposed_or_missing_is_a_config_error(
        tmp_path: Path) -> None:
    config = _project(tmp_path / "p", exposed=False)
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert "agents.main.tools[1]" in str(refused.value)
    assert "commands.disk.wipe.expose_as_tool: true" in str(refused.value)
    config.write_text(config.read_text().replace("command.disk.wipe]", "command.disk.wype]"))
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    assert "no command named 'disk.wype'" in str(refused.value)


async def test_i21_two_projects_in_one_process_run_each_its_own_handler_module(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both projects keep their handlers in a ``my_commands.py`` of their own (whose effects
    log sits beside it): each runtime runs its own project's file, not the one imported
    first in this process."""
    monkeypatch.delitem(sys.modules, "my_commands", raising=False)
    logged = {}
    for name in ("first", "second"):
        config = _project(tmp_path / name)
        runtime = runtime_from_config(load_config(config), store=f"sqlite:///{tmp_path / name}.db")
        try:
            result = await (await runtime.start("move the meeting and wipe d1")).result()
        finally:
            await runtime.aclose()
        assert result.status == "succeeded", result.error
        logged[name] = effects(tmp_path / name)
    assert [len(lines) for lines in logged.values()] == [1, 1]
    assert all(lines[0].startswith("move friday ") for lines in logged.values())
