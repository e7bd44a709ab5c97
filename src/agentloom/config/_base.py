"""Shared pieces of the configuration models: the strict base model, the name rule of the
sections' keys, and the checks of single values (an environment variable name, an http(s) URL).

Owns: ``_Strict`` (frozen, unknown keys refused, no inf / nan), ``NAME`` / ``NAME_RULE``, the
``_REF`` / ``_ENV`` patterns and the single-value validators the sections reuse. Does not own:
any section's model (``connections``, ``agents``, ``hooks``, ``settings``), the whole file
(``model.Config``) nor the checks that look at more than one key (``_cross``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,57}$")
"""What a name under ``connections``, ``agents``, ``mcp_servers`` and ``a2a_agents`` may be."""
NAME_RULE = ("a name must start with a letter and hold only letters, digits, '_' or '-' "
             "(at most 58 characters); rename it")
_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _env_name(value: str) -> str:
    if not _ENV.match(value):
        raise ValueError(f"must be an environment variable name such as OPENAI_API_KEY (got {value!r}); "
                         "put the key itself in that variable, never in the file")
    return value


def _url(value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"must start with http:// or https:// (got {value!r})")
    return value
