"""Issue #34 (LOW): the documented ``exec`` guard must hold. A list of refused programs is walked
around by ``sh -c 'rm …'``, ``env rm …`` and the like; docs/hooks.md's guard
(``guards:check_exec``, ``on_failure: deny``) is now examples/exec_guard/guards.py, an allow-list.

The hook exactly as the docs configure it runs in a real kernel before an ``exec`` capability (a
counting stand-in with ``exec``'s input schema): every bypass is denied before execution, and
the allowed commands run with their arguments unchanged."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from tests.pipeline.support import CountingTool, spec

from agentloom import Kernel
from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.tools.builtin.exec import EXEC_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
GUARDS = ROOT / "examples" / "exec_guard" / "guards.py"
WAIT_S = 30.0

BYPASSES: list[dict[str, Any]] = [
    {"argv": ["rm", "-rf", "/work"]},
    {"argv": ["sh", "-c", "rm -rf /work"]},
    {"argv": ["bash", "-c", "rm -rf /work"]},
    {"argv": ["/bin/sh", "-c", "rm -rf /work"]},
    {"argv": ["env", "rm", "-rf", "/work"]},
    {"argv": ["/usr/bin/env", "rm", "-rf", "/work"]},
    {"argv": ["/bin/rm", "-rf", "/work"]},
    {"argv": ["command", "rm", "-rf", "/work"]},
    {"argv": ["xargs", "rm", "-rf"]},
    {"argv": ["nice", "rm", "-rf", "/work"]},
    {"argv": ["timeout", "5", "rm", "-rf", "/work"]},
    {"argv": ["busybox", "rm", "-rf", "/work"]},
    {"argv": ["python3", "-c", "import shutil; shutil.rmtree('/work')"]},
    {"argv": ["find", ".", "-delete"]},
    {"argv": ["./ls"]},
    {"argv": ["/work/ls"]},
    {"argv": ["/usr/bin/../../work/ls"]},
    {"shell_script": "rm -rf /work"},
    {"argv": ["ls"], "env_patch": {"LD_PRELOAD": "/work/evil.so"}},
    {"argv": ["ls"], "env_patch": {"PATH": "/work"}},
]

ALLOWED: list[dict[str, Any]] = [
    {"argv": ["ls", "-la"]},
    {"argv": ["echo", "rm -rf /work"]},  # a word that names rm is only data to echo
    {"argv": ["/usr/bin/wc", "-l", "notes.txt"]},
    {"argv": ["grep", "-F", "--", "sh -c", "notes.txt"], "env_patch": {"LANG": "C"}},
]


@pytest.fixture(scope="module")
def guards() -> Iterator[ModuleType]:
    loaded = importlib.util.spec_from_file_location("i34_example_guards", GUARDS)
    assert loaded is not None and loaded.loader is not None
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    yield module


def documented_hook() -> HookSpec:
    """The guard's hook exactly as docs/hooks.md's YAML declares it."""
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)
                if "guards:check_exec" in b]
    (entry,) = yaml.safe_load(block)["hooks"]
    assert "examples/exec_guard/guards.py" in text
    return HookSpec(hook_id=entry["hook_id"], timing=entry["timing"],
                    match=HookMatch(**entry["match"]), on_failure=entry["on_failure"],
                    timeout_s=entry["timeout_s"], handler=HandlerRef(**entry["handler"]))


def test_i34_the_example_guard_refuses_each_bypass_with_a_reason(guards: ModuleType) -> None:
    for payload in BYPASSES:
        decision = guards.check_exec({"payload": payload})
        assert decision["decision"] == "deny", payload
        assert decision["reason"], payload
    for payload in ALLOWED:
        assert guards.check_exec({"payload": payload}) == {"decision": "allow"}, payload
    assert "not allowed here" in guards.check_exec({"payload": BYPASSES[0]})["reason"]
    assert not guards.ALLOWED & (guards.SHELLS | guards.LAUNCHERS | guards.INTERPRETERS)


async def test_i34_the_documented_exec_guard_denies_the_bypasses_and_lets_allowed_commands_run(
    durable_store_url: str, guards: ModuleType,
) -> None:
    documented = documented_hook()
    assert (documented.handler.ref, documented.on_failure) == ("guards:check_exec", "deny")
    tool = CountingTool()
    kernel = Kernel(durable_store_url, hooks=[documented],
                    hook_functions={"guards:check_exec": guards.check_exec})
    try:
        kernel.publish("rel", [(spec("exec", EXEC_SCHEMA), tool)], roles={"main": ["exec"]})
        lease = await kernel.start_run()
        ctx = kernel.invocation_context(lease, release_id="rel")
        for payload in BYPASSES:
            result = await asyncio.wait_for(kernel.bus.request("exec", payload, ctx), WAIT_S)
            assert result.outcome == "denied_before_execution", payload
            (row,) = kernel.store.query("hook_invocations", {"operation_id": result.operation_id})
            assert (row["status"], row["decision"]) == ("succeeded", "deny"), payload
        assert tool.calls == []  # not one bypass reached the tool

        for payload in ALLOWED:
            result = await asyncio.wait_for(kernel.bus.request("exec", payload, ctx), WAIT_S)
            assert result.outcome == "succeeded", (payload, result.describe())
        assert [c["arguments"] for c in tool.calls] == ALLOWED
    finally:
        kernel.close()
