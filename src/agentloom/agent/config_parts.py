"""Deprecated: the build-time parts of a configuration (``check_config``, ``model_source``,
``hook_specs``, ``hook_functions``, ``retry_policy``, ``sdk_tools``, ``agent_tools``,
``think_params``, ``max_output_tokens``, ``user_code``, …) are in ``agentloom.assembly``
(issue #35).

Importing them from here still works, with a ``DeprecationWarning``: each name is looked up in
``agentloom.assembly`` when first asked for, so this module imports nothing above ``agent`` at
import time. The layering test lists this module in ``SHIMS``.
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
