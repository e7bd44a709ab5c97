"""A kernel with model connections on a real store, for gateway tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentloom.hooks.spec import HandlerRef, HookMatch, HookSpec
from agentloom.kernel import Kernel, RunLease
from agentloom.models.ports import Connection, ModelAdapter
from agentloom.models.types import Message, ModelRequest, ModelResponse, ToolDef
from agentloom.pipeline.context import InvocationContext
from agentloom.pipeline.retry import RetryPolicy

API_KEY = "sk-test-0123456789abcdef"
WEATHER = ToolDef(
    name="get_weather", description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def request(text: str = "What is the weather in Paris?", *, tools: tuple[ToolDef, ...] = (WEATHER,),
            **kwargs: Any) -> ModelRequest:
    return ModelRequest(messages=(Message(role="user", content=text),), tools=tools, **kwargs)


def model_hook(hook_id: str, fn: Callable[..., Any], *, timing: str = "before",
               purpose: str | None = None) -> tuple[HookSpec, str, Callable[..., Any]]:
    """A python hook on ``event: model``."""
    ref = f"tests:{hook_id}"
    spec = HookSpec(hook_id=hook_id, timing=timing, event="model",  # type: ignore[arg-type]
                    match=HookMatch(purpose=purpose), handler=HandlerRef(ref=ref), timeout_s=5.0)
    return spec, ref, fn


@dataclass
class Gateway:
    kernel: Kernel
    lease: RunLease
    ctx: InvocationContext
    observed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def generate(self, req: ModelRequest | None = None, **kwargs: Any) -> ModelResponse:
        return await self.kernel.models.generate(req or request(), self.ctx, **kwargs)

    def operations(self) -> list[dict[str, Any]]:
        return self.kernel.operations(self.lease.run_id)

    def attempts(self, operation_id: str) -> list[dict[str, Any]]:
        return self.kernel.store.query("attempts", {"operation_id": operation_id},
                                       order_by=("attempt_no",))

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.observed]


async def gateway(
    store_url: str,
    tmp_path: Path,
    models: dict[str, ModelAdapter | Connection],
    *,
    hooks: Sequence[tuple[HookSpec, str, Callable[..., Any]]] = (),
    retry: RetryPolicy | None = None,
    first_output_timeout_s: float = 5.0,
    deadline_s: float = 30.0,
) -> Gateway:
    kernel = Kernel(store_url, hooks=[h for h, _, _ in hooks],
                    hook_functions={ref: fn for _, ref, fn in hooks},
                    workspace_root=tmp_path / "workspaces")
    for name, source in models.items():
        kernel.add_model(name, source, first_output_timeout_s=first_output_timeout_s)
    kernel.publish("rel", [], roles={"main": []})
    lease = await kernel.start_run(workspace=False)
    ctx = kernel.invocation_context(lease, release_id="rel", retry=retry, deadline_s=deadline_s)
    made = Gateway(kernel, lease, ctx)
    kernel.bus.subscribe(lambda kind, payload: made.observed.append((kind, payload)))
    return made
