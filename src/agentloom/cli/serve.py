"""``agentloom serve CONFIG``: the HTTP host (issue 18; ``host.app``) under uvicorn.

By default a child ``agentloom worker`` process drives the queued runs (``host.driver``:
``WorkerProcess`` of ``--concurrency`` runs on the same config and store, started and
supervised with the app, woken when the API queues a run, stopped gracefully with it), so the
server's event loop answers requests and nothing else. A memory store cannot be shared with
another process: there the runs are driven on the server's own loop. ``--no-execute`` leaves
the runs to ``agentloom worker`` processes on the same store. docs/host.md is the guide.

At start it prints on stderr where to go: the page (``/ui/``), the API's base URL (``/v1``),
and — while the store has no API key — the ``agentloom keys create`` line that makes one for
this very store. The port is bound before these lines are printed, so ``--port 0`` prints the
port the system chose.
"""

from __future__ import annotations

import getpass
import logging
import shlex
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentloom.assembly import runtime_from_config
from agentloom.cli.output import say, setup_logging, stderr_console
from agentloom.cli.skills import import_changed_skills
from agentloom.config import Config, load_config
from agentloom.errors import redact_secrets
from agentloom.extras import require

if TYPE_CHECKING:
    import uvicorn

    from agentloom.host.driver import RunDriver

__all__ = ["GRACE_S", "KEEP_ALIVE_S", "MAX_BODY_BYTES", "keys_command", "serve"]

GRACE_S = 10  # on SIGTERM, open requests (an event stream of a waiting run) get this long,
# then the worker process as long to give its runs back before it is killed
MAX_BODY_BYTES = 8 * 1024 * 1024  # --max-body-bytes: host.limits.MAX_BODY_BYTES (not imported
# here: the host loads for this command only)
KEEP_ALIVE_S = 75  # an idle connection is kept this long: longer than clients (httpx: 5 s) and
# proxies (nginx, load balancers: 60 s) keep theirs, so they close first and never send a
# request on a connection the server is closing at that moment


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
        help="The most runs its worker process drives at once.")] = 1,
    no_execute: Annotated[bool, typer.Option(
        "--no-execute", help="Only queue runs: agentloom worker processes drive them.")] = False,
    max_body_bytes: Annotated[int, typer.Option(
        "--max-body-bytes", metavar="N", min=1,
        help="The largest request body taken, in bytes; a larger one is refused (413) "
             "before it is read.")] = MAX_BODY_BYTES,
) -> None:
    """Serve the HTTP API (/v1/runs, SSE events, /openapi.json) for the agents of CONFIG.

    Every /v1 request needs an API key (agentloom keys create). A child worker process
    (agentloom worker CONFIG) drives the runs it queues, restarted if it dies, unless
    --no-execute; SIGTERM / Ctrl-C stops both gracefully (runs in flight go back to the queue
    at their next step).
    """
    # the host (starlette, the A2A SDK) and uvicorn load for this command only, not for every
    # agentloom command
    require("serve", "agentloom serve")
    import uvicorn

    from agentloom.host import driver as drivers
    from agentloom.host.app import create_app
    from agentloom.host.keys import list_keys

    setup_logging()
    logging.getLogger(drivers.__name__).setLevel(logging.INFO)  # its child's start and stop
    loaded = load_config(config)
    import_changed_skills(loaded, store)  # before its worker process binds the same versions
    runtime = runtime_from_config(loaded, store=store)
    driver: RunDriver | None = None
    if not no_execute and drivers.shareable(runtime):
        driver = drivers.WorkerProcess(config, str(runtime.store_url), concurrency=concurrency,
                                       grace_s=GRACE_S)
    app = create_app(runtime, execute=not no_execute, concurrency=concurrency, driver=driver,
                     max_body_bytes=max_body_bytes)
    how = ("runs driven by agentloom worker processes" if no_execute
           else f"a worker process drives up to {concurrency} run(s) at once" if driver
           else f"driving up to {concurrency} run(s) at once in this process (memory store)")
    settings = uvicorn.Config(app, host=host, port=port, log_level="info", lifespan="on",
                              timeout_graceful_shutdown=GRACE_S, timeout_keep_alive=KEEP_ALIVE_S)
    bound = settings.bind_socket()  # exits 3 naming the address when it is taken
    base = f"http://{_url_host(host)}:{bound.getsockname()[1]}"
    lines = [f"agentloom host on {base} — store {redact_secrets(str(runtime.store_url))}; {how}",
             f"the page:  {base}/ui/", f"the API:   {base}/v1  (OpenAPI: {base}/openapi.json)"]
    if not list_keys(runtime.store) and drivers.shareable(runtime):  # (no other process
        lines += ["no API key in this store yet; make one (it is printed once) with:",  # opens
                  f"  {keys_command(loaded, config, store)}"]  # a memory store)
    server = _announcing(settings, lines)
    server.run(sockets=[bound])
    if not server.started:  # as uvicorn.run: the app's start-up failed (logged above)
        sys.exit(3)


def _announcing(settings: uvicorn.Config, lines: list[str]) -> uvicorn.Server:
    """A server that prints ``lines`` once it accepts connections (after the app's start-up),
    so a client started on those lines never finds the port closed."""
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                err = stderr_console()
                for line in lines:
                    say(err, line)

    return Announcing(settings)


def _url_host(host: str) -> str:
    """``host`` as a URL names it; an address of every interface as this machine's own."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def keys_command(config: Config, config_path: Path, store: str | None) -> str:
    """The ``agentloom keys create`` line that makes a key in the store ``serve`` uses: the
    same ``--store`` when one was given, else ``--config`` (which finds ``$AGENTLOOM_STORE``,
    else the config's store, as ``serve`` did); a project of the config's ``projects`` when it
    names any."""
    project = next(iter(config.projects), "default")
    where = (f"--store {shlex.quote(redact_secrets(store))}" if store
             else f"--config {shlex.quote(str(config_path))}")
    return (f"agentloom keys create --actor {shlex.quote(getpass.getuser())} "
            f"--project {shlex.quote(project)} {where}")
