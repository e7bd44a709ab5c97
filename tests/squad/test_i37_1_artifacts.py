"""Issue 37 point 1: files between workflow nodes — artifacts — on memory, SQLite and PostgreSQL.

::

    coder (agent: fs.write src/mod.py, tests/test_mod.py, notes.txt; artifact.publish notes.txt;
           outputs: src/**, tests/**)
      ├─► tester   (capability fs.write; inputs {from: coder, files: [src/**]};
      │             writes "{{ nodes.coder.artifacts }}" to listing.txt)
      └─► reviewer (agent, no grant; its input names {{ nodes.coder.artifacts }})
    tester, reviewer ─► gate (a wait: the folders are looked at while the run waits there)

The coder's files become rows (``source_owner`` ``agent:coder``, sha256 digests, the node's
invocation) with their bytes as blobs; the tester finds exactly the granted files read only in
its inputs folder; the reviewer, without the grant, has no inputs folder at all."""

from __future__ import annotations

import asyncio
import hashlib
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.agent.conftest import WAIT_S, answer, calls, connection, sent_messages, tool_call
from tests.conftest import drop_store, fresh_store_url

from agentloom.agent import AgentSpec, Runtime
from agentloom.attempts import AttemptContext, CapabilityRequest
from agentloom.errors import ConfigError
from agentloom.squad import Workflow
from agentloom.squad import _artifact_files as files_mod
from agentloom.squad.artifacts import Listing, blob_bytes, latest, publish_tool
from agentloom.squad.driver import WorkflowProgram, node_rows
from agentloom.store import WriteSet, open_store
from agentloom.store.artifacts import ArtifactRecord, artifact_insert, run_artifacts
from agentloom.store.workflow_nodes import WorkflowNodeRecord, node_op
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.workspace.inputs import inputs_folder

MOD = "def double(x):\n    return 2 * x\n"
TEST = "from mod import double\n\ndef test_double():\n    assert double(2) == 4\n"
NOTES = "the coder's notes\n"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = fresh_store_url(request.param, tmp_path)
    yield url
    if request.param == "postgres":
        drop_store(open_store(url))


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def flow() -> Workflow:
    return (Workflow("codetest")
            .agent("coder", "coder", outputs=["src/**", "tests/**"])
            .capability("tester", "fs.write", inputs={"from": "coder", "files": ["src/**"]},
                        args={"path": "listing.txt", "content": "{{ nodes.coder.artifacts }}"})
            .agent("reviewer", "reviewer", input="review: {{ nodes.coder.artifacts }}")
            .wait("gate", question="look at the folders?")  # the run waits: they are there
            .edge("coder", ["tester", "reviewer"]).edge(["tester", "reviewer"], "gate"))


def script_coder(srv: ScriptedOpenAIServer) -> None:
    srv.script(calls(tool_call("w1", "fs_write", path="src/mod.py", content=MOD),
                     tool_call("w2", "fs_write", path="tests/test_mod.py", content=TEST),
                     tool_call("w3", "fs_write", path="notes.txt", content=NOTES)),
               calls(tool_call("p1", "artifact_publish", paths=["notes.txt"])),
               answer("wrote mod and its test"))


async def test_i37_1_outputs_and_publish_become_artifacts_a_grant_hands_them_on_read_only(
    backend_url: str, servers: Callable[[], ScriptedOpenAIServer],
    runtime_factory: Callable[..., Runtime], tmp_path: Path,
) -> None:
    coder, reviewer = servers(), servers()
    script_coder(coder)
    reviewer.script(answer("looks fine"))
    rt = runtime_factory(
        [AgentSpec(name="coder", model=connection(coder),
                   tools=("fs.write", "artifact.publish")),
         AgentSpec(name="reviewer", model=connection(reviewer), tools=("fs.read",))],
        store=backend_url, programs=[WorkflowProgram(flow().build(), tools=["fs.write"])],
        sandbox_backend="none")

    result = await asyncio.wait_for(rt.run("write mod", agent="workflow:codetest"), WAIT_S)
    assert result.status == "waiting", result.error
    store = rt.kernel.store
    run = result.run_id

    rows = {a.path: a for a in run_artifacts(store, run)}
    assert sorted(rows) == ["notes.txt", "src/mod.py", "tests/test_mod.py"]
    for path, text in (("src/mod.py", MOD), ("tests/test_mod.py", TEST), ("notes.txt", NOTES)):
        row = rows[path]
        assert (row.node, row.attempt, row.source_owner) == ("coder", 1, "agent:coder")
        assert row.invocation == f"{run}/n/coder/1"
        assert (row.digest, row.size) == (sha(text), len(text))
        assert blob_bytes(store, row.digest) == text.encode()
    assert rows["notes.txt"].data["how"] == "publish"
    assert rows["src/mod.py"].data == {"how": "outputs", "media_type": "text/x-python"}

    scopes = rt.kernel.environment.scopes
    by_partition = {s.partition_id: s for s in scopes.scopes_for_run(run)}
    tester = by_partition["n-tester-1"]
    assert tester.owner_ref.kind == "workflow"
    inputs = inputs_folder(scopes.root, tester)
    assert inputs is not None
    granted = sorted(p.relative_to(inputs).as_posix() for p in inputs.rglob("*") if p.is_file())
    assert granted == ["coder/src/mod.py"]  # tests/** and notes.txt are not granted
    assert (inputs / "coder/src/mod.py").read_text() == MOD
    assert stat.S_IMODE((inputs / "coder/src/mod.py").stat().st_mode) == 0o444
    for folder in (inputs, inputs / "coder", inputs / "coder/src"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o555
    listing = "notes.txt\nsrc/mod.py\ntests/test_mod.py"
    assert (scopes.path(tester) / "listing.txt").read_text() == listing

    reviewer_scope = by_partition["n-reviewer-1"]
    reviewer_inputs = inputs_folder(scopes.root, reviewer_scope)
    assert reviewer_inputs is not None and not reviewer_inputs.exists()
    assert sent_messages(reviewer, 0)[-1]["content"] == f"review: {listing}"
    assert {r["node"]: r["status"] for r in node_rows(store, run)} == {
        "coder": "succeeded", "tester": "succeeded", "reviewer": "succeeded"}


async def test_i37_1_a_node_over_the_limits_fails_artifacts_too_large_and_records_nothing(
    servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(files_mod, "MAX_FILES", 1)
    coder = servers()
    spec = (Workflow("big").agent("coder", "coder", outputs=["**"])
            .capability("after", "fs.write", args={"path": "x", "content": "y"})
            .edge("coder", "after").build())
    rt = runtime_factory([AgentSpec(name="coder", model=connection(coder),
                                    tools=("fs.write",))],
                         store=f"sqlite:///{tmp_path / 'a.db'}",
                         programs=[WorkflowProgram(spec, tools=["fs.write"])],
                         sandbox_backend="none")
    coder.script(calls(tool_call("w1", "fs_write", path="a.txt", content="a"),
                       tool_call("w2", "fs_write", path="b.txt", content="b")),
                 answer("done"))
    result = await asyncio.wait_for(rt.run("go", agent="workflow:big"), WAIT_S)
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "ARTIFACTS_TOO_LARGE"
    [coder_row] = [r for r in node_rows(rt.kernel.store, result.run_id) if r["node"] == "coder"]
    assert coder_row["status"] == "failed"
    assert coder_row["data"]["error"]["code"] == "ARTIFACTS_TOO_LARGE"
    assert run_artifacts(rt.kernel.store, result.run_id) == []


async def test_i37_1_publish_outside_a_workflow_node_fails_not_in_workflow() -> None:
    _, handler = publish_tool("r1")
    result = await handler.invoke_once(
        CapabilityRequest(operation_id="op", resource_version_id="r1",
                          capability_key="artifact.publish", arguments={"paths": ["a.txt"]}),
        AttemptContext(operation_id="op", attempt_no=1, run_id="run-x", role="coder",
                       deadline=1e12))
    assert result.status == "failed"
    assert result.error is not None and result.error.code == "NOT_IN_WORKFLOW"


def test_i37_1_globs_match_by_path_component() -> None:
    m = files_mod.matches
    assert m(["src/**"], "src/mod.py") and m(["src/**"], "src/a/b/c.py")
    assert not m(["src/**"], "srcx/mod.py") and not m(["src/*"], "src/a/b.py")
    assert m(["**/*.py"], "mod.py") and m(["**/*.py"], "a/b/mod.py")
    assert m(["*.txt", "x/?.md"], "x/a.md") and not m(["*.txt"], "a/b.txt")


def test_i37_1_published_rows_count_only_once_their_activation_succeeded() -> None:
    """``latest`` (what grants and templates read): the rows of the latest *succeeded*
    activation; a failed or unrecorded activation's published rows never count."""
    store = open_store("memory://")
    try:
        def node(name: str, attempt: int, status: str) -> WorkflowNodeRecord:
            return WorkflowNodeRecord(run_id="r", node=name, attempt=attempt, status=status,
                                      operation_id=None, created_at=float(attempt),
                                      updated_at=float(attempt), data={})

        def row(name: str, attempt: int, path: str) -> ArtifactRecord:
            return ArtifactRecord(run_id="r", node=name, attempt=attempt, path=path,
                                  digest=sha(path), size=1, source_owner="agent:coder",
                                  invocation=f"r/n/{name}/{attempt}", created_at=1.0)

        ops = [node_op(node("coder", 1, "succeeded"), new=True),
               node_op(node("coder", 2, "failed"), new=True),
               node_op(node("other", 1, "failed"), new=True),
               *(artifact_insert(r) for r in (row("coder", 1, "one.py"), row("coder", 2, "two.py"),
                                              row("other", 1, "x.py"), row("ghost", 1, "g.py")))]
        assert store.commit_many([WriteSet(tuple(ops))]) == [None]
        assert [a.path for a in latest(store, "r", "coder")] == ["one.py"]
        assert latest(store, "r", "other") == [] and latest(store, "r", "ghost") == []
        listing = Listing(store, "r")
        assert (listing["coder"], listing["other"]) == ("one.py", "")
    finally:
        store.close()


def test_i37_1_a_python_workflow_granting_from_an_agent_that_cannot_publish_is_refused(
    servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
    tmp_path: Path,
) -> None:
    srv = servers()
    spec = (Workflow("g").agent("coder", "coder")
            .capability("use", "fs.write", inputs={"from": "coder"},
                        args={"path": "x", "content": "y"})
            .edge("coder", "use").build())  # the builder cannot know the agent's tools
    with pytest.raises(ConfigError) as caught:
        runtime_factory([AgentSpec(name="coder", model=connection(srv), tools=("fs.write",))],
                        store=f"sqlite:///{tmp_path / 'a.db'}",
                        programs=[WorkflowProgram(spec, tools=["fs.write"])],
                        sandbox_backend="none")
    assert caught.value.code == "WORKFLOW_GRANT_EMPTY"
    assert str(caught.value).startswith("workflows.g.nodes.use.inputs[0].from: node 'coder' "
                                        "hands on no artifacts")
    publishing = AgentSpec(name="coder", model=connection(srv),
                           tools=("fs.write", "artifact.publish"))
    runtime_factory([publishing], store=f"sqlite:///{tmp_path / 'b.db'}",
                    programs=[WorkflowProgram(spec, tools=["fs.write"])], sandbox_backend="none")
