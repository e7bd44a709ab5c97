"""Deprecated: ``agentloom.assembly`` builds a ``Runtime`` from a configuration (issue #35).

``from agentloom.agent.configured import runtime_from_config`` (and ``environment_policy``,
``store_url_for``, ``STORE_ENV``, ``agent_specs``, …) still works, with a
``DeprecationWarning``: each name is looked up in ``agentloom.assembly`` when first asked for,
so this module imports nothing above ``agent`` at import time. ``runtime_from_config`` now
builds the configuration's workflows too (it takes no ``programs=``). The layering test lists
this module in ``SHIMS``.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # module machinery (__path__, __wrapped__, …): not ours to lend
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    import agentloom.assembly

    try:
        value = getattr(agentloom.assembly, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (it moved to "
                             "agentloom.assembly, which has none either)") from None
    warnings.warn(f"{__name__}.{name} is deprecated: import it from agentloom.assembly",
                  DeprecationWarning, stacklevel=2)
    return value
