"""A standard-library stand-in for a stdio server: one JSON request a line on stdin, one JSON
answer a line on stdout. For the Landlock tests, whose sandbox uid must reach the interpreter
itself (the system ``python3``, which has no ``mcp``)."""

from __future__ import annotations

import json
import os
import socket
import sys


def answer(request: dict[str, object]) -> object:
    op = request["op"]
    if op == "read":
        with open(str(request["path"]), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    if op == "environ":
        return sorted(os.environ)
    if op == "connect":
        socket.create_connection(("127.0.0.1", int(str(request["port"]))), timeout=2).close()
        return "connected"
    if op == "daemon":  # a double fork in a new session, named by its argv[0]
        ready_r, ready_w = os.pipe()  # close-on-exec: end of file once the daemon runs sleep
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execv("/bin/sleep", [str(request["marker"]), "3600"])
            os._exit(0)
        os.wait()
        os.close(ready_w)
        os.read(ready_r, 1)
        os.close(ready_r)
        return "started"
    return f"error: unknown op {op!r}"


for line in sys.stdin:
    try:
        result = answer(json.loads(line))
    except OSError as exc:
        result = f"error: {exc.strerror or exc}"
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
