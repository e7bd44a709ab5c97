"""Issue 37 point 1, acceptance 2: a workflow's process SIGKILLed between a node's end and its
artifact records, and after them, then ``agentloom runs resume`` — on SQLite and PostgreSQL
(real ``agentloom`` subprocesses, ``AGENTLOOM_CRASH_AT``).

``make`` (an SDK tool) writes three files in its own folder and declares ``outputs``; ``look``
is granted them and globs its ``/inputs``. Killed at ``artifacts_collected`` (the blobs are
committed, the rows and the node's record are not), nothing is handed on: no row exists; the
resume records the set once. Killed at ``artifacts_granting`` (the next node, after ``make``'s
record committed), the resume finds ``make``'s record and records nothing again. Either way
each file has exactly one row and ``look`` sees the complete set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentloom.store import open_store
from agentloom.store.artifacts import run_artifacts
from agentloom.store.workflow_nodes import node_records

pytestmark = pytest.mark.kill

TIMEOUT_S = 60
FILES = {"src/a.py": "A = 1\n", "src/pkg/b.py": "B = 2\n", "tests/test_a.py": "def test(): pass\n"}

TOOLS = f'''
"""``make``: writes three files into its node's folder."""
from agentloom import StrictInput, Tool, ToolContext

FILES = {FILES!r}


class MakeInput(StrictInput):
    tag: str


class Make(Tool[MakeInput]):
    name = "i37.make"
    description = "Write three files."

    async def execute(self, args: MakeInput, ctx: ToolContext) -> str:
        for path, text in FILES.items():
            try:
                await ctx.files.write(path, text)
            except Exception as exc:  # written before a kill: it is there
                if getattr(exc, "code", None) != "EXISTS":
                    raise
        return "made " + args.tag


make = Make()
'''

CONFIG = """\
version: 1
agents:
  unused:
    model: {builtin: script, path: unused.yaml}
workflows:
  ship:
    nodes:
      make:
        capability: "i37_tools:make"
        args: {tag: "{{ input.task }}"}
        outputs: {files: ["src/**", "tests/**"]}
      look:
        capability: fs.glob
        args: {pattern: "/inputs/**"}
        inputs: {from: make}
    edges:
      - {from: make, to: look}
sandbox: {backend: none}
"""


class Project:
    def __init__(self, tmp_path: Path, store: str) -> None:
        self.folder = tmp_path / "p"
        self.folder.mkdir()
        self.store = store
        (self.folder / "i37_tools.py").write_text(TOOLS, encoding="utf-8")
        (self.folder / "unused.yaml").write_text("turns:\n  - text: unused\n", encoding="utf-8")
        self.config = self.folder / "agentloom.yaml"
        self.config.write_text(CONFIG, encoding="utf-8")

    def agentloom(self, *args: str, crash_at: str | None = None
                  ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("AGENTLOOM_STORE", "AGENTLOOM_CRASH_AT")}
        if crash_at is not None:
            env["AGENTLOOM_CRASH_AT"] = crash_at
        return subprocess.run([sys.executable, "-m", "agentloom", *args, "--store", self.store,
                               "--json"], cwd=self.folder, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S, check=False)

    def state(self) -> tuple[str, list[Any], dict[str, str]]:
        """The run id, its artifact rows and its node records' statuses."""
        store = open_store(self.store)
        try:
            (row,) = store.query("runs")
            run_id = str(row["run_id"])
            return (run_id, run_artifacts(store, run_id),
                    {r.node: r.status for r in node_records(store, run_id)})
        finally:
            store.close()


@pytest.fixture
def project(durable_store_url: str, tmp_path: Path) -> Project:
    return Project(tmp_path, durable_store_url)


@pytest.mark.parametrize(("point", "recorded_before"), [
    ("artifacts_collected", False),  # between the node's end and its artifact records
    ("artifacts_granting", True),  # after them: the next node is about to get them
])
def test_i37_1_a_kill_before_or_after_the_artifact_records_resumes_with_each_file_once(
    project: Project, point: str, recorded_before: bool,
) -> None:
    killed = project.agentloom("run", str(project.config), "--workflow", "ship", "v1",
                               crash_at=point)
    assert killed.returncode == -9, (killed.returncode, killed.stderr[-2000:])
    run_id, rows, nodes = project.state()
    if recorded_before:
        assert nodes == {"make": "succeeded"}
        assert sorted(a.path for a in rows) == sorted(FILES)
    else:  # nothing half-visible: no row, no record
        assert (rows, nodes) == ([], {})

    done = project.agentloom("runs", "resume", run_id)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    resumed = json.loads(done.stdout)
    assert resumed["status"] == "succeeded", resumed

    _, rows, nodes = project.state()
    assert nodes == {"make": "succeeded", "look": "succeeded"}
    assert sorted(a.path for a in rows) == sorted(FILES)  # each file exactly once
    assert {a.source_owner for a in rows} == {"workflow:ship"}
    assert {a.invocation for a in rows} == {f"{run_id}/n/make/1"}
    seen = resumed["output"]
    for path in FILES:
        assert f"/inputs/make/{path}" in seen, seen
