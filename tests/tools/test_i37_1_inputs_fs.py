# ruff: noqa: F811  (the fixtures of tests/agent are imported, then named as parameters)
"""Issue 37, point 1 (000 §7.1.9): the file tools read a workflow node's granted files at
``/inputs/<from node>/<path>`` — ``fs.read``, ``fs.list``, ``fs.glob`` (``pattern`` or
``root``), ``fs.grep`` (``paths``) — with ``/inputs/...`` paths in their results; every write
there is refused (``READ_ONLY``); a scope granted nothing (another run's) gets ``NOT_FOUND``
for the same paths, and any other absolute path keeps its ``PATH_ESCAPE``. The inputs folder
goes with the run's folders.

Agents run on the scripted OpenAI server, on memory, SQLite and PostgreSQL. The inputs folder
is filled by the test (as the workflow driver fills it: folders ``0555``, files ``0444``,
owned by the runtime) from a hook before the run's first tool call, when its scope exists.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.conftest import (  # noqa: F401  (runtime_factory, server, servers: fixtures)
    WAIT_S,
    answer,
    before_hook,
    calls,
    connection,
    run,
    runtime_factory,
    sent_messages,
    server,
    servers,
    tool_call,
    tool_results,
)

from agentloom.agent import AgentSpec, Runtime
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.workspace.inputs import inputs_folder
from agentloom.workspace.paths import Resolution
from agentloom.workspace.service import WorkspaceError, WorkspaceService

MODULE = "def add(a, b):\n    return a + b\n"
TEST = "from src.mod import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TOOLS = ("fs.read", "fs.list", "fs.glob", "fs.grep", "fs.write", "fs.edit", "fs.patch",
         "fs.mkdir", "fs.move", "fs.delete", "exec")


def plant_inputs(folder: Path) -> None:
    """Fill ``folder`` (a scope's inputs folder) as the workflow driver does: ``coder``'s
    ``src/mod.py`` and ``tests/test_mod.py``, folders ``0555``, files ``0444``."""
    if folder.exists():
        return
    for rel, text in (("coder/src/mod.py", MODULE), ("coder/tests/test_mod.py", TEST)):
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o444)
    for dirpath, dirnames, _ in os.walk(folder, topdown=False):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o555)
    folder.chmod(0o555)


def granting(rt: list[Runtime]) -> tuple[Any, str, Callable[..., Any]]:
    """A hook that, before the first tool call of the first run it sees, fills that run's
    inputs folder; later runs get none. Returns ``(spec, ref, fn)`` for ``before_hook``."""
    first: list[str] = []

    def grant(event: dict[str, Any]) -> dict[str, Any]:
        run_id = str(event["run_id"])
        if not first:
            first.append(run_id)
        if run_id == first[0]:
            scopes = rt[0].kernel.environment.scopes
            (scope,) = scopes.scopes_for_run(run_id)
            folder = inputs_folder(scopes.root, scope)
            assert folder is not None
            plant_inputs(folder)
        return {"decision": "allow"}

    return before_hook("grant-inputs", grant)


def make_runtime(make: Callable[..., Runtime], store_url: str, server: ScriptedOpenAIServer,
                 **kwargs: Any) -> Runtime:
    holder: list[Runtime] = []
    spec, ref, fn = granting(holder)
    holder.append(make([AgentSpec(name="main", model=connection(server), tools=TOOLS)],
                       store=store_url, hooks=[spec], hook_functions={ref: fn}, **kwargs))
    return holder[0]


def error_codes(rt: Runtime, run_id: str) -> dict[str, str | None]:
    """``call_id → the stable code of its failure`` (``None``: it succeeded), as recorded."""
    codes: dict[str, str | None] = {}
    for row in rt.kernel.operations(run_id):
        if row["event_type"] == "tool":
            error = (row["data"].get("envelope") or {}).get("error") or {}
            codes[row["data"]["request"]["call_id"]] = error.get("code")
    return codes


async def test_i37_1_file_tools_read_the_granted_inputs_and_refuse_every_write_there(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("own", "fs_write", path="notes.txt", content="def mine(): pass\n")),
        calls(tool_call("r", "fs_read", path="/inputs/coder/src/mod.py"),
              tool_call("l", "fs_list", path="/inputs/coder"),
              tool_call("l0", "fs_list", path="/inputs"),
              tool_call("g1", "fs_glob", pattern="/inputs/**/*.py"),
              tool_call("g2", "fs_glob", pattern="**/*.py", root="/inputs/coder/tests"),
              tool_call("gr", "fs_grep", pattern="def ", paths=["/inputs/coder"])),
        calls(tool_call("gr2", "fs_grep", pattern="def ", paths=["/inputs/coder/src", "."]),
              tool_call("w", "fs_write", path="/inputs/coder/src/mod.py", content="x",
                        mode="replace", if_match="0"),
              tool_call("w2", "fs_write", path="/inputs/coder/new.py", content="x"),
              tool_call("e", "fs_edit", path="/inputs/coder/src/mod.py", old_text="a + b",
                        new_text="a - b"),
              tool_call("m", "fs_mkdir", path="/inputs/coder/more"),
              tool_call("mv", "fs_move", src="/inputs/coder/src/mod.py", dst="mod.py"),
              tool_call("d", "fs_delete", path="/inputs/coder", recursive=True),
              tool_call("nf", "fs_read", path="/inputs/reviewer/notes.txt"),
              tool_call("up", "fs_read", path="/inputs/../work/notes.txt"),
              tool_call("abs", "fs_read", path="/etc/hostname"),
              tool_call("both", "fs_glob", pattern="/inputs/**", root="/inputs/coder")),
        answer("read them"),
    )
    rt = make_runtime(runtime_factory, store_url, server)

    result = await run(rt, "read what the coder wrote")

    assert result.status == "succeeded", result.error
    first = tool_results(sent_messages(server, 2))
    read = json.loads(first["r"])
    assert read["path"] == "/inputs/coder/src/mod.py" and read["content"] == MODULE
    assert [e["path"] for e in json.loads(first["l"])["entries"]] == [
        "/inputs/coder/src", "/inputs/coder/tests"]
    assert [e["path"] for e in json.loads(first["l0"])["entries"]] == ["/inputs/coder"]
    assert json.loads(first["g1"])["paths"] == ["/inputs/coder/src/mod.py",
                                                "/inputs/coder/tests/test_mod.py"]
    assert json.loads(first["g2"])["paths"] == ["/inputs/coder/tests/test_mod.py"]
    assert [(m["path"], m["line"]) for m in json.loads(first["gr"])["matches"]] == [
        ("/inputs/coder/src/mod.py", 1), ("/inputs/coder/tests/test_mod.py", 3)]
    second = {k: v for k, v in tool_results(sent_messages(server, 3)).items() if k not in first}
    # the work folder's matches first, then the inputs'
    assert [m["path"] for m in json.loads(second["gr2"])["matches"]] == [
        "notes.txt", "/inputs/coder/src/mod.py"]
    codes = error_codes(rt, result.run_id)
    for call_id in ("w", "w2", "e", "m", "mv", "d"):
        assert codes[call_id] == "READ_ONLY", second[call_id]
        assert second[call_id] == ("failed: /inputs holds the files granted to this node and is "
                                   "read only; write a changed copy into the work folder")
    assert codes["nf"] == "NOT_FOUND", second["nf"]
    assert codes["up"] == "PATH_ESCAPE", second["up"]  # beneath the inputs folder, as /work
    assert codes["abs"] == "PATH_ESCAPE", second["abs"]  # every other absolute path: unchanged
    assert codes["both"] == "INVALID_ARGUMENTS"
    assert second["both"] == "failed: give the /inputs path in pattern or in root, not both"
    assert {codes[k] for k in first} == {None}
    for content in (*first.values(), *second.values()):  # no host path anywhere
        assert str(rt.kernel.environment.scopes.root) not in content
    # the run's folder went, its inputs with it (the whole runs/<run>/ folder)
    scopes = rt.kernel.environment.scopes
    (scope,) = scopes.scopes_for_run(result.run_id)
    folder = inputs_folder(scopes.root, scope)
    assert folder is not None and not folder.exists() and not folder.parent.exists()


async def test_i37_1_a_scope_granted_nothing_gets_not_found_for_every_inputs_path(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    probes = (tool_call("r", "fs_read", path="/inputs/coder/src/mod.py"),
              tool_call("l", "fs_list", path="/inputs"),
              tool_call("g", "fs_glob", pattern="/inputs/**"),
              tool_call("gr", "fs_grep", pattern="def", paths=["/inputs/coder"]),
              tool_call("w", "fs_write", path="/inputs/coder/x.py", content="x"))
    server.script(calls(tool_call("own", "fs_write", path="a.txt", content="a")),
                  answer("granted"), calls(*probes), answer("nothing there"))
    rt = make_runtime(runtime_factory, store_url, server)
    scopes = rt.kernel.environment.scopes

    granted = await run(rt, "the first run is granted coder's files", session="granted")
    (scope,) = scopes.scopes_for_run(granted.run_id)
    folder = inputs_folder(scopes.root, scope)
    assert folder is not None
    # a persistent scope keeps its work folder, never the run's grant
    assert scopes.path(scope).is_dir() and not folder.exists()
    plant_inputs(folder)  # and if it were still there, no other scope would see it
    other = await run(rt, "another run's scope is granted nothing")

    assert granted.status == "succeeded" and other.status == "succeeded", other.error
    codes = error_codes(rt, other.run_id)
    assert codes == {
        "r": "NOT_FOUND", "l": "NOT_FOUND", "g": "NOT_FOUND", "gr": "NOT_FOUND", "w": "NOT_FOUND"}
    assert (folder / "coder" / "src" / "mod.py").read_text() == MODULE


async def test_i37_1_the_inputs_folder_goes_with_its_owner(
    store_url: str, server: ScriptedOpenAIServer, runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(answer("done"))
    rt = make_runtime(runtime_factory, store_url, server)
    scopes = rt.kernel.environment.scopes
    done = await run(rt, "keep a folder", session="kept")
    (scope,) = scopes.scopes_for_run(done.run_id)
    folder = inputs_folder(scopes.root, scope)
    assert folder is not None and scopes.path(scope).is_dir()
    plant_inputs(folder)  # as if a grant outlived its run (a crash before its cleanup)

    await asyncio.wait_for(rt.delete_owner("agent:main"), WAIT_S)

    assert not folder.exists() and not scopes.path(scope).exists()


@pytest.mark.parametrize("resolution", ["openat2", "walk"])
async def test_i37_1_no_symbolic_link_leads_out_of_the_inputs_folder(
    tmp_path: Path, resolution: Resolution,
) -> None:
    (tmp_path / "secret.txt").write_text("SECRET")
    inputs = tmp_path / "run" / "inputs"
    (inputs / "coder").mkdir(parents=True)
    (inputs / "coder" / "leak").symlink_to(tmp_path / "secret.txt")
    (inputs / "coder" / "up").symlink_to("../../work")
    (tmp_path / "run" / "work").mkdir()
    (tmp_path / "linked").symlink_to(inputs)
    service = WorkspaceService(resolution=resolution)
    handle = await service.open_view(tmp_path / "run" / "work", scope_id="s", inputs=inputs)
    linked = await service.open_view(tmp_path / "run" / "work", scope_id="s",
                                     inputs=tmp_path / "linked")

    for path in ("/inputs/coder/leak", "/inputs/coder/up/x", "/inputs/../../secret.txt"):
        with pytest.raises(WorkspaceError) as refused:
            await service.read(handle, path)
        assert refused.value.code in ("PATH_ESCAPE", "SYMLINK_REFUSED"), path
        assert str(tmp_path) not in refused.value.error.message
    with pytest.raises(WorkspaceError) as missing:  # an inputs folder that is a link: none
        await service.list(linked, "/inputs")
    assert missing.value.code == "NOT_FOUND"
