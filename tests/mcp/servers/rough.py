"""A misbehaving MCP stdio server for the robustness tests (issue #34, 5): plain JSON-RPC lines
on stdin / stdout, standard library only, so each fault lands exactly where a test wants it.

``python rough.py [FAULT …]``, each fault one argument:

- ``hang:<method>`` — never answers ``<method>`` (``initialize``, ``tools/list``,
  ``resources/list``, ``prompts/list``); it keeps reading, as a stuck server does;
- ``exit-at-call:<n>`` — exits (status 3) when its ``n``-th ``tools/call`` arrives, unanswered;
- ``garbage`` — writes a line that is not JSON on stdout before it answers each ``tools/call``.

It declares tools, resources and prompts. Its one tool, ``poke``, answers ``poked <n>`` (the
count of calls this process received). With ``ROUGH_LEDGER`` set, it appends ``start <pid>``
when it starts and ``call <n>`` for each ``tools/call`` it receives, so a test can count
processes and the calls that reached one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

FAULTS = sys.argv[1:]
HANGS = {f.removeprefix("hang:") for f in FAULTS if f.startswith("hang:")}
EXIT_AT = next((int(f.split(":", 1)[1]) for f in FAULTS if f.startswith("exit-at-call:")), 0)
GARBAGE = "garbage" in FAULTS
TOOL = {"name": "poke", "description": "Counts the calls it got.",
        "inputSchema": {"type": "object", "properties": {}}}


def ledger(line: str) -> None:
    path = os.environ.get("ROUGH_LEDGER")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict[str, Any], calls: int) -> dict[str, Any]:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "rough", "version": "0.1"}}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "resources/list":
        return {"resources": []}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "prompts/list":
        return {"prompts": []}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": f"poked {calls}"}], "isError": False}
    return {}


def main() -> None:
    ledger(f"start {os.getpid()}")
    calls = 0
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None or method is None:  # a notification or an answer: nothing to say
            continue
        if method == "tools/call":
            calls += 1
            ledger(f"call {calls}")
            if calls == EXIT_AT:
                os._exit(3)
            if GARBAGE:
                sys.stdout.write("this line is not JSON-RPC\n")
        if method in HANGS:
            continue
        write({"jsonrpc": "2.0", "id": ident, "result": answer(method, message.get("params") or {},
                                                                calls)})


if __name__ == "__main__":
    main()
