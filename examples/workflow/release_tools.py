"""The two capability nodes of the example workflow, as SDK tools (``module:attr``)."""

from __future__ import annotations

from agentloom import StrictInput, Tool, ToolContext
from agentloom.results import ToolResult


class BuildInput(StrictInput):
    plan: str


class Build(Tool[BuildInput]):
    """Writes dist/release-2.0.txt. The first time the workflow's folder is not configured
    yet: it configures it and fails (a known failure: the error edge routes it)."""

    name = "build"
    description = "Build the release artifact the plan names."

    async def execute(self, args: BuildInput, ctx: ToolContext) -> ToolResult | str:
        listed = await ctx.files.glob(".configured")
        if not listed:
            await ctx.files.write(".configured", "yes\n")
            return ToolResult.failure("the build folder was not configured; configured it now, "
                                      "plan again")
        await ctx.files.write("dist/release-2.0.txt", f"{args.plan}\n")
        return "dist/release-2.0.txt"


class PublishInput(StrictInput):
    artifact: str


class Publish(Tool[PublishInput]):
    name = "publish"
    description = "Publish a built artifact."

    async def execute(self, args: PublishInput, ctx: ToolContext) -> str:
        content = await ctx.files.read(args.artifact)
        return f"published {args.artifact} ({len(content.content.splitlines())} line)"


build = Build()
publish = Publish()
