"""Issue #35 item 4 (hooks): a hook handler kind is an open extension point.

A kind is declared once, in one registry (``agentloom.hooks.handlers.registry``), from which
config parsing (``config.handler_kinds``), the ``HookManager``'s runners and assembly
(``handler_spec``) are derived. A ``kind: grpc`` defined in this file — outside the package:
its config model, its spec and its runner, then one ``register_hook_kind`` call — is
configured in YAML, checked at load time with key paths, compiled, and run through a real
``HookManager`` and a real ``Kernel``, exactly as a built-in kind. The built-in kinds record
the same configuration version as before the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from pydantic import Field
from tests.pipeline.support import CountingTool, spec

from agentloom.config import load_config
from agentloom.config.handler_kinds import handler_config_models
from agentloom.errors import ConfigError
from agentloom.hooks import (
    HandlerRef,
    HookEvent,
    HookHandler,
    HookHandlerConfig,
    HookKind,
    HookMatch,
    HookSpec,
    register_hook_kind,
    unregister_hook_kind,
)
from agentloom.hooks.handlers import BUILTIN_KINDS, handler_spec, hook_kinds
from agentloom.hooks.manager import HookManager
from agentloom.hooks.spec import config_version
from agentloom.kernel import Kernel

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 30.0

# -- the grpc kind: everything a new kind is, in one module (this one) -------------------------


class GrpcHandlerConfig(HookHandlerConfig):
    """``handler: {kind: grpc, target: host:port, method: pkg.Service/Method}``."""

    kind: Literal["grpc"]
    target: str = Field(pattern=r"^[A-Za-z0-9.-]+:\d+$")
    method: str = Field(pattern=r"^[A-Za-z_.]+/[A-Za-z_]+$")
    timeout_s: float | None = Field(default=None, gt=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class GrpcHookHandler(HookHandler):
    kind: Literal["grpc"] = "grpc"
    target: str
    method: str


Service = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
SERVICES: dict[str, Service] = {}
"""``target`` → a stand-in for the server at that address (a channel, in a real kind)."""


class GrpcHookRunner:
    """Calls ``method`` on ``target`` with the event; the answer is the decision."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    async def run(self, spec: HookSpec, event: HookEvent) -> Any:
        handler = spec.handler
        assert isinstance(handler, GrpcHookHandler)
        self.calls.append((handler.target, handler.method, event.capability))
        return SERVICES[handler.target](handler.method, event)


GRPC = HookKind(name="grpc", config=GrpcHandlerConfig, spec=GrpcHookHandler,
                from_config=lambda config, base_dir: GrpcHookHandler(target=config.target,
                                                                     method=config.method),
                runner=GrpcHookRunner)


def guard(method: str, event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The policy service: no deletes."""
    assert method == "policy.Guard/Check"
    if event["capability"] == "demo.echo" and event["payload"].get("text") == "delete":
        return {"decision": "deny", "reason": "deletes are not allowed"}
    return {"decision": "allow"}


@pytest.fixture
def grpc_kind() -> Iterator[HookKind[Any, Any]]:
    SERVICES["policy:50051"] = guard
    register_hook_kind(GRPC)  # the one registry call
    yield GRPC
    unregister_hook_kind("grpc")
    SERVICES.clear()


# -- helpers -----------------------------------------------------------------------------------

AGENT = "version: 1\nagents:\n  main:\n    model: {builtin: test}\n    hooks:\n"


def write_config(tmp_path: Path, handler: str) -> Path:
    path = tmp_path / "agentloom.yaml"
    path.write_text(AGENT + f"      - {{timing: before, handler: {handler}}}\n", encoding="utf-8")
    return path


def load_error(tmp_path: Path, handler: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(write_config(tmp_path, handler))
    return str(caught.value)


def event(capability: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    return {"timing": "before", "event": "tool", "capability": capability,
            "exposed_name": capability.replace(".", "_"), "role": "main", "run_id": "r1",
            "operation_id": "op1", "purpose": None, "payload": dict(payload),
            "payload_version": 0, "proposed_payload": dict(payload)}


# -- the contract ------------------------------------------------------------------------------


async def test_i35_4_a_kind_registered_from_outside_is_configured_in_yaml_and_run_by_a_hook_manager(
    tmp_path: Path, grpc_kind: HookKind[Any, Any],
) -> None:
    config = load_config(write_config(
        tmp_path, '{kind: grpc, target: "policy:50051", method: policy.Guard/Check, timeout_s: 4}'))
    (hook,) = config.agents["main"].hooks
    assert isinstance(hook, type(config.agents["main"].hooks[0]))
    handler = hook.handler  # type: ignore[union-attr]
    assert isinstance(handler, GrpcHandlerConfig) and hook.hook_timeout_s == 4  # type: ignore[union-attr]
    assert config.model_dump()["agents"]["main"]["hooks"][0]["handler"] == {
        "kind": "grpc", "target": "policy:50051", "method": "policy.Guard/Check", "timeout_s": 4.0}

    compiled = HookSpec(hook_id="grpc-guard", timing="before",
                        handler=handler_spec(handler, config.base_dir), timeout_s=4)
    assert compiled.handler == GrpcHookHandler(target="policy:50051", method="policy.Guard/Check")
    manager = HookManager([compiled])
    runner = manager.runner("grpc")
    assert isinstance(runner, GrpcHookRunner)

    denied = await manager.run(compiled, event("demo.echo", {"text": "delete"}))
    allowed = await manager.run(compiled, event("demo.echo", {"text": "hello"}))
    assert (denied.status, denied.decision and denied.decision.decision) == ("succeeded", "deny")
    assert denied.decision is not None and denied.decision.reason == "deletes are not allowed"
    assert (allowed.status, allowed.decision and allowed.decision.decision) == ("succeeded", "allow")
    assert runner.calls == [("policy:50051", "policy.Guard/Check", "demo.echo")] * 2
    assert compiled.to_dict()["handler"] == {"kind": "grpc", "target": "policy:50051",
                                             "method": "policy.Guard/Check"}


def test_i35_4_a_bad_handler_of_a_registered_kind_fails_at_load_naming_its_key(
    tmp_path: Path, grpc_kind: HookKind[Any, Any],
) -> None:
    assert load_error(tmp_path, "{kind: grpc, method: policy.Guard/Check}").endswith(
        "agents.main.hooks[0].handler.target: is required; add it")
    assert load_error(tmp_path, '{kind: grpc, target: "policy:50051", method: m, port: 1}').endswith(
        "agents.main.hooks[0].handler.method: string should match pattern "
        "'^[A-Za-z_.]+/[A-Za-z_]+$' (got 'm')\n"
        "agents.main.hooks[0].handler.port: unknown key 'port'; allowed keys at "
        "agents.main.hooks[0].handler: kind, method, target, timeout_s")
    assert load_error(tmp_path, "{kind: wasm, ref: 'h:f'}").endswith(
        "agents.main.hooks[0].handler: unknown handler kind 'wasm'; use kind: python, command, "
        "http, mcp or grpc")


def test_i35_4_an_unregistered_kind_is_unknown_at_load_and_the_built_in_messages_hold(
    tmp_path: Path,
) -> None:
    assert load_error(tmp_path, '{kind: grpc, target: "policy:50051", method: a.B/C}').endswith(
        "agents.main.hooks[0].handler: unknown handler kind 'grpc'; use kind: python, command, "
        "http or mcp")
    assert load_error(tmp_path, "{kind: command, command: ls, shell: sh}").endswith(
        "agents.main.hooks[0].handler.shell: unknown key 'shell'; allowed keys at "
        "agents.main.hooks[0].handler: argv, command, env, format, kind, timeout_s")
    assert load_error(tmp_path, "{kind: command}").endswith(
        "agents.main.hooks[0].handler: give exactly one of `command` (a shell command line) or "
        "`argv` (a list: the program and its arguments, no shell)")


async def test_i35_4_a_registered_kind_runs_in_a_kernel_built_by_the_public_path(
    tmp_path: Path, grpc_kind: HookKind[Any, Any],
) -> None:
    hook = HookSpec(hook_id="grpc-guard", timing="before", match=HookMatch(capability="demo.*"),
                    handler=GrpcHookHandler(target="policy:50051", method="policy.Guard/Check"))
    kernel = Kernel(f"sqlite:///{tmp_path / 'agentloom.db'}", hooks=[hook],
                    workspace_root=tmp_path / "ws")
    try:
        tool = CountingTool()
        kernel.publish("rel", [(spec(), tool)], roles={"main": ["demo.echo"]})
        lease = await kernel.start_run(workspace=False)
        ctx = kernel.invocation_context(lease, release_id="rel")
        denied = await asyncio.wait_for(kernel.bus.request("demo_echo", {"text": "delete"}, ctx),
                                        WAIT_S)
        allowed = await asyncio.wait_for(kernel.bus.request("demo_echo", {"text": "hi"}, ctx),
                                         WAIT_S)
        assert (denied.outcome, allowed.outcome) == ("denied_before_execution", "succeeded")
        (row,) = kernel.store.query("hook_invocations", {"operation_id": denied.operation_id})
        assert (row["hook_id"], row["status"], row["decision"]) == ("grpc-guard", "succeeded",
                                                                    "deny")
        assert [c["arguments"] for c in tool.calls] == [{"text": "hi"}]
    finally:
        kernel.close()


async def test_i35_4_a_kind_without_a_runner_of_its_own_takes_the_one_each_runtime_passes(
    grpc_kind: HookKind[Any, Any],
) -> None:
    unregister_hook_kind("grpc")
    register_hook_kind(dataclasses.replace(GRPC, runner=None))  # a runner per runtime instead
    hook = HookSpec(hook_id="g", timing="before",
                    handler=HandlerRef(kind="grpc", target="policy:50051",
                                       method="policy.Guard/Check"))
    with pytest.raises(ConfigError, match="handler kind 'grpc' is not available"):
        HookManager([hook])
    mine = GrpcHookRunner()
    manager = HookManager([hook], runners={"grpc": mine})  # what Runtime(hook_runners=…) passes
    assert manager.runner("grpc") is mine
    assert (await manager.run(hook, event("demo.echo", {"text": "x"}))).status == "succeeded"
    assert mine.calls == [("policy:50051", "policy.Guard/Check", "demo.echo")]


def test_i35_4_the_kind_is_one_module_and_one_registry_call(grpc_kind: HookKind[Any, Any]) -> None:
    assert {GrpcHandlerConfig.__module__, GrpcHookHandler.__module__,
            GrpcHookRunner.__module__} == {__name__}
    # The one call reached every place a kind used to be declared: config, specs, runners.
    assert handler_config_models()["grpc"] is GrpcHandlerConfig
    assert hook_kinds()["grpc"] is GRPC
    assert isinstance(HookManager().runner("grpc"), GrpcHookRunner)
    assert HandlerRef(kind="grpc", target="t:1", method="a.B/C") == GrpcHookHandler(
        target="t:1", method="a.B/C")
    with pytest.raises(ValueError, match="registered already"):
        register_hook_kind(dataclasses.replace(GRPC, runner=None))
    with pytest.raises(ValueError, match="built in"):
        unregister_hook_kind("python")


def test_i35_4_the_built_in_kinds_are_the_registry_s_one_list() -> None:
    names = ("python", "command", "http", "mcp")
    assert tuple(k.name for k in BUILTIN_KINDS) == names
    assert tuple(hook_kinds()) == tuple(handler_config_models()) == names
    for kind in BUILTIN_KINDS:  # one module per kind: its spec and its runner
        assert kind.spec.__module__ == f"agentloom.hooks.handlers.{kind.name}"
        assert kind.runner is not None and kind.runner.__module__ == kind.spec.__module__
        assert handler_config_models()[kind.name] is kind.config
    assert set(HookManager()._runners) == set(names)


def test_i35_4_the_built_in_handlers_record_the_same_version_as_before() -> None:
    """The digest the hooks' configuration version had with the one-struct ``HandlerRef``."""
    specs = (
        HookSpec(hook_id="p", timing="before", handler=HandlerRef(ref="m:f")),
        HookSpec(hook_id="c", timing="before", handler=HandlerRef(
            kind="command", command="./x.sh", env={"T": "${TOKEN}"}, project_dir="/p")),
        HookSpec(hook_id="a", timing="after", match=HookMatch(capability="fs.*"),
                 handler=HandlerRef(kind="command", argv=["python3", "c.py"],
                                    format="claude-code")),
        HookSpec(hook_id="h", timing="before", handler=HandlerRef(
            kind="http", url="https://x.example/h", allow_private=True,
            headers={"Authorization": "Bearer ${T}", "X-Lit": "secret"})),
        HookSpec(hook_id="m", timing="before", handler=HandlerRef(
            kind="mcp", server="s", tool="t", project_dir="/p")),
    )
    assert config_version(specs) == "9ed54b8e4d6b7d22"
    assert [type(s.handler).__name__ for s in specs] == [
        "PythonHookHandler", "CommandHookHandler", "CommandHookHandler", "HttpHookHandler",
        "McpHookHandler"]
    with pytest.raises(ValueError, match="exactly one of command or argv"):
        HandlerRef(kind="command")
    with pytest.raises(TypeError):
        HandlerRef(kind="python", ref="m:f", url="http://x")  # a field of another kind


def documented_section() -> tuple[str, str]:
    """docs/hooks.md "Adding a handler kind": its module (Python) and its YAML."""
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    section = text[text.index("## Adding a handler kind"):]
    section = section[:section.index("\n## ", 1)]
    (code,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    (block,) = re.findall(r"^```yaml\n(.*?)^```", section, re.S | re.M)
    return code, block


@contextlib.contextmanager
def documented_handler_kind() -> Iterator[str]:
    """The documented module imported (``my_kinds``: it registers ``kind: denylist``) for as
    long as the block lasts, as the docs say a program does before loading its configuration;
    yields the module's name."""
    code, _ = documented_section()
    module = types.ModuleType("my_kinds")
    sys.modules["my_kinds"] = module
    try:
        exec(compile(code, "my_kinds.py", "exec"), module.__dict__)
        yield module.__name__
    finally:
        if "denylist" in hook_kinds():
            unregister_hook_kind("denylist")
        del sys.modules["my_kinds"]


async def test_i35_4_the_documented_kind_loads_and_runs(tmp_path: Path) -> None:
    """docs/hooks.md "Adding a handler kind": its module and its YAML, as written."""
    _, block = documented_section()
    with documented_handler_kind():
        (entry,) = yaml.safe_load(block)["agents"]["main"]["hooks"]
        path = tmp_path / "agentloom.yaml"
        path.write_text(yaml.safe_dump({"version": 1, "agents": {"main": {
            "model": {"builtin": "test"}, "hooks": [entry]}}}), encoding="utf-8")
        (hook,) = load_config(path).agents["main"].hooks
        compiled = HookSpec(hook_id="deny", timing="before",
                            handler=handler_spec(hook.handler, tmp_path))  # type: ignore[union-attr]
        manager = HookManager([compiled])
        denied = await manager.run(compiled, event("fs.delete", {"path": "x"}))
        allowed = await manager.run(compiled, event("fs.read", {"path": "x"}))
        assert denied.decision is not None and denied.decision.decision == "deny"
        assert allowed.decision is not None and allowed.decision.decision == "allow"
        with pytest.raises(ConfigError, match=re.escape(
                "agents.main.hooks[0].handler.capabilities: is required; add it")):
            load_config(write_config(tmp_path, "{kind: denylist}"))
    assert "denylist" not in hook_kinds()
