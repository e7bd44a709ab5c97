"""Deprecated: the A2A server is the package ``agentloom.host.a2a`` (issue #35); its request
handler is ``agentloom.host.a2a.handler``.

``from agentloom.host.a2a_handler import RunRequestHandler`` (the path docs/a2a-serving.md
named) still works, with a ``DeprecationWarning``: each name is looked up in
``agentloom.host.a2a.handler`` when first asked for.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # module machinery (__path__, __wrapped__, …): not ours to lend
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    from agentloom.host.a2a import handler

    try:
        value = getattr(handler, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (it moved to "
                             f"{handler.__name__}, which has none either)") from None
    warnings.warn(f"{__name__}.{name} is deprecated: import it from {handler.__name__}",
                  DeprecationWarning, stacklevel=2)
    return value
