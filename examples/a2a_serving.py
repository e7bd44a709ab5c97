"""The notes agent served over A2A 1.0 and called with the official ``a2a-sdk`` client.

    python examples/a2a_serving.py [--store sqlite:///.agentloom/a2a.db] [--port 8711]

What ``agentloom serve examples/notes/agentloom.yaml`` does, in one process: the host app
(``create_app``) under uvicorn on 127.0.0.1, an API key for alice in acme; then an A2A client
fetches the agent card, sends a message over JSON-RPC, and reads the task back over
HTTP+JSON. docs/a2a-serving.md is the guide.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from pathlib import Path

import httpx
import uvicorn
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from agentloom.assembly import runtime_from_config
from agentloom.config import load_config
from agentloom.host import create_key
from agentloom.host.app import create_app

CONFIG = Path(__file__).resolve().parent / "notes" / "agentloom.yaml"


async def call(base: str, key: str) -> None:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
    card = (await http.get(base + "/.well-known/agent-card.json")).json()
    print("card:", [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]])
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()),
                      parts=[Part(text="Keep a note about the release")])
    for binding in ("JSONRPC", "HTTP+JSON"):
        client = await create_client(base, client_config=ClientConfig(
            streaming=False, supported_protocol_bindings=[binding], httpx_client=http))
        if binding == "JSONRPC":
            async for event in client.send_message(SendMessageRequest(message=message)):
                task = event.task
                print(f"{binding}: task {task.id} {TaskState.Name(task.status.state)}")
        else:
            task = await client.get_task(GetTaskRequest(id=task.id))
            answer = "".join(p.text for a in task.artifacts for p in a.parts)
            print(f"{binding}: {TaskState.Name(task.status.state)}: {answer}")
    await http.aclose()


async def main(store: str, port: int) -> None:
    runtime = runtime_from_config(load_config(CONFIG), store=store)
    _, key = await create_key(runtime.store, runtime.kernel.coordinator.commit,
                              actor="alice", project="acme")
    server = uvicorn.Server(uvicorn.Config(create_app(runtime), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 (uvicorn's Server has no started event)
        await asyncio.sleep(0.05)
    try:
        await call(f"http://127.0.0.1:{port}", key)
    finally:
        server.should_exit = True
        await serving


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sqlite:///.agentloom/a2a.db")
    parser.add_argument("--port", type=int, default=8711)
    args = parser.parse_args()
    asyncio.run(main(args.store, args.port))
