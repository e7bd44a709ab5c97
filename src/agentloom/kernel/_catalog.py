"""Publishing a ``Kernel``'s capabilities: SDK tools, built-ins, skills, model connections, MCP
tools and remote A2A agents, each routed to its owner on the bus, as one release.

Owns: ``tool_capability``; ``CatalogPart`` (``publish``, ``add_model``, the MCP sessions of the
kernel's runs). Does not own: the catalog itself (``agentloom.catalog``), a capability's
behaviour (its handler), nor wiring the managers (``_root``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentloom.catalog import CapabilitySpec, legal_exposed_name
from agentloom.context import result_read_spec
from agentloom.errors import RegistrationError
from agentloom.hooks.fields import fields_document
from agentloom.kernel._parts import KernelParts
from agentloom.models.gateway import is_model_capability
from agentloom.models.manager import ModelManager
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.pipeline.ports import CapabilityHandler
from agentloom.skills.runtime import SKILL_TOOLS
from agentloom.skills.tools import skill_capability
from agentloom.tools.builtin.exec import ExecHandler
from agentloom.tools.manager import ToolManager
from agentloom.tools.sdk import Tool, ToolHandler
from agentloom.workspace.resolver import WorkspaceResolver

if TYPE_CHECKING:
    from agentloom.a2a import A2aAgent
    from agentloom.mcp import McpSessions, McpTool


def tool_capability(
    tool: Tool[Any], release_id: str, files: WorkspaceResolver | None = None
) -> tuple[CapabilitySpec, ToolHandler]:
    """The catalog entry and handler for an SDK tool (``name`` becomes the capability key)."""
    description = tool.describe()
    spec = CapabilitySpec(
        resource_version_id=release_id,
        capability_key=description.name,
        kind="hosted",
        exposed_name=legal_exposed_name(description.name),
        description=description.description,
        input_schema=description.input_schema,
        handler_ref=f"sdk:{description.name}",
    )
    return spec, ToolHandler(tool, files=files)


class CatalogPart(KernelParts):
    """``Kernel``'s catalog: what it publishes, the model connections, the runs' MCP sessions."""

    def publish(
        self,
        release_id: str,
        tools: Sequence[tuple[CapabilitySpec, CapabilityHandler] | Tool[Any] | str | CapabilitySpec
                        | McpTool | A2aAgent],
        *,
        roles: Mapping[str, Sequence[str]],
    ) -> str:
        """Register handlers and publish their specs (plus ``result.read`` and every model
        connection) as one release.

        ``tools`` holds SDK ``Tool`` instances, ``(CapabilitySpec, handler)`` pairs, or the
        names of built-ins (``"fs.read"``, ``"fs.write"``, …, ``"exec"``). Model connections
        added with ``add_model`` are published in every role's catalog without being listed;
        their specs (or ``(spec, handler)`` pairs with a ``model:`` handler) are accepted here
        too. The ``ModelManager`` owns their handlers, so no tool request can reach them.
        """
        pairs = [self._capability(t, release_id) for t in tools]
        specs = [spec for spec, _ in pairs]
        for spec, handler in pairs:
            owner = self._owner(spec)
            if owner.handler_for(spec) is None:
                owner.register(spec.handler_ref, handler)
        listed = {spec.capability_key for spec in specs}
        specs.extend(s for s in self.model_manager.specs() if s.capability_key not in listed)
        models = [spec.capability_key for spec in specs if is_model_capability(spec)]
        specs.append(result_read_spec(release_id))
        role_map = {role: [*keys, *models, "result.read"] for role, keys in roles.items()}
        return self.registry.publish(release_id, specs, roles=role_map,
                                     hook_fields=fields_document())

    def _owner(self, spec: CapabilitySpec) -> ModelManager | ToolManager:
        if is_model_capability(spec):
            return self.model_manager
        return self.delegations if spec.handler_ref.startswith("delegate:") else self.tools

    def _capability(
        self, tool: tuple[CapabilitySpec, CapabilityHandler] | Tool[Any] | str | CapabilitySpec
        | McpTool | A2aAgent,
        release_id: str,
    ) -> tuple[CapabilitySpec, CapabilityHandler]:
        if isinstance(tool, tuple):
            return tool
        if isinstance(tool, str):
            if tool in SKILL_TOOLS:
                return skill_capability(tool, release_id, self.skills)
            spec, builtin = self.environment.builtin(tool, release_id)
            if isinstance(builtin, ExecHandler):  # the role's skills at /skills/<name>, read-only
                builtin.mounts = self.skills.mounts_for
            return spec, builtin
        if isinstance(tool, Tool):
            return tool_capability(tool, release_id, self.environment.resolver)
        if isinstance(tool, CapabilitySpec):
            handler = self.model_manager.handler_for(tool)
            if handler is None:
                raise RegistrationError(
                    f"{tool.capability_key!r} has no registered handler; pass a (spec, handler) "
                    "pair, or add a model connection with Kernel.add_model first")
            return tool, handler
        from agentloom.a2a.catalog import A2aAgent  # imports no A2A SDK module

        if isinstance(tool, A2aAgent):  # a remote agent's a2a.<name>.send (issue 19)
            return tool.spec(release_id), tool.handler()
        # what is left is an MCP server's tool (the ``mcp`` SDK is imported only for one)
        return tool.spec(release_id), tool.handler(self.mcp_sessions)

    async def close_mcp_sessions(self) -> None:
        """Close every MCP session still open (those of runs that never reached ``end_run`` or
        ``release_run``); nothing to do when no MCP server was ever used."""
        if self._mcp is not None:
            await self._mcp.aclose()

    @property
    def mcp_sessions(self) -> McpSessions:
        """The MCP sessions of this kernel's runs (one per run and server), made on first use:
        a kernel without MCP tools never imports the ``mcp`` SDK."""
        if self._mcp is None:
            from agentloom.mcp import McpSessions
            from agentloom.mcp.oauth import McpCredentials

            scopes = self.environment.scopes
            self._mcp = McpSessions(
                notify=self.bus.notify, backend=self.environment.sandbox_backend,
                policy=self.environment.policy,
                workspace_of=lambda sid: scopes.ensure_folder(scopes.get(sid)),
                space_of=lambda sid: scopes.get(sid).owner_ref.space_id,
                credentials=McpCredentials(self.store))  # OAuth grants: the store's secret table
        return self._mcp

    # -- models --------------------------------------------------------------------------
    def add_model(
        self,
        name: str,
        model: ModelAdapter | Connection,
        *,
        first_output_timeout_s: float = 60.0,
        stream_idle_timeout_s: float | None = None,
    ) -> CapabilitySpec:
        """Add model connection ``name`` — a ``Connection`` (see ``models.connect``) or an
        adapter such as the offline ``TestModel`` — and return its catalog spec
        (``model.<name>``). Releases published afterwards include it; call it with
        ``kernel.models.generate(request, ctx, model=name)``."""
        return self.model_manager.add(
            name, model, first_output_timeout_s=first_output_timeout_s,
            stream_idle_timeout_s=stream_idle_timeout_s)
