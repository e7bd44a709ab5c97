# ruff: noqa: F811  (the fixtures of tests/agent are imported, then named as parameters)
"""Issue 37, point 1 (000 §7.1.9): ``exec`` sees a workflow node's granted files read only —
at ``/inputs/<from node>/...`` where the sandbox has a mount namespace, and at
``$AGENTLOOM_INPUTS/<from node>/...`` on every backend (an ``argv`` item ``/inputs/...`` is
given its host path where there is none). A command cannot change them; a scope granted
nothing has no ``/inputs`` and no ``$AGENTLOOM_INPUTS`` (a value the model patches in is
dropped).

Each backend (bubblewrap: skipped where it is not installed; Landlock) on memory, SQLite and
PostgreSQL, through the real ``exec`` tool of a ``Runtime`` whose agent runs on the scripted
OpenAI server. The workspace root lies in pytest's ``0700`` folder: as root, commands run as
the sandbox uid (CI runs this file again in the ``no-bwrap`` and ``container`` shapes,
``tests/shapes/launcher.py``). The inputs folder is filled as the workflow driver fills it
(``plant_inputs``: folders ``0555``, files ``0444``, the runtime's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.agent.conftest import (  # noqa: F401  (runtime_factory, server, servers: fixtures)
    answer,
    calls,
    run,
    runtime_factory,
    sent_messages,
    server,
    servers,
    tool_call,
    tool_results,
)
from tests.sandbox.conftest import view_of
from tests.tools.test_i37_1_inputs_fs import MODULE, make_runtime

from agentloom.agent import Runtime
from agentloom.sandbox import EnvironmentPolicy, SandboxError, SandboxScope
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.workspace.inputs import inputs_folder


def shell(call_id: str, script: str, **kwargs: Any) -> tuple[str, str, str]:
    return tool_call(call_id, "exec", shell_script=script, **kwargs)


def ran(results: dict[str, str], call_id: str) -> dict[str, Any]:
    body = json.loads(results[call_id])
    assert isinstance(body, dict), results[call_id]
    return body


async def test_i37_1_exec_reads_the_granted_inputs_read_only_at_inputs_and_agentloom_inputs(
    backend: str, store_url: str, server: ScriptedOpenAIServer,
    runtime_factory: Callable[..., Runtime],
) -> None:
    server.script(
        calls(tool_call("start", "exec", argv=["true"])),  # the hook grants before it runs
        calls(tool_call("argv", "exec", argv=["cat", "/inputs/coder/src/mod.py"]),
              shell("env", 'cat "$AGENTLOOM_INPUTS/coder/src/mod.py"'),
              shell("where", 'printf %s "$AGENTLOOM_INPUTS"'),
              shell("w1", 'echo changed > "$AGENTLOOM_INPUTS/coder/src/mod.py"'),
              shell("w2", 'touch "$AGENTLOOM_INPUTS/coder/new.py"'),
              shell("w3", 'rm -f "$AGENTLOOM_INPUTS/coder/tests/test_mod.py"'),
              shell("w4", 'mkdir "$AGENTLOOM_INPUTS/more"')),
        calls(shell("after", 'cd "$AGENTLOOM_INPUTS" && ls . coder coder/tests && cat coder/src/mod.py')),
        answer("read"),
        calls(shell("none", 'printf %s "${AGENTLOOM_INPUTS-unset}"',
                    env_patch={"AGENTLOOM_INPUTS": "/tmp"}),
              tool_call("ls0", "exec", argv=["ls", "/inputs"])),
        answer("nothing granted"),
    )
    rt = make_runtime(runtime_factory, store_url, server, sandbox_backend=backend,
                      sandbox_policy=EnvironmentPolicy(allow_shell=True))
    scopes = rt.kernel.environment.scopes

    granted = await run(rt, "run the coder's files")
    other = await run(rt, "a run granted nothing")

    assert granted.status == "succeeded", granted.error
    assert other.status == "succeeded", other.error
    results = tool_results(sent_messages(server, 3))
    for call_id in ("argv", "env"):
        body = ran(results, call_id)
        assert (body["exit_code"], body["stdout"]) == (0, MODULE), body
        assert body["sandboxed"] is True and body["sandbox_mode"] == backend
    (scope,) = scopes.scopes_for_run(granted.run_id)
    folder = inputs_folder(scopes.root, scope)
    assert folder is not None
    expected = "/inputs" if view_of(backend) == "namespace" else str(folder)
    assert ran(results, "where")["stdout"] == expected
    for call_id in ("w1", "w2", "w3", "w4"):
        assert ran(results, call_id)["exit_code"] != 0, ran(results, call_id)
    after = ran(results, "after")
    assert after["exit_code"] == 0, after
    assert after["stdout"] == (".:\ncoder\n\ncoder:\nsrc\ntests\n\ncoder/tests:\ntest_mod.py\n"
                               + MODULE)
    nothing = tool_results(sent_messages(server, 5))
    assert ran(nothing, "none")["stdout"] == "unset"
    assert ran(nothing, "ls0")["exit_code"] != 0


def test_i37_1_a_scope_mounts_an_inputs_folder_whole_at_inputs(tmp_path: Path) -> None:
    scope = SandboxScope(workspace_scope_id="w", run_id="r", work_dir=tmp_path,
                         readonly_mounts=((tmp_path, "/inputs"), (tmp_path, "/skills/a")))
    assert scope.readonly_mounts[0] == (tmp_path, "/inputs")


@pytest.mark.parametrize("mounts", [
    ("/inputsx",), ("/inputs/../etc",), ("/inputs", "/inputs/coder"), ("/inputs/",),
])
def test_i37_1_an_inputs_mount_elsewhere_or_overlapping_is_refused(
    tmp_path: Path, mounts: tuple[str, ...],
) -> None:
    with pytest.raises(SandboxError) as caught:
        SandboxScope(workspace_scope_id="w", run_id="r", work_dir=tmp_path,
                     readonly_mounts=tuple((tmp_path, target) for target in mounts))
    assert caught.value.code == "MOUNT_INVALID"
