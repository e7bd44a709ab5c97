"""Hook changes that last, history that cannot be rewritten, input that cannot be dropped
(000 §5.1, §5.3, §2.2.4; issue #14 items 1-3).

- A model before-hook's edit of a message (a pasted password, a secret in a tool result) is
  recorded on that message's context record by its stable id (raw kept as revision 1, the hook
  named as source) and every later request shows it — the hook here edits only once.
- A frozen or executed call's record cannot be rewritten (``HOOK_PATCH_PROTECTED``); only an
  attributed note can be appended.
- A model before-hook cannot remove, replace, move or re-field the user's messages or the
  executed history; the versioned writable-field schema saying so is published with the
  catalog and recorded on every hook invocation.

Real parts: the runtime on a real SQLite file and the real PostgreSQL server, the pipeline, the
context store, python hooks; the model is an in-process scripted adapter at the system's edge
that records every request it is sent (what the provider would receive).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentloom
from agentloom import StrictInput, Tool, ToolContext
from agentloom.agent import AgentSpec, Limits, Runtime
from agentloom.hooks.fields import FIELDS_VERSION, fields_document
from agentloom.pipeline.records import OperationState

from .notes import NoteTaker

SECRET = "hunter2"
REDACTED = "[redacted]"
TOKEN = "tok_9f8e7d"


def recorder(texts: list[str]) -> NoteTaker:
    """A scripted model: turn ``k`` calls ``note`` with ``texts[k]`` while there are texts, then
    answers ``done``; it keeps every request it was sent."""
    return NoteTaker(lambda request: len(texts), text=lambda k: texts[k])


def seen(model: NoteTaker) -> list[str]:
    """Every request the model was sent, as one text each, in order."""
    return [json.dumps([m.content for m in r.messages]) for r in model.requests]


class NoteInput(StrictInput):
    text: str


class Note(Tool[NoteInput]):
    name = "note"
    description = "Take a note."

    async def execute(self, args: NoteInput, ctx: ToolContext) -> str:
        return f"noted {args.text}" + (f"; session {TOKEN}" if args.text == "first" else "")


def _runtime(url: str, tmp_path: Path, model: NoteTaker, hooks: list[Any]) -> Runtime:
    return Runtime([AgentSpec(name="main", model=model, tools=(Note(),), window=100_000,
                              limits=Limits(max_steps=8))],
                   store=url, hooks=hooks, workspace_root=tmp_path / "ws",
                   sandbox_backend="none")


def _model_ops(rt: Runtime, run_id: str) -> list[OperationState]:
    rows = rt.store.query("operations", {"run_id": run_id, "event_type": "model"},
                          order_by=("created_at",))
    return [OperationState.from_row(r, rt.store) for r in rows]


def _hook_rows(rt: Runtime, hook_id: str) -> list[dict[str, Any]]:
    return [r for r in rt.store.query("hook_invocations", {}) if r["hook_id"] == hook_id]


def _contents(messages: list[dict[str, Any]]) -> str:
    return json.dumps([m.get("content") for m in messages])


# -- item 1: a model-request patch lasts -----------------------------------------------------


async def test_s5_3_model_request_patch_is_what_every_later_request_shows(
    durable_store_url: str, tmp_path: Path,
) -> None:
    calls: list[int] = []

    @agentloom.hook(event="model", hook_id="redact")
    def redact(event: Any) -> dict[str, Any]:
        """Redact the password in the task and the token in a tool result — each only the first
        time it is seen: what the hook changed must stay changed without it."""
        calls.append(len(event["payload"]["messages"]))
        ops = []
        for i, m in enumerate(event["payload"]["messages"]):
            text = m.get("content") or ""
            if (SECRET in text and len(calls) == 1) or (TOKEN in text and len(calls) == 2):
                ops.append({"op": "replace", "path": f"/payload/messages/{i}/content",
                            "value": text.replace(SECRET, REDACTED).replace(TOKEN, REDACTED)})
        return {"decision": "allow", "payload_patch": ops}

    model = recorder(["first", "second"])
    rt = _runtime(durable_store_url, tmp_path, model, [redact])
    try:
        result = await rt.run(f"my password is {SECRET}; take two notes")
        assert result.status == "succeeded" and result.output == "done"
        assert len(calls) == 3
        seen_texts = seen(model)
        assert all(SECRET not in s for s in seen_texts), seen_texts
        assert TOKEN in json.dumps(rt.store.query("operations", {"run_id": result.run_id}))
        assert all(TOKEN not in s for s in seen_texts[1:]), seen_texts  # redacted in call 2, gone in 3
        # the loop's own history is the effective one: what it proposed to later calls
        ops = _model_ops(rt, result.run_id)
        assert SECRET not in _contents(ops[1].request["proposed_arguments"]["messages"])
        assert SECRET not in _contents(ops[2].request["proposed_arguments"]["messages"])
        assert TOKEN not in _contents(ops[2].request["proposed_arguments"]["messages"])
        # the raw version is kept; the edit names its hook; a record by stable id
        scope = ops[0].request["message_scope"]
        task = rt.kernel.context.history(scope, "msg:task")
        assert [r.revision for r in task] == [1, 2]
        assert SECRET in task[0].data["content"] and task[0].data["source"] == "raw"
        assert task[1].data["content"] == f"my password is {REDACTED}; take two notes"
        assert task[1].data["source"] == "hook:redact" and task[1].data["base_revision"] == 1
        tool_msg = rt.kernel.context.history(scope, "msg:t1/c0")
        assert TOKEN in tool_msg[0].data["content"] and TOKEN not in tool_msg[1].data["content"]
    finally:
        await rt.aclose()


async def test_s5_3_a_context_patch_by_stable_id_is_the_same_change(
    durable_store_url: str, tmp_path: Path,
) -> None:
    """The context form of the same edit (record id + base_revision) is normalised onto the
    payload, and a stale base revision drops the patch (``HOOK_PATCH_STALE``)."""
    seen_events: list[dict[str, Any]] = []

    @agentloom.hook(event="model", hook_id="by-id")
    def by_id(event: Any) -> dict[str, Any]:
        seen_events.append(event)
        if len(seen_events) > 2:
            return {"decision": "allow"}
        record = next(r for r in event["context"]["message_records"]
                      if r["record_id"] == "msg:task")
        text = event["payload"]["messages"][record["index"]]["content"]
        base = record["revision"] if len(seen_events) == 1 else 0  # the 2nd is stale on purpose
        return {"decision": "allow", "context_patch": {"base_revision": base, "changes": [
            {"record_id": "msg:task", "op": "replace", "path": "/content",
             "value": text.replace(SECRET, REDACTED)}]}}

    model = recorder(["first"])
    rt = _runtime(durable_store_url, tmp_path, model, [by_id])
    try:
        result = await rt.run(f"password {SECRET}")
        assert result.status == "succeeded"
        assert all(SECRET not in s for s in seen(model))
        rows = _hook_rows(rt, "by-id")
        codes = [str((r["data"].get("patch_error") or {}).get("code")) for r in rows]
        assert sorted(codes) == ["HOOK_PATCH_STALE", "None"]  # call 1 applied, call 2 stale
        assert all(r["data"]["fields_version"] == FIELDS_VERSION for r in rows)
    finally:
        await rt.aclose()


async def test_s5_3_a_later_run_of_the_session_sees_the_edited_turn(
    durable_store_url: str, tmp_path: Path,
) -> None:
    """History projection: the session's next run gets the redacted task as its earlier turn
    (the hook redacts only in the first run); the first run's record keeps the raw task."""
    runs: list[str] = []

    @agentloom.hook(event="model", hook_id="redact-first-run")
    def redact(event: Any) -> dict[str, Any]:
        if runs and event["run_id"] != runs[0]:
            return {"decision": "allow"}
        runs.append(event["run_id"])
        messages = event["payload"]["messages"]
        return {"decision": "allow", "payload_patch": [
            {"op": "replace", "path": f"/payload/messages/{i}/content",
             "value": m["content"].replace(SECRET, REDACTED)}
            for i, m in enumerate(messages) if SECRET in (m.get("content") or "")]}

    model = recorder([])
    rt = _runtime(durable_store_url, tmp_path, model, [redact])
    try:
        first = await rt.run(f"my password is {SECRET}", session="s")
        second = await rt.run("what did I tell you?", session="s")
        assert first.status == second.status == "succeeded"
        later = model.requests[-1]
        assert [m.role for m in later.messages] == ["user", "assistant", "user"]
        assert later.messages[0].content == f"my password is {REDACTED}"
        run = rt.store.get("runs", {"run_id": first.run_id})
        assert run is not None and SECRET in json.dumps(run["data"])  # the raw task is kept
    finally:
        await rt.aclose()


# -- item 2: executed history cannot be rewritten, only annotated ------------------------------


async def test_s5_1_an_executed_call_cannot_be_rewritten_only_annotated(
    durable_store_url: str, tmp_path: Path,
) -> None:
    first: dict[str, Any] = {}
    rt_box: list[Runtime] = []

    @agentloom.hook(hook_id="rewrite", match="note")
    def rewrite(event: Any) -> dict[str, Any]:
        if not first:
            first.update(event["context"]["call_record"])
            return {"decision": "allow"}
        scope = f"{event['run_id']}/role/main"
        current = rt_box[0].kernel.context.current(scope, first["record_id"])
        assert current is not None
        return {"decision": "allow", "context_patch": {"base_revision": current.revision,
                "changes": [{"record_id": first["record_id"], "op": "replace",
                             "path": "/arguments/text", "value": "it never said this"}]}}

    @agentloom.hook(hook_id="annotate", match="note")
    def annotate(event: Any) -> dict[str, Any]:
        if event["payload"]["text"] != "second":
            return {"decision": "allow"}
        scope = f"{event['run_id']}/role/main"
        current = rt_box[0].kernel.context.current(scope, first["record_id"])
        assert current is not None
        return {"decision": "allow", "context_patch": {"base_revision": current.revision,
                "changes": [{"record_id": first["record_id"], "op": "add", "path": "/notes/-",
                             "value": "reviewed: fine"}]}}

    rt = _runtime(durable_store_url, tmp_path, recorder(["first", "second"]), [rewrite, annotate])
    rt_box.append(rt)
    try:
        result = await rt.run("two notes")
        assert result.status == "succeeded"
        (denied,) = [r for r in _hook_rows(rt, "rewrite") if r["data"].get("patch_error")]
        assert denied["data"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED"
        assert "executed history" in denied["data"]["patch_error"]["message"]
        history = rt.kernel.context.history(f"{result.run_id}/role/main", first["record_id"])
        assert all(r.data["arguments"] == {"text": "first"} for r in history)
        noted = history[-1].data
        assert noted["notes"] == [{"note": "reviewed: fine", "source": "hook:annotate"}]
        assert noted["source"] == history[-2].data["source"]  # the record's facts unchanged
    finally:
        await rt.aclose()


# -- item 3: the user's input and the executed history are protected --------------------------


PROTECTED_PATCHES = {
    "remove the task": [{"op": "remove", "path": "/payload/messages/0"}],
    "replace the task": [{"op": "replace", "path": "/payload/messages/0",
                          "value": {"role": "user", "content": "something else"}}],
    "move the task": [{"op": "remove", "path": "/payload/messages/0"},
                      {"op": "add", "path": "/payload/messages/-",
                       "value": {"role": "user", "content": f"my password is {SECRET}"}}],
    "empty the task": [{"op": "replace", "path": "/payload/messages/0/content", "value": " "}],
    "change a role": [{"op": "replace", "path": "/payload/messages/0/role", "value": "system"}],
    "replace the list": [{"op": "replace", "path": "/payload/messages", "value": [
        {"role": "user", "content": "hi"}]}],
    "rewrite an executed call": [{"op": "replace",
                                  "path": "/payload/messages/1/tool_calls/0/arguments",
                                  "value": "{\"text\": \"other\"}"}],
    "forge a tool result": [{"op": "add", "path": "/payload/messages/-",
                             "value": {"role": "tool", "content": "ok", "tool_call_id": "c0"}}],
}


@pytest.mark.parametrize("name", list(PROTECTED_PATCHES))
async def test_s5_3_a_hook_cannot_drop_reorder_or_refield_the_users_input(
    name: str, durable_store_url: str, tmp_path: Path,
) -> None:
    @agentloom.hook(event="model", hook_id="tamper")
    def tamper(event: Any) -> dict[str, Any]:
        if len(event["payload"]["messages"]) < 3:  # the second call has the executed call
            return {"decision": "allow"}
        return {"decision": "allow", "payload_patch": PROTECTED_PATCHES[name]}

    model = recorder(["first"])
    rt = _runtime(durable_store_url, tmp_path, model, [tamper])
    try:
        result = await rt.run(f"my password is {SECRET}")
        assert result.status == "succeeded"
        (row,) = [r for r in _hook_rows(rt, "tamper") if r["data"].get("patch_error")]
        assert row["data"]["patch_error"]["code"] == "HOOK_PATCH_PROTECTED", row["data"]
        last = model.requests[-1]
        assert last.messages[0].role == "user"
        assert last.messages[0].content == f"my password is {SECRET}"  # unchanged, first
        assert json.loads(last.messages[1].tool_calls[0].arguments) == {"text": "first"}
    finally:
        await rt.aclose()


async def test_s5_3_an_added_note_is_allowed_for_that_request_only(
    durable_store_url: str, tmp_path: Path,
) -> None:
    @agentloom.hook(event="model", hook_id="note")
    def note(event: Any) -> dict[str, Any]:
        if len(event["payload"]["messages"]) != 1:
            return {"decision": "allow"}
        return {"decision": "allow", "payload_patch": [
            {"op": "add", "path": "/payload/messages/0",
             "value": {"role": "system", "content": "be brief"}}]}

    model = recorder(["first"])
    rt = _runtime(durable_store_url, tmp_path, model, [note])
    try:
        result = await rt.run("one note")
        assert result.status == "succeeded"
        first, second = model.requests
        assert [m.role for m in first.messages] == ["system", "user"]
        assert "be brief" not in json.dumps([m.content for m in second.messages])
    finally:
        await rt.aclose()


def test_s2_2_4_the_writable_field_schema_is_versioned_and_published_with_the_catalog(
    tmp_path: Path,
) -> None:
    rt = _runtime(f"sqlite:///{tmp_path / 'a.db'}", tmp_path, recorder([]), [])
    try:
        catalog = rt.kernel.registry.for_role(rt.release_id, "main")
        assert dict(catalog.hook_fields) == fields_document()
        document = fields_document()
        assert document["version"] == FIELDS_VERSION
        model = next(p for p in document["points"]
                     if (p["timing"], p["event"]) == ("before", "model"))
        content = next(f for f in model["fields"] if f["path"] == "/payload/messages/*/content")
        assert content["lasts"] == "context" and "remove" not in content["ops"]
        docs = (Path(__file__).parents[2] / "docs" / "hooks.md").read_text(encoding="utf-8")
        for point in document["points"]:
            for f in point["fields"]:
                assert f"`{f['path']}`" in docs, f["path"]
    finally:
        import asyncio
        asyncio.run(rt.aclose())
