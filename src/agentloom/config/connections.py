"""The ``connections:`` section and an agent's ``model:`` — a provider endpoint (a shipped
preset, optionally another URL or key variable) and the model an agent uses: a connection's
model, ``{builtin: test}`` or ``{builtin: script, path}``.

Owns: ``ConnectionConfig``, the model choices and their tagged union ``ModelChoice``, and
``MODEL_TAGS`` (every tag a tagged union of the file uses, so error paths leave them out; the
hook and handler tags are added by ``hooks``). Does not own: checking a model against its
connection or the provider presets (``_cross``; build time, ``agentloom.assembly``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Discriminator, Field, StrictInt, Tag

from agentloom.config._base import _env_name, _Strict, _url
from agentloom.config._problems import shown
from agentloom.config.mcp import MCP_TAGS
from agentloom.config.workflows import WORKFLOW_TAGS

__all__ = [
    "MODEL_TAGS",
    "THINK_SETTINGS",
    "ConnectionConfig",
    "ConnectionModelChoice",
    "ModelChoice",
    "ScriptModelChoice",
    "TestModelChoice",
    "ThinkSetting",
]


class ConnectionConfig(_Strict):
    """A model provider endpoint: a shipped preset, optionally another URL or key variable."""

    preset: str = Field(min_length=1)
    protocol: Literal["chat", "responses"] | None = None
    base_url: Annotated[str, AfterValidator(_url)] | None = None
    api_key_env: Annotated[str, AfterValidator(_env_name)] | None = None


ThinkSetting = Literal["on", "off", "low", "medium", "high"]
"""``model.think``: reasoning ``on`` / ``off`` (the preset's ``think_toggle``) or an effort
``low`` / ``medium`` / ``high`` (its ``think_effort``)."""
THINK_SETTINGS: tuple[str, ...] = ("on", "off", "low", "medium", "high")


def _think_setting(value: Any) -> Any:
    # YAML 1.1 reads a bare on / off (and yes / no) as a boolean
    if isinstance(value, bool):
        return "on" if value else "off"
    if not isinstance(value, str) or value not in THINK_SETTINGS:
        raise ValueError(f"must be one of {', '.join(THINK_SETTINGS)} (got {shown(value)}): on / "
                         "off switch reasoning, low / medium / high set its effort")
    return value


class ConnectionModelChoice(_Strict):
    """Model ``name`` served through connection ``connection``.

    ``think`` (default: not sent, the provider's default) and ``max_output_tokens`` (default:
    not sent) go into every request of the agent, mapped by the connection's preset; a setting
    the preset cannot send for this model is refused when the runtime is built."""

    connection: str
    name: str = Field(min_length=1)
    window: StrictInt | None = Field(default=None, ge=1)
    output_limit: StrictInt | None = Field(default=None, ge=1)
    variant: str | None = Field(default=None, min_length=1)
    think: Annotated[ThinkSetting, BeforeValidator(_think_setting)] | None = None
    max_output_tokens: StrictInt | None = Field(default=None, ge=1)


class TestModelChoice(_Strict):
    """The deterministic offline model ``test``."""

    __test__: ClassVar[bool] = False
    builtin: Literal["test"]


class ScriptModelChoice(_Strict):
    """The offline ``script`` model replaying the turns in ``path``."""

    builtin: Literal["script"]
    path: str = Field(min_length=1)


_CONNECTION_TAG, _TEST_TAG, _SCRIPT_TAG = "<connection>", "<builtin test>", "<builtin script>"
MODEL_TAGS: dict[str, type[BaseModel]] = {
    _CONNECTION_TAG: ConnectionModelChoice,
    _TEST_TAG: TestModelChoice,
    _SCRIPT_TAG: ScriptModelChoice,
    **MCP_TAGS,  # so error paths leave the mcp_servers transport tag out too
    **WORKFLOW_TAGS,  # and a workflow node's kind
}
BUILTIN_MODELS = {"test": _TEST_TAG, "script": _SCRIPT_TAG}
MODEL_FORMS = ("{connection: <connection name>, name: <model id>}, {builtin: test} or "
                "{builtin: script, path: <turns file>}")


def _model_tag(value: Any) -> str | None:
    if isinstance(value, Mapping):
        builtin = value.get("builtin")
        return BUILTIN_MODELS.get(builtin) if isinstance(builtin, str) else _CONNECTION_TAG
    for tag, cls in MODEL_TAGS.items():
        if isinstance(value, cls):
            return tag
    return None


ModelChoice = Annotated[
    Annotated[ConnectionModelChoice, Tag(_CONNECTION_TAG)]
    | Annotated[TestModelChoice, Tag(_TEST_TAG)]
    | Annotated[ScriptModelChoice, Tag(_SCRIPT_TAG)],
    Discriminator(_model_tag),
]
"""A connection model, ``{builtin: test}`` or ``{builtin: script, path}``."""
