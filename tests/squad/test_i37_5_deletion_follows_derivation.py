"""Issue 37 point 5 (000 §7.4.6, §9.14): deleting an agent follows what was derived from it.

The probe (acceptance 3), on memory, SQLite and PostgreSQL::

    helper (agent helper: a long answer, a blob) ─► note (agent helper: a short answer)
      ─► reviewer (agent reviewer: input renders both) ─► final (capability echo: renders
      helper, note and reviewer; the run's answer)

plus two artifacts of the run (one ``source_owner: agent:helper``, one the reviewer's) and a
copy of each in a node's inputs folder. ``delete_owner(agent:helper)``, then every row of
every table of ``store.schema.TABLES`` (raw SQL over all columns for SQLite/PostgreSQL, the
store's own rows for memory) holds none of the helper's texts; every node record is still
there with its status; ``runs show`` still shows the run; the reviewer's own content stays.
Also: deleting the workflow keeps its agents' own rows, which deleting the agent then finds.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agent.conftest import WAIT_S, answer, calls, connection, tool_call
from tests.cli.support import Cli
from tests.store.test_contract import raw_sql

import agentloom
from agentloom.agent import AgentSpec, Runtime
from agentloom.agent.derived import AGENT_NODE_PREFIX, deletion_marker
from agentloom.agent.owners import delete_owner
from agentloom.refs import OwnerRef
from agentloom.squad import Workflow
from agentloom.squad.driver import WorkflowProgram
from agentloom.squad.nodes import AGENT_NODE_PREFIX as SQUAD_PREFIX
from agentloom.store import Insert, WriteSet
from agentloom.store.blobs import blob_insert
from agentloom.store.schema import TABLES
from agentloom.testing.openai_server import ScriptedOpenAIServer
from agentloom.tools.sdk import ToolContext
from agentloom.workspace.inputs import inputs_folder

HELPER = OwnerRef(kind="agent", id="helper")
REVIEWER = OwnerRef(kind="agent", id="reviewer")


@agentloom.tool
async def echo(ctx: ToolContext, text: str) -> str:
    """Answer the text given."""
    return f"echo: {text}"


HOLD: dict[str, asyncio.Event] = {}


@agentloom.tool
async def hold(ctx: ToolContext, text: str) -> str:
    """Stay in the call until the run is stopped."""
    HOLD["entered"].set()
    await HOLD["release"].wait()
    return text


class Texts:
    """The unique texts of one probe: what the helper and the reviewer answer."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex
        self.helper = f"HELPER-TEXT-{tag}"
        self.long = f"{self.helper} " + "the helper's long findings. " * 300  # > 4 KiB: a blob
        self.note = f"HELPER-NOTE-{tag}"
        self.reviewer = f"REVIEWER-TEXT-{tag}"
        self.artifact = f"HELPER-ARTIFACT-{tag}"
        self.artifact_other = f"REVIEWER-ARTIFACT-{tag}"

    @property
    def helpers(self) -> tuple[str, ...]:
        return (self.helper, self.note, self.artifact)


def _flow() -> Workflow:
    return (Workflow("wf")
            .agent("helper", "helper", input="{{ input.task }}")
            .agent("note", "helper", input="a short note please")
            .agent("reviewer", "reviewer",
                   input="check {{ nodes.helper.output }} and {{ nodes.note.output }}")
            .capability("final", "echo", args={"text": "final {{ nodes.helper.output }} / "
                                               "{{ nodes.note.output }} / "
                                               "{{ nodes.reviewer.output }}"})
            .edge("helper", "note").edge("note", "reviewer").edge("reviewer", "final"))


async def _run_probe(url: str, servers: Callable[[], ScriptedOpenAIServer],
                     runtime_factory: Callable[..., Runtime], texts: Texts) -> tuple[Runtime, str]:
    helper, reviewer = servers(), servers()
    helper.script(answer(texts.long), answer(texts.note))
    reviewer.script(answer(f"{texts.reviewer}: looks fine"))
    rt = runtime_factory([AgentSpec(name="helper", model=connection(helper)),
                          AgentSpec(name="reviewer", model=connection(reviewer))],
                         store=url, programs=[WorkflowProgram(_flow().build(), tools=[echo])])
    result = await asyncio.wait_for(rt.run("find things", agent="workflow:wf"), WAIT_S)
    assert result.status == "succeeded", result.error
    assert texts.helper in str(result.output) and texts.note in str(result.output)
    return rt, result.run_id


def _artifact(run_id: str, node: str, path: str, owner: str, content: str) -> list[Any]:
    data = content.encode()
    digest = hashlib.sha256(data).hexdigest()
    return [blob_insert(digest=digest, size=len(data), content=data, created_at=time.time()),
            Insert("workflow_artifacts", {"run_id": run_id, "node": node, "attempt": 1, "path": path,
                                 "digest": digest, "size": len(data), "source_owner": owner,
                                 "invocation": f"n-{node}-1", "created_at": time.time(),
                                 "data": {"path": path}})]


async def _artifacts(rt: Runtime, run_id: str, texts: Texts) -> tuple[Path, Path]:
    """An artifact of each agent in the run, and a copy of each in the final node's inputs
    folder (as a grant materialises it)."""
    await rt.kernel.coordinator.commit(WriteSet((
        *_artifact(run_id, "helper", "out/helper.txt", "agent:helper", texts.artifact),
        *_artifact(run_id, "reviewer", "out/review.txt", "agent:reviewer",
                   texts.artifact_other))))
    env = rt.kernel.environment
    scope = next(s for s in env.scopes.scopes_for_run(run_id) if s.owner_ref.kind == "workflow")
    folder = inputs_folder(env.root, scope)
    assert folder is not None
    copies = folder / "helper" / "out" / "helper.txt", folder / "reviewer" / "out" / "review.txt"
    for path, text in zip(copies, (texts.artifact, texts.artifact_other), strict=True):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return copies


def _rows(rt: Runtime, url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table: raw SQL over all columns, or the memory store's rows."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for name, t in TABLES.items():
        if url.startswith("memory"):
            out[name] = [tuple(r.get(c) for c in t.columns) for r in rt.store.query(name)]
        else:
            out[name] = raw_sql(url, f"SELECT {', '.join(t.columns)} FROM {name}")
    return out


def _holding(rows: dict[str, list[tuple[Any, ...]]], text: str) -> list[str]:
    """``table: row`` of every row with ``text`` in one of its values (bytes decoded)."""
    found = []
    for name, found_rows in rows.items():
        for row in found_rows:
            values = [bytes(v).decode("utf-8", "replace")
                      if isinstance(v, bytes | bytearray | memoryview)
                      else json.dumps(v, default=str) if isinstance(v, dict | list) else str(v)
                      for v in row]
            if any(text in v for v in values):
                found.append(f"{name}: {str(row)[:300]}")
    return found


def _nodes(rt: Runtime, run_id: str) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["node"], r["attempt"]): r
            for r in rt.store.query("workflow_nodes", {"run_id": run_id})}


async def test_i37_5_deleting_an_agent_leaves_none_of_its_text_in_a_workflow_run_that_called_it(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime], tmp_path: Path) -> None:
    texts = Texts()
    rt, run_id = await _run_probe(store_url, servers, runtime_factory, texts)
    helper_copy, reviewer_copy = await _artifacts(rt, run_id, texts)
    before = _rows(rt, store_url)
    for text in (*texts.helpers, texts.reviewer):
        assert _holding(before, text), f"the probe never stored {text}"
    nodes_before = _nodes(rt, run_id)

    would = await delete_owner(rt.kernel, HELPER, dry_run=True)

    assert would.state == "would_delete" and _rows(rt, store_url) == before
    assert would.derived["workflow_nodes"] == 3  # helper, note, final (reviewer: not a copy)

    done = await delete_owner(rt.kernel, HELPER)

    after = _rows(rt, store_url)
    for text in texts.helpers:
        assert _holding(after, text) == [], text
    assert done.to_dict()["derived"] == would.to_dict()["derived"]
    assert done.rows["workflow_artifacts"] == 1 and done.rows["operations"] == 2  # its 2 model calls
    # the workflow's records and structure stay: every node, its status and operation
    nodes = _nodes(rt, run_id)
    assert {k: (r["status"], r["operation_id"]) for k, r in nodes.items()} == {
        k: (r["status"], r["operation_id"]) for k, r in nodes_before.items()}
    marker = deletion_marker(HELPER)
    for node in ("helper", "note"):
        assert nodes[(node, 1)]["data"]["output"] == marker
        assert nodes[(node, 1)]["data"]["deleted"] == {"owner": "agent:helper"}
    assert nodes[("final", 1)]["data"]["output"] == \
        f"echo: final {marker} / {marker} / {texts.reviewer}: looks fine"
    assert "deleted" not in nodes[("reviewer", 1)]["data"]
    # the reviewer's own content is untouched: its answer, its model call, its artifact
    assert nodes[("reviewer", 1)]["data"]["output"] == f"{texts.reviewer}: looks fine"
    reviewer_calls = [r for r in after["operations"]
                      if '"id": "reviewer"' in json.dumps(json.loads(r[-1])
                                                          if isinstance(r[-1], str) else r[-1])]
    assert reviewer_calls and all(texts.reviewer in str(r) for r in reviewer_calls)
    assert _holding(after, texts.artifact_other)
    assert not helper_copy.parent.parent.exists() and reviewer_copy.read_text() == \
        texts.artifact_other
    run = rt.store.get("runs", {"run_id": run_id})
    assert run is not None and run["status"] == "succeeded"
    assert texts.reviewer in run["data"]["output"]

    again = await delete_owner(rt.kernel, HELPER)

    assert again.state == "already_deleted" and _rows(rt, store_url) == after
    if not store_url.startswith("memory"):
        shown = Cli(store_url).json("runs", "show", run_id, "--store", store_url)
        by_node = {n["node"]: n for n in shown["nodes"]}
        assert [n["node"] for n in shown["nodes"]] == ["helper", "note", "reviewer", "final"]
        assert {n["status"] for n in shown["nodes"]} == {"succeeded"}
        assert by_node["helper"]["output"] == marker


async def test_i37_5_deleting_a_workflow_keeps_the_rows_of_the_agents_it_called(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    texts = Texts()
    rt, run_id = await _run_probe(store_url, servers, runtime_factory, texts)
    store = rt.store

    def calls_of(agent: str) -> list[dict[str, Any]]:
        return [r for r in store.query("operations", {"run_id": run_id})
                if r["data"]["request"]["owner_ref"]["id"] == agent]

    mine = {a: calls_of(a) for a in ("helper", "reviewer")}
    attempts = {a: [store.query("attempts", {"operation_id": o["operation_id"]})
                    for o in ops] for a, ops in mine.items()}
    context = store.query("context_records", {"run_id": run_id})

    done = await delete_owner(rt.kernel, OwnerRef(kind="workflow", id="wf"))

    assert done.state == "deleted" and done.derived == {}
    assert store.get("runs", {"run_id": run_id}) is None
    assert store.query("workflow_nodes", {"run_id": run_id}) == []
    left = store.query("operations", {"run_id": run_id})
    assert {r["data"]["request"]["owner_ref"]["kind"] for r in left} == {"agent"}
    for agent in ("helper", "reviewer"):  # its calls, their attempts: all still there
        assert [o["operation_id"] for o in calls_of(agent)] == \
            [o["operation_id"] for o in mine[agent]]
        assert [store.query("attempts", {"operation_id": o["operation_id"]})
                for o in mine[agent]] == attempts[agent]
    assert store.query("context_records", {"run_id": run_id}) == context
    scopes = store.query("workspace_scopes", {"run_id": run_id})  # the agents' invocations
    assert sorted(s["owner_id"] for s in scopes) == ["helper", "helper", "reviewer"]
    assert _holding(_rows(rt, store_url), texts.helper)  # the helper's own answer, its record

    # the helper's rows stay reachable by their owner: deleting the helper finds them
    gone = await delete_owner(rt.kernel, HELPER)

    assert gone.rows["operations"] == 2 and calls_of("helper") == []
    assert [o["operation_id"] for o in calls_of("reviewer")] == \
        [o["operation_id"] for o in mine["reviewer"]]
    for text in texts.helpers:
        assert _holding(_rows(rt, store_url), text) == [], text


async def test_i37_5_deleting_one_agent_leaves_another_agents_rows_of_the_same_run_as_they_were(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    texts = Texts()
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    rt, _ = await _run_probe(url, servers, runtime_factory, texts)
    before = _rows(rt, url)
    reviewer_ops = {r[0] for r in before["operations"] if '"id":"reviewer"' in r[-1]}
    assert reviewer_ops

    await delete_owner(rt.kernel, HELPER)

    after = _rows(rt, url)
    for name in ("attempts", "hook_invocations", "results"):  # the reviewer's calls' rows
        assert {r for r in after[name] if r[0] in reviewer_ops} == \
            {r for r in before[name] if r[0] in reviewer_ops}, name
    by_id = {r[0]: r for r in after["operations"]}
    for op in reviewer_ops:  # its call: the same but for the helper's text it was given
        old = next(r for r in before["operations"] if r[0] == op)
        assert by_id[op][-1] == old[-1].replace(
            texts.long, deletion_marker(HELPER)).replace(texts.note, deletion_marker(HELPER))


def test_i37_5_the_agent_node_capability_prefix_is_the_one_squad_calls() -> None:
    assert AGENT_NODE_PREFIX == SQUAD_PREFIX


async def test_i37_5_a_waiting_workflow_run_resumed_after_the_deletion_hands_on_the_marker(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    texts = Texts()
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    helper = servers()
    helper.script(answer(texts.long))
    flow = (Workflow("gated").agent("helper", "helper", input="{{ input.task }}")
            .wait("gate", question="Go on?")
            .capability("final", "echo", args={"text": "got {{ nodes.helper.output }}"})
            .edge("helper", "gate").edge("gate", "final", when="approved"))
    rt = runtime_factory([AgentSpec(name="helper", model=connection(helper))], store=url,
                         programs=[WorkflowProgram(flow.build(), tools=[echo])])
    first = await asyncio.wait_for(rt.run("find things", agent="workflow:gated"), WAIT_S)
    assert first.status == "waiting", first.error

    done = await rt.delete_owner("agent:helper")

    assert done.stopped == () and done.derived["workflow_nodes"] == 1
    (call,) = first.waiting
    await rt.approve(first.run_id, call["operation_id"])
    resumed = await asyncio.wait_for((await rt.resume(first.run_id)).result(), WAIT_S)
    assert resumed.status == "succeeded", resumed.error
    assert resumed.output == f"echo: got {deletion_marker(HELPER)}"
    assert _holding(_rows(rt, url), texts.helper) == []


async def test_i37_5_a_running_workflow_run_that_holds_the_agents_answer_is_stopped_first(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    texts = Texts()
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    helper = servers()
    helper.script(answer(texts.long))
    flow = (Workflow("held").agent("helper", "helper", input="{{ input.task }}")
            .capability("hold", "hold", args={"text": "{{ nodes.helper.output }}"})
            .capability("final", "echo", args={"text": "got {{ nodes.helper.output }}"})
            .edge("helper", "hold").edge("hold", "final"))
    rt = runtime_factory([AgentSpec(name="helper", model=connection(helper))], store=url,
                         programs=[WorkflowProgram(flow.build(), tools=[hold, echo])])
    HOLD["entered"], HOLD["release"] = asyncio.Event(), asyncio.Event()
    handle = await rt.start("find things", agent="workflow:held")
    await asyncio.wait_for(HOLD["entered"].wait(), WAIT_S)  # the helper's answer is in memory

    done = await rt.delete_owner("agent:helper", wait_s=WAIT_S)

    assert done.stopped == (handle.run_id,)
    ended = await asyncio.wait_for(handle.result(), WAIT_S)
    assert ended.status == "cancelled"
    assert _holding(_rows(rt, url), texts.helper) == []
    nodes = _nodes(rt, handle.run_id)
    assert nodes[("helper", 1)]["data"]["deleted"] == {"owner": "agent:helper"}
    assert ("final", 1) not in nodes  # it never rendered the helper's answer



def test_i37_5_owners_delete_says_what_it_would_tombstone_then_does_it(
        servers: Callable[[], ScriptedOpenAIServer], tmp_path: Path) -> None:
    texts = Texts()
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"

    async def probe() -> str:
        made: list[Runtime] = []

        def factory(agents: list[AgentSpec], *, store: str, **kwargs: Any) -> Runtime:
            made.append(Runtime(agents, store=store, workspace_root=tmp_path / "ws", **kwargs))
            return made[-1]

        try:
            return (await _run_probe(url, servers, factory, texts))[1]
        finally:
            for rt in made:
                await rt.aclose()

    run_id = asyncio.run(probe())
    cli = Cli(url)

    refused = cli("owners", "delete", "agent:helper", "--store", url)

    assert refused.exit_code == 2 and "CONFIRMATION_REQUIRED" in refused.stderr
    assert "its content replaced by a deletion marker in" in refused.stdout
    assert "3 workflow_nodes" in refused.stdout
    would = cli.json("owners", "delete", "agent:helper", "--store", url, exit_code=2)
    assert would["derived"]["workflow_nodes"] == 3 and would["total_derived"] >= 3
    assert would["workspace_root"] == str(tmp_path / "ws")  # the workflow run's root

    done = cli.json("owners", "delete", "agent:helper", "--yes", "--store", url)

    assert done["state"] == "deleted" and done["derived"] == would["derived"]
    rows = {name: raw_sql(url, f"SELECT {', '.join(t.columns)} FROM {name}")
            for name, t in TABLES.items()}
    assert _holding(rows, texts.helper) == [] and _holding(rows, texts.note) == []
    shown = cli.json("runs", "show", run_id, "--store", url)
    assert [n["status"] for n in shown["nodes"]] == ["succeeded"] * 4


async def test_i37_5_deleting_an_agent_revokes_the_artifacts_it_handed_on_and_their_copies(
        servers: Callable[[], ScriptedOpenAIServer], runtime_factory: Callable[..., Runtime],
        tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    mine, theirs = f"HELPER-FILE-{tag}\n", f"WORKFLOW-FILE-{tag}\n"
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    helper = servers()
    helper.script(calls(tool_call("w", "fs_write", path="src/mod.py", content=mine)),
                  answer("wrote it"))
    flow = (Workflow("hand")
            .capability("make", "fs.write", args={"path": "src/wf.py", "content": theirs},
                        outputs=["src/**"])
            .agent("helper", "helper", outputs=["src/**"])
            .capability("use", "fs.write", args={"path": "x.txt", "content": "x"},
                        inputs=[{"from": "helper", "files": ["src/**"]},
                                {"from": "make", "files": ["src/**"]}])
            .wait("gate", question="look?")
            .edge("make", "helper").edge("helper", "use").edge("use", "gate"))
    rt = runtime_factory([AgentSpec(name="helper", model=connection(helper),
                                    tools=("fs.write",))], store=url,
                         programs=[WorkflowProgram(flow.build(), tools=["fs.write"])],
                         sandbox_backend="none")
    first = await asyncio.wait_for(rt.run("write", agent="workflow:hand"), WAIT_S)
    assert first.status == "waiting", first.error
    scopes = rt.kernel.environment.scopes
    use = next(s for s in scopes.scopes_for_run(first.run_id) if s.partition_id == "n-use-1")
    inputs = inputs_folder(scopes.root, use)
    assert inputs is not None
    assert (inputs / "helper/src/mod.py").read_text() == mine
    assert (inputs / "make/src/wf.py").read_text() == theirs
    assert _holding(_rows(rt, url), f"HELPER-FILE-{tag}")

    done = await rt.delete_owner("agent:helper")

    assert done.rows["workflow_artifacts"] == 1
    owners = [r["source_owner"] for r in rt.store.query("workflow_artifacts", {"run_id": first.run_id})]
    assert owners == ["workflow:hand"]
    assert not (inputs / "helper").exists()
    assert (inputs / "make/src/wf.py").read_text() == theirs
    rows = _rows(rt, url)
    assert _holding(rows, f"HELPER-FILE-{tag}") == [] and _holding(rows, f"WORKFLOW-FILE-{tag}")


async def test_i37_5_deleting_an_agent_removes_what_its_nodes_posted_to_the_collaboration_state(
        store_url: str, servers: Callable[[], ScriptedOpenAIServer],
        runtime_factory: Callable[..., Runtime]) -> None:
    """What the agent's node wrote with the collaboration tools — a message, the work it handed
    off — is its content too: after ``delete_owner(agent:helper)`` no row holds it, and the
    rows (the message, the handoff, the wait node that took the message) stay."""
    posted, handed = f"HELPER-POSTED-{uuid.uuid4()}", f"HELPER-HANDED-{uuid.uuid4()}"
    helper = servers()
    helper.script(calls(tool_call("p1", "collab_post", to="inbox", body=posted),
                        tool_call("h1", "collab_handoff", to="inbox", payload={"work": handed})),
                  answer("posted and handed off"))
    flow = (Workflow("wf").agent("helper", "helper", input="{{ input.task }}")
            .wait("inbox", wait="message", from_node="helper").edge("helper", "inbox"))
    rt = runtime_factory([AgentSpec(name="helper", model=connection(helper),
                                    tools=("collab.post", "collab.handoff"))],
                         store=store_url, programs=[WorkflowProgram(flow.build())])
    result = await asyncio.wait_for(rt.run("post", agent="workflow:wf"), WAIT_S)
    assert result.status == "succeeded", result.error
    assert result.output == posted  # the wait node's output: the message it took
    url = store_url
    assert _holding(_rows(rt, url), posted) and _holding(_rows(rt, url), handed)

    await delete_owner(rt.kernel, HELPER)

    rows = _rows(rt, url)
    assert _holding(rows, posted) == [] and _holding(rows, handed) == []
    assert len(rt.store.query("mailbox", {"run_id": result.run_id})) == 1
    assert len(rt.store.query("handoffs", {"run_id": result.run_id})) == 1
    assert {(r["node"], r["status"]) for r in _nodes(rt, result.run_id).values()} == {
        ("helper", "succeeded"), ("inbox", "succeeded")}
