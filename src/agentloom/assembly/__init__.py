"""Assembly: everything that turns a ``Config`` into a ``Runtime`` (issue #35).

::

    load_config(path) ─► Config ─► runtime_from_config(config) ─► Runtime
                                     │ checks       presets, script files   (checks)
                                     │ catalogs     MCP tools, A2A cards,   (mcp, a2a, commands)
                                     │              command tools
                                     │ agents       model, tools, skills    (agents, models, tools)
                                     │ workflows    capability nodes        (workflows)
                                     │ hooks        specs, functions        (hooks, skill_hooks)
                                     │ environment  store URL, sandbox      (environment)
                                     ▼ routes       projects' connections   (routes)

It sits above ``squad`` and ``agent`` (and ``views``): it builds agents and workflows alike, so
no factory is passed down across the layers. Every entry point (``agentloom run``, ``serve``,
``worker``) calls ``runtime_from_config``; ``agentloom.agent.configured``,
``agentloom.agent.config_parts`` and ``agentloom.squad.configured`` are deprecated names for
what it exports (``tests/test_layering.py``: ``SHIMS``).

Owns: build-time resolution of a configuration. Does not own: the configuration's shape and the
checks it makes alone (``agentloom.config``), running anything (``agent``, ``squad``).
"""

from agentloom.assembly.agents import BuildCatalogs, agent_specs, bind_skills, build_catalogs
from agentloom.assembly.checks import check_config
from agentloom.assembly.environment import STORE_ENV, environment_policy, store_url_for
from agentloom.assembly.hooks import hook_functions, hook_specs
from agentloom.assembly.imports import user_code
from agentloom.assembly.models import (
    max_output_tokens,
    model_descriptor,
    model_source,
    retry_policy,
    think_params,
)
from agentloom.assembly.runtime import runtime_from_config
from agentloom.assembly.tools import agent_tools, entry_tools, sdk_tools, workflow_tools
from agentloom.assembly.workflows import workflow_programs

__all__ = [
    "STORE_ENV",
    "BuildCatalogs",
    "agent_specs",
    "agent_tools",
    "bind_skills",
    "build_catalogs",
    "check_config",
    "entry_tools",
    "environment_policy",
    "hook_functions",
    "hook_specs",
    "max_output_tokens",
    "model_descriptor",
    "model_source",
    "retry_policy",
    "runtime_from_config",
    "sdk_tools",
    "store_url_for",
    "think_params",
    "user_code",
    "workflow_programs",
    "workflow_tools",
]
