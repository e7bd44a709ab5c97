"""Issue 18 acceptance 1: the host's API contract fuzzed with Schemathesis against its own
/openapi.json — no 500s, every status, content type, header and body one the document
declares, and a request without a valid key refused.

The app runs in process (Schemathesis calls the ASGI app directly) on a real runtime and a
real SQLite store, authenticated with a real API key whose principal already owns runs in
every state the routes care about (succeeded with a workspace file, waiting for an approval,
queued); generated path parameters are now and then swapped for those runs' ids, so the
fuzzer reaches real objects and not only 404s. Bounded by ``MAX_EXAMPLES`` per operation and
mode and a fixed seed (``AGENTLOOM_FUZZ_EXAMPLES`` and ``AGENTLOOM_FUZZ_SEED`` override them
to explore)."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import hypothesis
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core.failures import FailureGroup
from schemathesis.python import asgi

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host.app import create_app
from agentloom.refs import Principal

from .support import make_key

MAX_EXAMPLES = int(os.environ.get("AGENTLOOM_FUZZ_EXAMPLES", 25))  # per operation and mode
SEED = int(os.environ.get("AGENTLOOM_FUZZ_SEED", 181))
WAIT_S = 0.2  # a fuzzed ``"wait": true`` create answers after this long (no worker here)
FILES = ("hello.txt", "missing.txt", "..%2Foutside.txt")
WELL_FORMED_CURSOR = re.compile(r"[A-Za-z0-9_-]*")

CONFIG = """\
version: 1
workspace: {keep: true}
agents:
  main:
    model: {builtin: script, path: turns.yaml}
    tools: [fs.write]
  asker:
    model: {builtin: script, path: turns.yaml}
    tools: [fs.write]
    hooks:
      - {timing: before, event: tool, match: {capability: fs.write}, handler: {ref: "fuzz_guards:ask"}}
"""
TURNS = """\
turns:
  - tool_calls:
      - name: fs_write
        arguments: {path: hello.txt, content: hi there}
  - text: done
"""
GUARD = '''\
def ask(event):
    return {"decision": "ask", "reason": "Write it?"}
'''


@dataclass(frozen=True)
class Seeded:
    """The principal's runs: ``ended`` ones (their event streams end), ``live`` ones, the
    operations of the waiting one, and a ``cursor`` the API gave."""

    ended: tuple[str, ...]
    live: tuple[str, ...]
    operations: tuple[str, ...]
    cursor: str = ""


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "turns.yaml").write_text(TURNS, encoding="utf-8")
    (folder / "fuzz_guards.py").write_text(GUARD, encoding="utf-8")  # a name no other test uses
    config = folder / "agentloom.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    return config


async def _seed(config: Path, url: str, principal: Principal) -> Seeded:
    """A succeeded run (a workspace file), a run waiting for an approval, a queued run."""
    runtime = runtime_from_config(load_config(config), store=url)
    try:
        done = await runtime.run("write the file", principal=principal)
        waiting = await runtime.run("write it after asking", agent="asker", principal=principal)
        queued = await runtime.submit("later", principal=principal)
        ops = [op["operation_id"] for op in runtime.store.query(
            "operations", {"run_id": waiting.run_id})]
    finally:
        await runtime.aclose()
    assert (done.status, waiting.status) == ("succeeded", "waiting"), (done, waiting)
    return Seeded(ended=(done.run_id,), live=(waiting.run_id, queued), operations=tuple(ops))


def _real_ids(operation: schemathesis.APIOperation, seeded: Seeded) -> st.SearchStrategy[Any]:
    """None (keep the generated ids) or real ones to put in their place (and a workspace
    path that is there, is not, or is out of it); an event stream only of an ended run (a
    live run's stream stays open)."""
    if "{run_id}" not in operation.path:
        return st.none()
    runs = seeded.ended if operation.path.endswith("/events") else seeded.ended + seeded.live
    return st.none() | st.fixed_dictionaries({
        "run_id": st.sampled_from(runs), "operation_id": st.sampled_from(seeded.operations),
        "path": st.sampled_from(FILES)})


def _use_real(case: schemathesis.Case, ids: dict[str, str] | None, mode: GenerationMode,
              seeded: Seeded, auth: dict[str, str]) -> None:
    """The real key in place of a generated one (a negative case without the header stays
    without it), and real ids or cursor where they were drawn."""
    if mode is GenerationMode.POSITIVE or "Authorization" in (case.headers or {}):
        case.headers = {**(case.headers or {}), **auth}
    for name, value in (ids or {}).items():
        if name in (case.path_parameters or {}):
            case.path_parameters[name] = value
    if WELL_FORMED_CURSOR.fullmatch(str((case.query or {}).get("cursor", "!"))):
        case.query["cursor"] = seeded.cursor  # a well-formed cursor the API did not give is a 400


def _fuzz(operation: schemathesis.APIOperation, mode: GenerationMode, seeded: Seeded,
          auth: dict[str, str]) -> None:
    """``MAX_EXAMPLES`` cases of ``operation`` in ``mode``, each called and validated."""

    @hypothesis.seed(SEED)
    @hypothesis.settings(max_examples=MAX_EXAMPLES, database=None, deadline=None,
                         suppress_health_check=list(hypothesis.HealthCheck), print_blob=True)
    @hypothesis.given(case=operation.as_strategy(mode), ids=_real_ids(operation, seeded))
    def check(case: schemathesis.Case, ids: dict[str, str] | None) -> None:
        _use_real(case, ids, mode, seeded, auth)
        case.call_and_validate()

    try:
        check()
    except hypothesis.errors.Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE  # nothing to break: a string path parameter


def test_i18_1_the_api_contract_holds_under_schemathesis(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agentloom.db'}"
    principal = Principal(actor="alice", project="acme")
    key = make_key(url, principal.actor, principal.project)
    config = _project(tmp_path / "p")
    seeded = asyncio.run(_seed(config, url, principal))
    runtime = runtime_from_config(load_config(config), store=url)
    app = create_app(runtime, execute=False, wait_s=WAIT_S)
    auth = {"Authorization": f"Bearer {key}"}
    settings = schemathesis.Config.from_dict({  # unknown query parameters are ignored
        "request-timeout": 30, "generation": {"allow-extra-parameters": True}})
    failures: list[str] = []
    try:
        schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=settings)
        operations = [result.ok() for result in schema.get_all_operations()]
        first = schema["/v1/runs"]["GET"].Case(query={"limit": 1}, headers=auth).call()
        assert first.status_code == 200, first.text
        seeded = replace(seeded, cursor=first.json()["next_cursor"])
        assert len(operations) == sum(map(len, app.state.openapi["paths"].values()))
        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                try:
                    _fuzz(operation, mode, seeded, auth)
                except (Exception, FailureGroup) as exc:
                    failures.append(f"{operation.label} ({mode.value}): {exc}")
    finally:
        asgi.shutdown_lifespans()  # the app's lifespan closes the runtime
    assert not failures, "\n\n".join(failures)
