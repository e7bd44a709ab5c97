"""OpenTelemetry traces of runs: one trace per run a process drives (issue 18).

::

    agentloom.run {agent}                          RunDriver.drive (live)
    └─ invoke_agent {agent}                        each invocation: the root, every Executor
       ├─ chat {model}                             a model call   ┐ operation spans, built
       ├─ execute_tool {tool}                      a tool call    │ from the pipeline's
       └─ execute_tool delegate_{executor}         a delegation   ┘ records (``observe``)
          ├─ agentloom.hook {hook_id}              one hook run (live: an HTTP hook gets
          │                                        its ``traceparent``)
          └─ agentloom.attempt {n}                 one Attempt (live: an MCP server over
             └─ invoke_agent {executor}            HTTP gets its ``traceparent``; the
                                                   Executor's invocation nests here)

Off by default: on with ``Runtime(tracer_provider=…)``, ``telemetry: {enabled: true}`` in the
config, or ``OTEL_EXPORTER_OTLP_ENDPOINT`` in the environment (``switch.tracing``). Off, the
pipeline sees ``tracer is None`` and nothing else: no OpenTelemetry SDK is imported and
``trace_headers`` answers ``{}`` at once. Attribute names follow the OpenTelemetry GenAI
semantic conventions (``gen_ai.*``) where they have one, AgentLoom's own are ``agentloom.*``
(docs/telemetry.md lists them).

Owns: deciding whether a runtime traces, the spans and their attributes, the W3C trace
context an outgoing request carries. Does not own: the pipeline's phases or records (it reads
them through ``OperationView``), the exporter's configuration beyond the OTLP default (the
``OTEL_*`` environment variables the SDK reads), the HTTP clients that send the headers.
"""

from __future__ import annotations

from agentloom.telemetry.ports import CallTracer, OperationView, RunTracer
from agentloom.telemetry.propagation import propagating, trace_headers, trace_headers_of_body
from agentloom.telemetry.switch import OTEL_EXTRA, tracing, wanted

__all__ = ["OTEL_EXTRA", "CallTracer", "OperationView", "RunTracer", "propagating",
           "trace_headers", "trace_headers_of_body", "tracing", "wanted"]
