"""Issue 20, acceptance 4 (000 §7.4, §9 cross-owner isolation): a workflow's CapabilityNodes
(in its WorkflowSession folder), its input_only AgentNodes (each in an invocation folder of its
own) and an agent session run cannot read each other's files — not by a ``../`` path, an
absolute host path, a symlink (planted on the host, or made with ``exec ln -s``), ``fs.glob``,
``fs.grep`` or ``exec cat``. The only way content passes is a node's output through
``{{ nodes.NAME.output }}``.

::

    cap (fs.write wf-secret.txt) ─► alice (agent: fs.write alice-secret.txt) ─► gate (wait)
      ─approved─► bob (agent: tries alice's, the workflow's and carol's files)
      ─► probe_* (capability nodes: try alice's, bob's and carol's files)

While the run waits at ``gate`` the test looks the folders up (``scopes_for_run``), plants
symlinks to the others' folders, scripts ``bob`` with the real paths and runs ``carol``, an
agent with a session, twice: first it writes its secret, then (its folder now holding the
planted symlinks) it tries the workflow's and alice's files. Agents run on scripted OpenAI
servers; exec runs under bubblewrap (its test skips where there is none)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.agent.conftest import (
    WAIT_S,
    answer,
    calls,
    connection,
    sent_messages,
    tool_call,
    tool_results,
)
from tests.sandbox.conftest import require_bwrap, searchable

from agentloom.agent import AgentSpec, Runtime
from agentloom.sandbox import EnvironmentPolicy
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.workspace.scope import WorkspaceScope

SECRETS = ("WORKFLOW SECRET", "ALICE SECRET", "BOB SECRET", "CAROL SECRET")
UP_INVOCATION = "../" * 7  # a run's work folder: <root>/<owners>/<id>/<section>/<p>/runs/<run>/work
UP_SESSION = "../" * 5  # a persistent session's: <root>/agents/<id>/sessions/<session>/work


def _workflow(root: Path, *, with_exec: bool) -> Workflow:
    """The workflow; ``bob``'s answer is the path of alice's folder below the workspace root
    (a path, never content), which the probes then try in the workflow's own folder."""
    alice_at = "{{ nodes.bob.output }}"
    probes: dict[str, tuple[str, dict[str, Any]]] = {
        "probe_rel": ("fs.read", {"path": f"{UP_INVOCATION}{alice_at}/alice-secret.txt"}),
        "probe_abs": ("fs.read", {"path": f"{root}/{alice_at}/alice-secret.txt"}),
        "probe_link": ("fs.read", {"path": "peek/alice-secret.txt"}),
        "probe_carol": ("fs.read", {"path": "carol/carol-secret.txt"}),
        "probe_glob": ("fs.glob", {"pattern": "**/*secret*"}),
        "probe_grep": ("fs.grep", {"pattern": "SECRET"}),
    }
    if with_exec:
        probes["probe_exec"] = ("exec", {"shell_script": (
            f"cat peek/alice-secret.txt carol/carol-secret.txt {root}/{alice_at}/alice-secret.txt "
            f"{UP_INVOCATION}{alice_at}/alice-secret.txt; ls -R {root}; echo END")})
    flow = (Workflow("iso")
            .capability("cap", "fs.write", args={"path": "wf-secret.txt",
                                                 "content": "WORKFLOW SECRET"})
            .agent("alice", "alice", input="{{ input.task }}")
            .wait("gate", question="Let bob look around?")
            .agent("bob", "bob", input="alice says: {{ nodes.alice.output }}"))
    for name, (capability, args) in probes.items():
        flow = flow.capability(name, capability, args=args)
    return (flow.edge("cap", "alice").edge("alice", "gate")
            .edge("gate", "bob", when="approved").edge("bob", list(probes)))


@dataclass
class Seen:
    """What each party got back: tool results of the agents (by call id) and node records."""

    bob: dict[str, str] = field(default_factory=dict)
    carol: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    folders: dict[str, Path] = field(default_factory=dict)
    relative: dict[str, str] = field(default_factory=dict)  # party -> its ../ path to alice's


def _folders(rt: Runtime, run_id: str) -> dict[str, Path]:
    """Each scope of the run by who it is for: ``workflow``, ``alice``, ``bob``, ``carol``."""
    scopes = rt.kernel.environment.scopes
    found: dict[str, Path] = {}
    for scope in scopes.scopes_for_run(run_id):
        found[_party(scope)] = scopes.path(scope)
    return found


def _party(scope: WorkspaceScope) -> str:
    return "workflow" if scope.owner_ref.kind == "workflow" else scope.owner_ref.id


async def _scenario(servers: Callable[[], ScriptedOpenAIServer],
                    runtime_factory: Callable[..., Runtime], tmp_path: Path, *,
                    with_exec: bool) -> Seen:
    root = tmp_path / "workspaces"
    root.mkdir()
    searchable(root)  # as root, bubblewrap reaches the work folder by path as the sandbox uid
    alice, bob, carol = servers(), servers(), servers()
    alice.script(calls(tool_call("a1", "fs_write", path="alice-secret.txt",
                                 content="ALICE SECRET")),
                 answer("my public note: ALICE PUBLIC"))
    tools = ("fs.read", "fs.write", "fs.glob", "fs.grep", *(("exec",) if with_exec else ()))
    spec = _workflow(root, with_exec=with_exec).build()
    rt = runtime_factory(
        [AgentSpec(name=n, model=connection(s), tools=tools)
         for n, s in (("alice", alice), ("bob", bob), ("carol", carol))],
        store=f"sqlite:///{tmp_path / 'agentloom.db'}", workspace_root=root,
        programs=[WorkflowProgram(spec)],
        sandbox_backend="bubblewrap" if with_exec else "none",
        sandbox_policy=EnvironmentPolicy(allow_shell=True))

    first = await asyncio.wait_for(rt.run("write your note", agent="workflow:iso"), WAIT_S)
    assert first.status == "waiting", first.error
    seen = Seen(folders=_folders(rt, first.run_id))
    wf, alice_dir = seen.folders["workflow"], seen.folders["alice"]
    assert (alice_dir / "alice-secret.txt").read_text() == "ALICE SECRET"
    alice_below_root = alice_dir.relative_to(root).as_posix()

    # carol, an agent session: once to write her secret, again (with planted symlinks) to look
    carol.script(calls(tool_call("c1", "fs_write", path="carol-secret.txt",
                                 content="CAROL SECRET")), answer("noted"))
    wrote = await asyncio.wait_for(rt.run("note it", agent="carol", session="s-carol"), WAIT_S)
    assert wrote.status == "succeeded", wrote.error
    (carol_scope,) = rt.kernel.environment.scopes.scopes_for_run(wrote.run_id)
    carol_dir = seen.folders["carol"] = rt.kernel.environment.scopes.path(carol_scope)
    os.symlink(alice_dir, carol_dir / "peek")
    os.symlink(wf, carol_dir / "wfpeek")
    os.symlink(alice_dir, wf / "peek")  # for the workflow's capability nodes
    os.symlink(carol_dir, wf / "carol")
    seen.relative["carol"] = f"{UP_SESSION}{alice_below_root}"
    seen.relative["workflow"] = f"{UP_INVOCATION}{alice_below_root}"
    wf_below_root = wf.relative_to(root).as_posix()
    carol_calls = [
        tool_call("c-rel", "fs_read", path=f"{seen.relative['carol']}/alice-secret.txt"),
        tool_call("c-rel-wf", "fs_read", path=f"{UP_SESSION}{wf_below_root}/wf-secret.txt"),
        tool_call("c-abs", "fs_read", path=str(alice_dir / "alice-secret.txt")),
        tool_call("c-abs-wf", "fs_read", path=str(wf / "wf-secret.txt")),
        tool_call("c-link", "fs_read", path="peek/alice-secret.txt"),
        tool_call("c-link-wf", "fs_read", path="wfpeek/wf-secret.txt"),
        tool_call("c-glob", "fs_glob", pattern="**/*secret*"),
        tool_call("c-grep", "fs_grep", pattern="SECRET"),
    ]
    if with_exec:
        carol_calls += [
            tool_call("c-ln", "exec", shell_script=f"ln -s {wf} made; echo linked"),
            tool_call("c-cat", "exec", shell_script=(
                f"cat {alice_dir}/alice-secret.txt {wf}/wf-secret.txt peek/alice-secret.txt "
                f"wfpeek/wf-secret.txt {seen.relative['carol']}/alice-secret.txt; "
                f"ls -R {root}; echo END"))]
    carol.script(calls(*carol_calls),
                 *([calls(tool_call("c-made", "fs_read", path="made/wf-secret.txt"))]
                   if with_exec else []),
                 answer("carol looked"))
    looked = await asyncio.wait_for(rt.run("look", agent="carol", session="s-carol"), WAIT_S)
    assert looked.status == "succeeded", looked.error
    for n in range(1, len(carol.model_requests)):
        seen.carol.update(tool_results(sent_messages(carol, n)))

    # bob, an AgentNode of the same run: alice's, the workflow's and carol's files
    # its own file first, in a turn of its own: the calls of one turn run side by side, and a
    # glob beside the write could look before the file exists
    bob_write = calls(tool_call("b-own", "fs_write", path="bob-secret.txt", content="BOB SECRET"))
    bob_calls = [
        tool_call("b-rel", "fs_read", path=f"{UP_INVOCATION}{alice_below_root}/alice-secret.txt"),
        tool_call("b-rel-wf", "fs_read", path=f"{UP_INVOCATION}{wf_below_root}/wf-secret.txt"),
        tool_call("b-abs", "fs_read", path=str(alice_dir / "alice-secret.txt")),
        tool_call("b-abs-wf", "fs_read", path=str(wf / "wf-secret.txt")),
        tool_call("b-abs-carol", "fs_read", path=str(carol_dir / "carol-secret.txt")),
        tool_call("b-glob", "fs_glob", pattern="**/*secret*"),
        tool_call("b-grep", "fs_grep", pattern="SECRET"),
    ]
    if with_exec:
        bob_calls += [
            tool_call("b-ln", "exec", shell_script=f"ln -s {alice_dir} made; echo linked"),
            tool_call("b-cat", "exec", shell_script=(
                f"cat {alice_dir}/alice-secret.txt {wf}/wf-secret.txt "
                f"{carol_dir}/carol-secret.txt "
                f"{UP_INVOCATION}{alice_below_root}/alice-secret.txt; ls -R {root}; echo END"))]
    bob.script(bob_write, calls(*bob_calls),
               *([calls(tool_call("b-made", "fs_read", path="made/alice-secret.txt"))]
                 if with_exec else []),
               answer(alice_below_root))
    await rt.approve(first.run_id, first.waiting[0]["operation_id"], reason="look around")
    ended = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)
    assert ended.status in ("succeeded", "failed"), ended.error
    seen.folders.update(_folders(rt, first.run_id))
    for n in range(1, len(bob.model_requests)):
        seen.bob.update(tool_results(sent_messages(bob, n)))
    seen.nodes = {r["node"]: r for r in node_rows(rt.store, first.run_id)
                  if r["attempt"] == 1}
    # what the node templates handed on: alice's output, and only that, reached bob
    assert sent_messages(bob, 0)[-1]["content"] == "alice says: my public note: ALICE PUBLIC"
    return seen


def _assert_no_secret_but_own(seen: Seen) -> None:
    """No party saw a secret that is not its own; the named reads were refused."""
    for call_id, content in seen.carol.items():
        assert not any(s in content for s in SECRETS if s != "CAROL SECRET"), (call_id, content)
    for call_id, content in seen.bob.items():
        assert not any(s in content for s in SECRETS if s != "BOB SECRET"), (call_id, content)
    for name, row in seen.nodes.items():
        if name.startswith("probe_"):
            text = str(row["data"])
            assert not any(s in text for s in SECRETS if s != "WORKFLOW SECRET"), (name, text)


def _assert_distinct_folders(seen: Seen) -> None:
    """Four folders, none inside another (host paths from the scopes)."""
    paths = [seen.folders[p].resolve() for p in ("workflow", "alice", "bob", "carol")]
    assert len(set(paths)) == 4
    for a in paths:
        for b in paths:
            assert a == b or not a.is_relative_to(b), (a, b)


async def test_i20_4_nodes_and_a_session_cannot_read_each_others_files_by_path_symlink_glob_grep(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    seen = await _scenario(servers, runtime_factory, tmp_path, with_exec=False)

    _assert_distinct_folders(seen)
    _assert_no_secret_but_own(seen)
    # the ../ paths were real: from each folder they lead to the other's file on the host
    assert (seen.folders["carol"] / seen.relative["carol"]).resolve() == seen.folders["alice"]
    assert (seen.folders["workflow"] / seen.relative["workflow"]).resolve() \
        == seen.folders["alice"]
    assert (seen.folders["bob"] / seen.relative["workflow"]).resolve() == seen.folders["alice"]
    refused = ("c-rel", "c-rel-wf", "c-abs", "c-abs-wf", "c-link", "c-link-wf")
    for call_id in refused:
        assert seen.carol[call_id].startswith("failed"), (call_id, seen.carol[call_id])
    for call_id in ("b-rel", "b-rel-wf", "b-abs", "b-abs-wf", "b-abs-carol"):
        assert seen.bob[call_id].startswith("failed"), (call_id, seen.bob[call_id])
    # glob and grep find one's own file only
    assert "carol-secret.txt" in seen.carol["c-glob"] and "CAROL SECRET" in seen.carol["c-grep"]
    assert "bob-secret.txt" in seen.bob["b-glob"] and "BOB SECRET" in seen.bob["b-grep"]
    assert "alice-secret" not in seen.bob["b-glob"] + seen.carol["c-glob"]
    nodes = seen.nodes
    for name in ("probe_rel", "probe_abs", "probe_link", "probe_carol"):
        assert nodes[name]["status"] == "failed", (name, nodes[name]["data"])
        assert nodes[name]["data"]["error"]["code"] == "PATH_ESCAPE"
    assert nodes["probe_glob"]["status"] == "succeeded"
    assert '"wf-secret.txt"' in nodes["probe_glob"]["data"]["output"]
    assert "alice" not in nodes["probe_glob"]["data"]["output"]
    assert "WORKFLOW SECRET" in nodes["probe_grep"]["data"]["output"]
    # the only content that passed: alice's output, through bob's input template
    assert nodes["bob"]["status"] == "succeeded"


async def test_i20_4_exec_and_symlinks_made_by_exec_cannot_reach_another_partitions_files(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    require_bwrap()  # skips with the reason where this machine has no bubblewrap

    seen = await _scenario(servers, runtime_factory, tmp_path, with_exec=True)

    _assert_distinct_folders(seen)
    _assert_no_secret_but_own(seen)
    for party, made in (("carol", "c-made"), ("bob", "b-made")):
        results = getattr(seen, party)
        assert "linked" in results[made.replace("made", "ln")], results
        assert results[made].startswith("failed"), (made, results[made])  # the made symlink
        ran = json.loads(results[made.replace("made", "cat")])  # the script ran, saw nothing
        assert ran["sandboxed"] is True and ran["stdout"].endswith("END\n")
        assert ran["stderr"].count("No such file or directory") >= 4, ran["stderr"]
    exec_node = seen.nodes["probe_exec"]
    assert exec_node["status"] == "succeeded", exec_node["data"]
    ran = json.loads(exec_node["data"]["output"])
    assert ran["sandboxed"] is True and ran["stdout"].endswith("END\n")
    assert ran["stderr"].count("No such file or directory") >= 4, ran["stderr"]
