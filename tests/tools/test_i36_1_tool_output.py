"""Issue #36 (1): a tool's return value is accepted when it is JSON.

A number or a bool is delivered as ``{"result": value}``; a value JSON cannot hold is a
*failed* call, ``INVALID_TOOL_OUTPUT``, whose external outcome is ``known`` (the tool ran and
ended); a return annotation that could never be delivered is refused when the function is
decorated. Runs are real: a Runtime on a SQLite file, read back with ``agentloom runs show
--json``; the README's own Python snippet is extracted and run as a user would.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Literal

import pydantic
import pytest

import agentloom
from agentloom.errors import CatalogError
from agentloom.models.offline import Script, ScriptModel
from agentloom.results import ToolResult

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, cwd: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "agentloom", *argv, "--json"], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def _tool_ops(shown: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for op in shown["operations"] if op["kind"] != "model"]


# -- the README's Python example ------------------------------------------------------------

def _readme_python_snippet() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"In Python \(docs/python\.md.*?\n```python\n(.*?)\n```", readme, re.DOTALL)
    assert found is not None, "README.md has no 'In Python' snippet"
    return found.group(1)


def test_i36_1_the_readme_python_example_ends_succeeded_with_no_failed_call(tmp_path: Path) -> None:
    snippet = _readme_python_snippet()
    assert "-> int" in snippet  # the example this point is about: a tool returning an int
    program = ("import asyncio, json\n\nasync def main():\n" + textwrap.indent(snippet, "    ")
               + "\n    print(json.dumps({'run_id': result.run_id, 'status': result.status}))"
               + "\n    await runtime.aclose()\n\nasyncio.run(main())\n")
    (tmp_path / "example.py").write_text(program, encoding="utf-8")
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran["status"] == "succeeded"

    shown = _cli("runs", "show", ran["run_id"], "--store", "sqlite:///.agentloom/agentloom.db",
                 cwd=tmp_path)
    assert shown["status"] == "succeeded"
    ops = _tool_ops(shown)
    assert {op["capability"] for op in ops} >= {"fs.list"}
    assert [op["status"] for op in ops] == ["succeeded"] * len(ops)
    assert "INVALID_TOOL_OUTPUT" not in json.dumps(shown)
    counted = [op for op in ops if op["capability"].endswith("count_words")]
    assert len(counted) == 1 and json.loads(counted[0]["effective_result"]) == {"result": 1}


# -- through a run: what the store records --------------------------------------------------

class Point(pydantic.BaseModel):
    x: int
    y: int


@agentloom.tool
def produce(kind: str) -> Any:
    """Return a value of the kind asked for."""
    values: dict[str, Any] = {
        "int": 3, "float": 2.5, "bool": True, "list": [1, "a"], "str": "plain text",
        "dict": {"a": 1}, "model": Point(x=1, y=2), "none": None,
        "set": {1, 2}, "nested": {"when": object()}, "nan": float("nan"),
    }
    return values[kind]


KINDS = ["int", "float", "bool", "list", "str", "dict", "model", "none", "set", "nested", "nan"]


def _run_produce(tmp_path: Path) -> dict[str, Any]:
    script = Script.model_validate({"turns": [
        {"tool_calls": [{"name": "produce", "arguments": {"kind": k}} for k in KINDS]},
        # the model reads a failure, not "outcome unknown (it may or may not have taken effect)"
        {"expect": {"role": "tool", "contains": "failed: tool 'produce' ran but returned float"},
         "text": "done"},
    ]})
    store = f"sqlite:///{tmp_path / 'out.db'}"

    async def go() -> str:
        runtime = agentloom.Runtime(
            [agentloom.AgentSpec(name="main", model=ScriptModel(script), tools=(produce,))],
            store=store)
        try:
            result = await runtime.run("Produce values")
            assert result.status == "succeeded", result
            return result.run_id
        finally:
            await runtime.aclose()

    run_id = asyncio.run(go())
    return _cli("runs", "show", run_id, "--store", store, cwd=tmp_path)


def test_i36_1_json_values_are_delivered_and_the_rest_fails_with_a_known_outcome(
        tmp_path: Path) -> None:
    shown = _run_produce(tmp_path)
    by_kind = {op["proposed_arguments"]["kind"]: op for op in _tool_ops(shown)}
    assert set(by_kind) == set(KINDS)

    def delivered(kind: str) -> Any:
        op = by_kind[kind]
        assert (op["status"], op["error"]) == ("succeeded", None), op
        return op["effective_result"]

    assert json.loads(delivered("int")) == {"result": 3}
    assert json.loads(delivered("float")) == {"result": 2.5}
    assert json.loads(delivered("bool")) == {"result": True}
    assert json.loads(delivered("list")) == [1, "a"]  # a list is an array, as before
    assert delivered("str") == "plain text"  # a text is the text itself
    assert json.loads(delivered("dict")) == {"a": 1}
    assert json.loads(delivered("model")) == {"x": 1, "y": 2}
    assert delivered("none") in ("", None)

    for kind, type_name in (("set", "set"), ("nested", "dict"), ("nan", "float")):
        op = by_kind[kind]
        assert op["status"] == "failed", op
        error = op["error"]
        assert error["code"] == "INVALID_TOOL_OUTPUT"
        assert error["external_outcome"] == "known"  # it ran and ended: never unknown
        assert error["details"] == {"tool": "produce", "type": type_name}
        assert f"tool 'produce' ran but returned {type_name}" in error["message"]
        assert op["attempts"]["count"] == 1


# -- at decoration ----------------------------------------------------------------------------

class Plain:
    pass


@pytest.mark.parametrize(("annotation", "named"), [
    ("set[int]", "set[int]"),
    ("bytes", "bytes"),
    ("object", "object"),
    ("Plain", "Plain"),
    ("list[set[int]]", "it holds set[int]"),
    ("dict[str, bytes]", "it holds bytes"),
    ("Point | Plain", "it holds"),
])
def test_i36_1_a_return_annotation_json_cannot_hold_is_refused_at_decoration(
        annotation: str, named: str) -> None:
    namespace: dict[str, Any] = {"Plain": Plain, "Point": Point}
    exec(f"def convert(text: str) -> {annotation}:\n    '''Convert.'''\n", namespace)
    with pytest.raises(CatalogError) as refused:
        agentloom.tool(namespace["convert"])
    message = str(refused.value)
    assert "convert" in message and "return type" in message and named in message
    assert "cannot be delivered to a model as JSON" in message


@pytest.mark.parametrize("annotation", [
    "int", "str", "float", "bool", "None", "dict[str, Any]", "list[int]", "list[Point]",
    "Point", "ToolResult", "Any", "int | None", "tuple[int, ...]", "Literal['a', 1]",
    "ToolResult | str | None",
])
def test_i36_1_json_return_annotations_are_accepted(annotation: str) -> None:
    namespace: dict[str, Any] = {"Any": Any, "Point": Point, "ToolResult": ToolResult,
                                 "Literal": Literal}
    exec(f"def convert(text: str) -> {annotation}:\n    '''Convert.'''\n", namespace)
    assert agentloom.tool(namespace["convert"]).name == "convert"


def test_i36_1_a_function_without_a_return_annotation_is_accepted() -> None:
    def convert(text: str):  # type: ignore[no-untyped-def]
        """Convert."""
        return text

    assert agentloom.tool(convert).name == "convert"
