"""Handler traits are part of the handler port (issue #13 item 2): every handler declares
``rerunnable`` and ``recoverable``, and the pipeline acts on what it declares."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from tests.pipeline.support import CountingTool

from agentloom.agent.delegation import DelegationHandler
from agentloom.errors import RegistrationError
from agentloom.models.manager import ModelHandler
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.results import ToolResult
from agentloom.tools.manager import ToolManager

SRC = Path(__file__).resolve().parents[2] / "src" / "agentloom"


def _handler_classes() -> list[tuple[str, ast.ClassDef]]:
    """Every class in src that defines ``invoke_once`` (a capability handler)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(item, ast.AsyncFunctionDef) and item.name == "invoke_once"
                    for item in node.body):
                found.append((f"{path.relative_to(SRC)}:{node.name}", node))
    return found


def _declared(node: ast.ClassDef) -> dict[str, Any]:
    return {target.id: ast.literal_eval(item.value) for item in node.body
            if isinstance(item, ast.Assign) for target in item.targets
            if isinstance(target, ast.Name)}


def test_13_2_every_handler_in_src_declares_rerunnable_and_recoverable() -> None:
    handlers = [(name, node) for name, node in _handler_classes()
                if node.name != "CapabilityHandler"]
    assert len(handlers) >= 7  # the models, delegation, tools, result.read, exec, fs, bus
    for name, node in handlers:
        declared = _declared(node)
        assert isinstance(declared.get("rerunnable"), bool), name
        assert isinstance(declared.get("recoverable"), bool), name


def test_13_2_the_protocol_gives_false_defaults_to_a_handler_that_subclasses_it() -> None:
    class Plain(CapabilityHandler):
        async def invoke_once(self, request: Any, context: Any) -> ToolResult:
            return ToolResult.success({})

    assert Plain().rerunnable is False and Plain().recoverable is False


def test_13_2_a_model_call_is_rerunnable_and_a_delegation_recoverable() -> None:
    assert ModelHandler.rerunnable is True and ModelHandler.recoverable is False
    assert DelegationHandler.recoverable is True and DelegationHandler.rerunnable is False


async def test_13_2_a_rerunnable_handler_without_hooks_commits_its_call_once(make: Any) -> None:
    class Rerunnable(CountingTool):
        rerunnable = True

    # no context record either: the intent then has nothing to commit before the Attempt
    plain = await make(private_context=False)
    rerun = await make(tool=Rerunnable(), private_context=False)
    commits = []
    for h in (plain, rerun):
        before = h.kernel.coordinator.stats.write_sets
        assert (await h.call({"text": "x"})).outcome == "succeeded"
        commits.append(h.kernel.coordinator.stats.write_sets - before)
    assert commits == [2, 1]


def test_13_2_a_handler_without_its_traits_is_refused_when_registered() -> None:
    """A handler written outside src that declares no traits gets a clear error at wiring
    time, naming what is missing, never an AttributeError in the middle of a call."""
    class Bare:
        async def invoke_once(self, request: Any, context: Any) -> ToolResult:
            return ToolResult.success({})

    manager = ToolManager()
    with pytest.raises(RegistrationError, match="does not declare rerunnable and recoverable"):
        manager.register("mine", Bare())  # type: ignore[arg-type]
    manager.register("mine", CountingTool())  # declares both: accepted under the same ref
