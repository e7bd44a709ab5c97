"""A workflow node's inputs: the artifacts granted to it, read only, beside its work folder
(issue 37, 000 §7.1.9).

A node's granted artifacts are written (by the workflow driver, ``squad``) into the *inputs
folder* of the node's workspace scope, one sub-folder per node they come from::

    <root>/<owners>/<file root>/invocations/<partition>/runs/<run>/work/     the node's folder
    <root>/<owners>/<file root>/invocations/<partition>/runs/<run>/inputs/<from node>/<path>

Commands see ``<from node>`` read only at ``/inputs/<from node>`` where the sandbox has a mount
namespace, and at ``$AGENTLOOM_INPUTS/<from node>`` on every backend; the file tools read it
as ``/inputs/<from node>/<path>``. A node without the grant finds nothing there
(``NOT_FOUND``).

Owns: where the inputs folder is, its sandbox path and variable. Does not own: what is
granted (``squad``), mounting it (``tools.builtin.exec`` → the sandbox), reading it through
the file tools (``tools.builtin.fs``).
"""

from __future__ import annotations

from pathlib import Path

from agentloom.workspace.scope import WorkspaceScope

__all__ = ["INPUTS_ENV", "INPUTS_ROOT", "inputs_folder"]

INPUTS_ROOT = "/inputs"
"""Where a namespace view mounts a node's inputs, and the prefix the file tools read them at."""
INPUTS_ENV = "AGENTLOOM_INPUTS"
"""The variable naming the folder of a node's inputs, on every sandbox backend."""


def inputs_folder(root: Path, scope: WorkspaceScope) -> Path | None:
    """The inputs folder of ``scope`` under the shared workspace ``root`` (beside its work
    folder); ``None`` for a bound folder of the user's, which never has inputs."""
    if scope.bound_path is not None:
        return None
    return Path(root) / scope.relative_path.parent / "inputs"
