"""Where a configuration's runtime keeps its state and how it confines commands: the store URL
(``store=``, else ``$AGENTLOOM_STORE``, else SQLite beside the config file) and the sandbox
policy of ``sandbox:``.

Owns: those two choices from a ``Config``. Does not own: opening the store (``agentloom.store``)
or enforcing the policy (``agentloom.sandbox``).
"""

from __future__ import annotations

import os

from agentloom.config import Config
from agentloom.sandbox.ports import EnvironmentPolicy

__all__ = ["STORE_ENV", "environment_policy", "store_url_for"]

STORE_ENV = "AGENTLOOM_STORE"
"""The environment variable naming the store URL when ``store`` is not given."""


def store_url_for(config: Config, store: str | None = None) -> str:
    """The store URL: ``store``, else ``$AGENTLOOM_STORE``, else ``config.default_store_url()``
    (SQLite in ``.agentloom/`` beside the config file)."""
    return store or os.environ.get(STORE_ENV) or config.default_store_url()


def environment_policy(config: Config) -> EnvironmentPolicy:
    """The sandbox policy of ``sandbox:`` (env allow-list, egress, shell, timeout, rlimits);
    what the key leaves out keeps ``EnvironmentPolicy``'s default."""
    sandbox = config.sandbox
    return EnvironmentPolicy(
        env=sandbox.env, egress=sandbox.egress, allow_shell=sandbox.allow_shell,
        default_timeout_s=sandbox.timeout_s, max_processes=sandbox.max_processes,
        max_file_bytes=sandbox.max_file_bytes, max_cpu_s=sandbox.max_cpu_s,
        max_work_bytes=sandbox.max_work_bytes)
