"""Whether a runtime traces, and with which tracer provider.

=====================================  ==================================================
``tracer_provider`` given               traced with it (the caller owns and flushes it)
``enabled`` False                       off, whatever the environment says
``enabled`` True, or ``None`` with      traced with the process's global SDK provider when
``OTEL_EXPORTER_OTLP_ENDPOINT`` set     the application set one, else with a provider of
                                        its own exporting OTLP over HTTP (the SDK reads the
                                        ``OTEL_*`` variables), shut down with the runtime
otherwise                               off
=====================================  ==================================================

Nothing of OpenTelemetry is imported unless the runtime traces.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agentloom.extras import require
from agentloom.telemetry.ports import AgentModels, RunTracer
from agentloom.telemetry.propagation import start_propagating

__all__ = ["ENDPOINT_ENV", "OTEL_EXTRA", "tracing", "wanted"]

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_EXTRA = "agentloom[otel]"


def wanted(enabled: bool | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to trace without a given provider: ``enabled`` (``telemetry.enabled``) when it
    is set, else whether ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set."""
    if enabled is not None:
        return enabled
    return bool((os.environ if environ is None else environ).get(ENDPOINT_ENV))


def tracing(*, tracer_provider: Any = None, enabled: bool | None = None, models: AgentModels,
            environ: Mapping[str, str] | None = None) -> RunTracer | None:
    """The runtime's tracer, or ``None`` when it does not trace (see the module docstring).

    Raises:
        MissingExtra: tracing is wanted without a provider and the OpenTelemetry SDK is not
            installed (an ``ImportError`` whose message names the ``agentloom[otel]`` extra).
    """
    owned = False
    if tracer_provider is None:
        if not wanted(enabled, environ):
            return None
        tracer_provider, owned = _default_provider()
    from agentloom.telemetry._spans import Tracing

    start_propagating()
    return Tracing(tracer_provider, models=models, owned=owned)


def _default_provider() -> tuple[Any, bool]:
    """The global provider when the application set an SDK one, else a new one exporting
    OTLP over HTTP (and True: the runtime shuts it down)."""
    require("otel", f"tracing (telemetry.enabled or {ENDPOINT_ENV})")
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current, False
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider, True
