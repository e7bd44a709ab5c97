"""A stdio "server" that answers ``initialize`` with protocol 2024-11-05 only (hand-written
JSON-RPC on purpose: the SDK's servers negotiate the client's version)."""

from __future__ import annotations

import json
import sys

for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {
            "protocolVersion": "2024-11-05", "capabilities": {},
            "serverInfo": {"name": "old", "version": "0.1"}}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
