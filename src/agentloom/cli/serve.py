"""``agentloom serve CONFIG``: the HTTP host (issue 18; ``host.app``) under uvicorn.

By default the process also drives the queued runs (an in-process ``Worker`` of
``--concurrency`` runs, started with the app and stopped gracefully with it); ``--no-execute``
leaves that to ``agentloom worker`` processes on the same store. docs/host.md is the guide.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import uvicorn

from agentloom.agent.configured import runtime_from_config
from agentloom.cli.output import say, setup_logging, stderr_console
from agentloom.config import load_config
from agentloom.errors import redact_secrets
from agentloom.host.app import create_app

__all__ = ["GRACE_S", "serve"]

GRACE_S = 10  # on SIGTERM, open requests (an event stream of a waiting run) get this long



def serve(
    config: Annotated[Path, typer.Argument(
        metavar="CONFIG", help="The config whose agents the API runs.", show_default=False)],
    store: Annotated[str | None, typer.Option(
        "--store", metavar="URL", help="Store URL (sqlite:///path.db, postgresql://…). "
        "Default: $AGENTLOOM_STORE, else the config's store.")] = None,
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="The port to listen on.")] = 8700,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-n", metavar="N", min=1,
        help="The most runs this process drives at once.")] = 1,
    no_execute: Annotated[bool, typer.Option(
        "--no-execute", help="Only queue runs: agentloom worker processes drive them.")] = False,
) -> None:
    """Serve the HTTP API (/v1/runs, SSE events, /openapi.json) for the agents of CONFIG.

    Every /v1 request needs an API key (agentloom keys create). The process drives the runs it
    queues itself unless --no-execute; SIGTERM / Ctrl-C stops it gracefully (runs in flight go
    back to the queue at their next step).
    """
    setup_logging()
    runtime = runtime_from_config(load_config(config), store=store)
    app = create_app(runtime, execute=not no_execute,
                     concurrency=concurrency)
    say(stderr_console(), f"agentloom host on http://{host}:{port} — store "
        f"{redact_secrets(str(runtime.store_url))}; ",
        "runs driven by agentloom worker processes" if no_execute
        else f"driving up to {concurrency} run(s) at once")
    uvicorn.run(app, host=host, port=port, log_level="info", lifespan="on",
                timeout_graceful_shutdown=GRACE_S)
