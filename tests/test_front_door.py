"""Issue #13 item 1: one front door — ``agentloom.Runtime`` with ``@agentloom.tool`` functions
and ``@agentloom.hook`` callables, and one ``__all__`` policy for the public packages."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

import agentloom
import agentloom.agent
import agentloom.hooks
import agentloom.tools
from agentloom import CatalogError, ConfigError, HookMatch, HookSpec, Tool, ToolContext, ToolResult
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.hooks import hook_specs
from agentloom.models.offline import Script, ScriptModel
from agentloom.tools import FunctionTool, ToolHandler

WAIT_S = 30.0
"""A deadline on every wait of these tests; never a synchronisation delay."""


# --- tools and hooks at module level: their refs are importable ------------------------------


@agentloom.tool
async def add(ctx: ToolContext, a: int, b: int = 0) -> dict[str, Any]:
    """Add two integers.

    The model sees only this first paragraph.

    Args:
        a: the first addend.
        b: the second addend,
            zero when left out.
    """
    return {"sum": a + b, "run_id": ctx.run_id}


@agentloom.tool(name="text.shout", description="Upper-case a text.")
def shout(text: Annotated[str, Field(min_length=1)], times: int = 1) -> str:
    return " ".join([text.upper()] * times)


@agentloom.hook(match="text.shout", on_failure="deny", timeout_s=5)
def no_secrets(event: Any) -> dict[str, Any]:
    """Deny a shout of a secret; strip the blanks around any other text."""
    text = event["payload"]["text"]
    if "secret" in text:
        return {"decision": "deny", "reason": "secrets are not shouted"}
    return {"decision": "allow",
            "payload_patch": [{"op": "replace", "path": "/payload/text", "value": text.strip()}]}


def allow_all(event: Any) -> dict[str, Any]:
    return {"decision": "allow"}


# --- the decorator --------------------------------------------------------------------------


def test_13_1_tool_decorator_builds_a_strict_schema_from_the_signature() -> None:
    assert isinstance(add, Tool) and isinstance(add, FunctionTool)
    assert add.name == "add"
    assert add.input_schema() == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "the first addend."},
            "b": {"type": "integer", "default": 0,
                  "description": "the second addend, zero when left out."},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    # Annotated constraints reach the schema; required = the parameters without a default
    schema = shout.input_schema()
    assert schema["properties"]["text"] == {"type": "string", "minLength": 1}
    assert schema["required"] == ["text"]


def test_13_1_tool_description_is_the_docstring_first_paragraph_unless_given() -> None:
    assert add.description == "Add two integers."
    assert shout.name == "text.shout" and shout.description == "Upper-case a text."

    @agentloom.tool
    def undocumented(x: int) -> str:
        return str(x)

    assert undocumented.description == ""


def test_13_1_tool_decorated_function_stays_callable_as_itself() -> None:
    assert shout("hi", times=2) == "HI HI"
    assert shout.__name__ == "shout" and shout.__wrapped__ is not None  # type: ignore[attr-defined]


def attempt() -> AttemptContext:
    return AttemptContext(operation_id="op-1", attempt_no=1, run_id="run-1", role=None,
                          deadline=time.time() + 60)


def call(tool: Tool[Any], **arguments: Any) -> ToolResult:
    request = CapabilityRequest(operation_id="op-1", resource_version_id="rv-1",
                                capability_key=tool.name, arguments=arguments)
    return asyncio.run(asyncio.wait_for(ToolHandler(tool).invoke_once(request, attempt()),
                                        WAIT_S))


def test_13_1_tool_async_with_context_and_sync_without_both_run_through_the_handler() -> None:
    result = call(add, a=2, b=3)
    assert result.status == "succeeded"
    assert result.to_dict()["content"][0]["data"] == {"sum": 5, "run_id": "run-1"}

    result = call(shout, text="hey")
    assert result.status == "succeeded"
    assert result.to_dict()["content"][0]["text"] == "HEY"


def test_13_1_tool_arguments_are_validated_strictly_before_the_function_runs() -> None:
    ran: list[int] = []

    @agentloom.tool
    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return str(n)

    for arguments in ({"n": 1, "extra": True}, {}, {"n": "many"}):
        result = call(count, **arguments)
        assert result.status == "failed"
        assert result.error is not None and result.error.code == "INVALID_ARGUMENTS"
    assert ran == []


def test_13_1_tool_return_values_are_wrapped_like_a_tool_subclass() -> None:
    @agentloom.tool
    def passthrough(kind: str) -> Any:
        """Return a value of a kind."""
        values: dict[str, Any] = {
            "list": [1, 2], "none": None,
            "result": ToolResult.unknown(agentloom.OperationError(
                code="X", category="unknown", message="maybe", external_outcome="unknown")),
            "int": 3, "set": {1, 2},
        }
        return values[kind]

    assert call(passthrough, kind="list").to_dict()["content"][0]["data"] == [1, 2]
    assert call(passthrough, kind="none").status == "succeeded"
    assert call(passthrough, kind="result").status == "unknown"
    assert call(passthrough, kind="int").to_dict()["content"][0]["data"] == {"result": 3}  # i36 (1)
    bad = call(passthrough, kind="set")
    assert bad.status == "failed"
    assert bad.error is not None and bad.error.code == "INVALID_TOOL_OUTPUT"
    assert bad.error.external_outcome == "known"


def test_13_1_tool_exception_fails_the_call_classified() -> None:
    @agentloom.tool
    async def missing(path: str) -> str:
        """Open a file that is not there."""
        raise FileNotFoundError(path)

    result = call(missing, path="nope.txt")
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "NOT_FOUND"


@pytest.mark.parametrize(("source", "says"), [
    ("def f(x): ...", "parameter 'x' has no type annotation"),
    ("def f(*items: int): ...", "parameter 'items' is *args or **kwargs"),
    ("def f(**options: int): ...", "parameter 'options' is *args or **kwargs"),
    ("import socket\ndef f(conn: socket.socket): ...", "parameter 'conn': unsupported type"),
    ("from collections.abc import Callable\ndef f(cb: Callable[[], int]): ...",
     "parameter 'cb': unsupported type"),
    ("def f(a: int, ctx: ToolContext): ...", "a ToolContext parameter must come first"),
    ("def f(_hidden: int): ...", "parameter '_hidden' starts with '_'"),
])
def test_13_1_tool_bad_definition_raises_catalog_error_at_decoration(source: str, says: str) -> None:
    namespace: dict[str, Any] = {"ToolContext": ToolContext}
    exec(source, namespace)
    with pytest.raises(CatalogError, match=r"@tool .*f: ") as caught:
        agentloom.tool(namespace["f"])
    assert says in str(caught.value)


def test_13_1_tool_lambda_needs_a_name() -> None:
    with pytest.raises(CatalogError, match="needs a name"):
        agentloom.tool(lambda: "x")


# --- hooks as callables ---------------------------------------------------------------------


def test_13_1_hook_callables_compile_to_specs_with_stable_refs() -> None:
    spec = HookSpec(hook_id="config", timing="after", handler=agentloom.HandlerRef(ref="m:f"))
    specs, functions = hook_specs([no_secrets, spec, allow_all])

    assert specs[0] == HookSpec(
        hook_id="no_secrets", timing="before", event="tool",
        match=HookMatch(capability="text.shout"), on_failure="deny", timeout_s=5,
        handler=agentloom.HandlerRef(ref=f"{__name__}:no_secrets"))
    assert specs[1] is spec
    # a plain callable: a before hook on every tool call, the spec's defaults
    assert specs[2] == HookSpec(hook_id="allow_all", timing="before",
                                handler=agentloom.HandlerRef(ref=f"{__name__}:allow_all"))
    assert functions == {f"{__name__}:no_secrets": no_secrets,
                         f"{__name__}:allow_all": allow_all}
    assert hook_specs([no_secrets, spec, allow_all])[0] == specs  # the same hooks, the same specs


def test_13_1_hook_two_distinct_callables_of_one_name_get_distinct_refs() -> None:
    def make(word: str) -> Any:
        def guard(event: Any) -> dict[str, Any]:
            return {"decision": "deny" if word in str(event) else "allow"}
        return guard

    first, second = make("a"), make("b")
    specs, functions = hook_specs([agentloom.hook(hook_id="a")(first),
                                   agentloom.hook(hook_id="b")(second)])
    refs = [s.handler.ref for s in specs]
    assert refs[1] == refs[0] + "#2"
    assert functions[refs[0]] is first and functions[refs[1]] is second


def test_13_1_hook_bad_entries_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"hooks\[0\] is a str"):
        hook_specs(["not a hook"])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="hook ids must be unique"):
        hook_specs([allow_all, agentloom.hook(hook_id="allow_all")(lambda event: None)])
    with pytest.raises(ConfigError, match="timing must be one of"):
        agentloom.hook(timing="during")  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="timeout_s must be positive"):
        agentloom.hook(timeout_s=0)


def script(*turns: dict[str, Any]) -> ScriptModel:
    return ScriptModel(Script.model_validate({"turns": list(turns)}), source="front-door")


def runtime(tmp_path: Path, model: ScriptModel, hooks: list[Any]) -> agentloom.Runtime:
    return agentloom.Runtime(
        [agentloom.AgentSpec(name="main", model=model, tools=("fs.read", add, shout))],
        store=f"sqlite:///{tmp_path / 'agentloom.db'}", hooks=hooks,
        workspace_root=tmp_path / "workspaces")


async def test_13_1_runtime_runs_decorated_tools_under_a_callable_hook_that_denies_and_rewrites(
    tmp_path: Path,
) -> None:
    seen: list[str] = []

    def audit(event: Any) -> dict[str, Any]:  # plain callable: before every tool call
        seen.append(event["capability"])
        return {"decision": "allow"}

    model = script(
        {"tool_calls": [
            {"id": "c-add", "name": "add", "arguments": {"a": 2, "b": 3}},
            {"id": "c-hi", "name": "text_shout", "arguments": {"text": "  hi  ", "times": 2}},
            {"id": "c-secret", "name": "text_shout", "arguments": {"text": "my secret"}}]},
        {"expect": {"role": "tool", "contains": "secrets are not shouted"}, "text": "done"},
    )
    rt = runtime(tmp_path, model, [no_secrets, audit])
    try:
        result = await asyncio.wait_for(rt.run("add and shout"), WAIT_S)
        operations = {r["data"]["request"]["call_id"]: r
                      for r in rt.kernel.operations(result.run_id) if r["event_type"] == "tool"}
    finally:
        await rt.aclose()

    assert result.status == "succeeded", result.error
    assert result.output == "done"
    assert {k: r["outcome"] for k, r in operations.items()} == {
        "c-add": "succeeded", "c-hi": "succeeded", "c-secret": "denied_before_execution"}
    assert json.dumps(operations["c-add"]["data"]).count('"sum": 5') == 1
    assert '"HI HI"' in json.dumps(operations["c-hi"]["data"])  # the rewritten text ran
    assert sorted(seen) == ["add", "text.shout"]  # the deny came first: audit never saw it


async def test_13_1_release_digest_is_the_same_for_the_same_callable_hooks(tmp_path: Path) -> None:
    made = [runtime(tmp_path / str(n), script({"text": "hi"}), [no_secrets, allow_all])
            for n in range(2)]
    other = runtime(tmp_path / "other", script({"text": "hi"}), [allow_all, no_secrets])
    try:
        assert made[0].release_id == made[1].release_id
        assert other.release_id != made[0].release_id  # the order is part of the release
    finally:
        for rt in (*made, other):
            await rt.aclose()


# --- the public surface ---------------------------------------------------------------------


def test_13_1_front_door_names_are_exported_at_the_top() -> None:
    assert agentloom.Runtime is agentloom.agent.Runtime
    assert agentloom.AgentSpec is agentloom.agent.AgentSpec
    assert agentloom.Limits is agentloom.agent.Limits
    assert agentloom.RunResult is agentloom.agent.RunResult
    assert agentloom.tool is agentloom.tools.tool
    assert agentloom.hook is agentloom.hooks.hook
    assert "Kernel" in agentloom.__all__ and "RoutingError" not in agentloom.__all__
    assert "advanced layer" in (agentloom.Kernel.__doc__ or "")


@pytest.mark.parametrize("package", [agentloom, agentloom.agent, agentloom.tools, agentloom.hooks])
def test_13_1_public_package_all_is_sorted_public_and_resolves(package: Any) -> None:
    names = package.__all__
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    assert [n for n in names if n.startswith("_")] == []
    assert [n for n in names if not hasattr(package, n)] == []


def test_13_1_importing_a_subpackage_alone_works() -> None:
    import subprocess
    import sys

    for module in ("agentloom.store", "agentloom.tools.function", "agentloom.hooks",
                   "agentloom.kernel"):
        done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                              text=True, timeout=WAIT_S)
        assert done.returncode == 0, done.stderr
