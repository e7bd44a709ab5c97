"""Offline models: adapters that need no network and yield the same ``ProviderEvent``s as a real
provider, so a run on them goes through the same gateway, hooks and persistence.

- ``TestModel`` (``test``): deterministic. Offered tools and no tool result yet since the last
  user message → it calls every tool once, arguments generated from the tool's JSON Schema
  (``example_arguments``) — except a tool whose required argument is a reference (``*_ref``,
  as ``result_read``'s), called only with a ref a result of the turn handed out. After it sees
  the results it answers with a summary of each result and its status. Without tools it
  answers with a one-line echo. Asked for a schema (``output_format``), its answer is
  ``example_arguments`` of the schema as JSON; asked for ``json_object``,
  ``{"answer": <the text>}``.
- ``ScriptModel`` (``script``): replays turns from a YAML script (format in docs/models.md). The
  turn is chosen by the number of assistant messages already in the request, so a retried or
  recovered call replays the same turn; ``expect`` checks the last message first. Running out of
  turns or a failed expectation raises ``ScriptError`` before any event is yielded.

Both implement ``stream_once(request, attempt)`` and ``discover(connection)``, and take
requests for both structured output formats (``output_formats``).

Owns: the two offline models, in private modules re-exported here: ``_common`` (streaming a
response as events, the default window), ``_test_model``, ``_examples`` (values from a JSON
Schema) and ``_script``. Does not own: the gateway, hooks or persistence a run on them goes
through, or which model a config names (``assembly``).
"""

from __future__ import annotations

from agentloom.models.offline._common import OFFLINE_OUTPUT_LIMIT, OFFLINE_WINDOW
from agentloom.models.offline._examples import example_arguments
from agentloom.models.offline._script import (
    Script,
    ScriptError,
    ScriptModel,
    ScriptTurn,
    load_script,
    parse_script,
)
from agentloom.models.offline._test_model import TestModel, result_status

__all__ = [
    "OFFLINE_OUTPUT_LIMIT",
    "OFFLINE_WINDOW",
    "Script",
    "ScriptError",
    "ScriptModel",
    "ScriptTurn",
    "TestModel",
    "example_arguments",
    "load_script",
    "parse_script",
    "result_status",
]
