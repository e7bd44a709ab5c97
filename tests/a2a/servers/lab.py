"""A scripted A2A 1.0 server on the official ``a2a-sdk`` (the edge AgentLoom's A2A client is
tested against): every message it is sent is appended to ``--log`` (one JSON line per
``SendMessage`` / ``SendStreamingMessage``, with its ``A2A-Version`` and ``Authorization``
headers), and what its agent does depends on the text:

=====================  =====================================================================
``echo <x>`` (default)  completed, artifact ``echo: <x>``
``slow <s> <x>``        working for ``<s>`` seconds, then completed (cancellable meanwhile)
``fail``                failed, status message ``the ledger is locked``
``reject``              rejected, status message ``not my job``
``ask``                 input-required, question ``which account?``; a message sent to that
                        task answers it: completed, artifact ``answer: <x>``
``auth``                auth-required, status message ``sign in at https://idp.example``
``cancelled``           the agent cancels the task itself
``odd``                 the task is left in state 99 (no state of A2A 1.0)
``message``             a direct Message reply, no task
=====================  =====================================================================

``python lab.py --port-file F [--binding jsonrpc|rest] [--no-streaming] [--card-version 0.3]
--log L``: binds 127.0.0.1 on a free port and writes it to ``F`` once serving.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


class LabExecutor(AgentExecutor):
    def __init__(self, log: Path) -> None:
        self.log = log

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        text = context.get_user_input()
        headers = context.call_context.state.get("headers", {}) if context.call_context else {}
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"method": "SendMessage", "message_id": message.message_id,
                                "task_id": message.task_id, "text": text,
                                "a2a_version": headers.get("a2a-version"),
                                "authorization": headers.get("authorization")}) + "\n")
        word, _, rest = text.partition(" ")
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if word == "message":
            await event_queue.enqueue_event(Message(
                role=Role.ROLE_AGENT, message_id=f"reply-{message.message_id}",
                context_id=context.context_id, parts=[Part(text=f"reply: {rest}")]))
            return
        if context.current_task is not None:  # an answer to the question it asked
            await updater.add_artifact([Part(text=f"answer: {text}")], name="answer")
            await updater.complete()
            return
        await event_queue.enqueue_event(Task(
            id=context.task_id, context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[message]))
        await updater.start_work()
        if word == "slow":
            seconds, _, rest = rest.partition(" ")
            await asyncio.sleep(float(seconds))
        elif word in ("fail", "reject", "ask", "auth", "cancelled"):
            said = {"fail": "the ledger is locked", "reject": "not my job",
                    "ask": "which account?", "auth": "sign in at https://idp.example",
                    "cancelled": "gave up"}[word]
            reply = updater.new_agent_message([Part(text=said)])
            await {"fail": updater.failed, "reject": updater.reject,
                   "ask": updater.requires_input, "auth": updater.requires_auth,
                   "cancelled": updater.cancel}[word](reply)
            return
        elif word == "odd":
            await updater.update_status(99)  # type: ignore[arg-type]
            return
        elif word != "echo":
            rest = text
        await updater.add_artifact([Part(text=f"echo: {rest}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card(base: str, *, binding: str, streaming: bool) -> AgentCard:
    interfaces = [AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0",
                                 url=f"{base}/a2a/jsonrpc"),
                  AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0",
                                 url=f"{base}/a2a/rest")]
    if binding == "rest":
        interfaces.reverse()  # the first interface is the preferred one
    return AgentCard(
        name="lab", description="A scripted lab agent.", version="0.1.0",
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes what it is sent",
                           tags=["echo"]),
                AgentSkill(id="ledger", name="ledger", description="books ledger entries",
                           tags=["ledger"])],
    )


def legacy_card(base: str) -> dict[str, Any]:
    """An A2A 0.3 card: ``url`` + ``protocolVersion``, no ``supportedInterfaces``."""
    return {"name": "old", "description": "An A2A 0.3 agent.", "version": "0.1.0",
            "url": f"{base}/a2a/jsonrpc", "protocolVersion": "0.3.0",
            "preferredTransport": "JSONRPC", "capabilities": {"streaming": False},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": []}


def app(port: int, *, binding: str, streaming: bool, card_version: str, log: Path) -> Starlette:
    base = f"http://127.0.0.1:{port}"
    agent_card = card(base, binding=binding, streaming=streaming)
    handler = DefaultRequestHandler(agent_executor=LabExecutor(log),
                                    task_store=InMemoryTaskStore(), agent_card=agent_card)
    routes: list[Any] = [Route("/.well-known/agent-card.json",
                               lambda _request: JSONResponse(legacy_card(base)))] \
        if card_version == "0.3" else create_agent_card_routes(agent_card)
    # the card route first: the REST routes end in a catch-all
    routes += [*create_jsonrpc_routes(handler, rpc_url="/a2a/jsonrpc"),
               *create_rest_routes(handler, path_prefix="/a2a/rest")]
    return Starlette(routes=routes)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--binding", choices=("jsonrpc", "rest"), default="jsonrpc")
    parser.add_argument("--no-streaming", dest="streaming", action="store_false")
    parser.add_argument("--card-version", choices=("1.0", "0.3"), default="1.0")
    args = parser.parse_args()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(
        app(port, binding=args.binding, streaming=args.streaming,
            card_version=args.card_version, log=args.log),
        log_level="warning"))

    async def serve() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started:  # noqa: ASYNC110 - uvicorn has no "started" event
            await asyncio.sleep(0.01)
        args.port_file.write_text(str(port), encoding="utf-8")
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
