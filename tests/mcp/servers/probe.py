"""A tiny MCP stdio server (``MCPServer``) that probes its sandbox, for
``tests/mcp/test_sandboxed_*``: read a file, read a variable, connect to a TCP port, leave a
daemon behind (a double fork in a new session, named by its ``argv[0]``)."""

from __future__ import annotations

import os
import socket

from mcp.server import MCPServer

mcp = MCPServer("probe", version="0.1")


@mcp.tool()
def read_file(path: str) -> str:
    """The file's text, or ``error: <why>``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError as exc:
        return f"error: {exc.strerror or exc}"


@mcp.tool()
def env(name: str) -> str:
    """The variable's value, or ``<unset>``."""
    return os.environ.get(name, "<unset>")


@mcp.tool()
def environ() -> str:
    """Every variable name, sorted, one per line."""
    return "\n".join(sorted(os.environ))


@mcp.tool()
def connect(port: int) -> str:
    """``connected`` to 127.0.0.1:``port``, or ``error: <why>``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return "connected"
    except OSError as exc:
        return f"error: {exc.strerror or exc}"


@mcp.tool()
def daemon(marker: str) -> str:
    """Leave ``sleep`` running as ``marker`` in a new session, detached from this server."""
    ready_r, ready_w = os.pipe()  # close-on-exec: end of file once the daemon runs sleep
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.execv("/bin/sleep", [marker, "3600"])
        os._exit(0)
    os.wait()
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)
    return "started"


if __name__ == "__main__":
    mcp.run()
