"""A workflow node's inputs: the artifacts granted to it, read only, beside its work folder
(issue 37, 000 §7.1.9).

A node's granted artifacts are written (by the workflow driver, ``squad``) into the *inputs
folder* of the node's workspace scope, one sub-folder per node they come from::

    <root>/<owners>/<file root>/invocations/<partition>/runs/<run>/work/     the node's folder
    <root>/<owners>/<file root>/invocations/<partition>/runs/<run>/inputs/<from node>/<path>

How the node sees it::

    exec, a namespace view      the inputs folder bound read only at /inputs   (bubblewrap;
    (bubblewrap, Landlock as     $AGENTLOOM_INPUTS=/inputs                      Landlock as root
    root with CAP_SYS_ADMIN)                                                    with a mount ns)
    exec, the host's paths      $AGENTLOOM_INPUTS=<the inputs folder>, read/execute only
    (Landlock otherwise, none)  (an argv item /inputs/... is given its host path)
    the file tools              /inputs/<from node>/<path>: fs.read, fs.list, fs.glob (pattern
                                or root), fs.grep (paths) read it; every write there fails
                                READ_ONLY; results name /inputs/..., never a host path

A scope without an inputs folder (a node granted nothing, any run outside a workflow) has no
``/inputs`` mount and no ``$AGENTLOOM_INPUTS``; the file tools answer ``NOT_FOUND`` for every
``/inputs`` path, as they do for a path that does not exist (every other absolute path is
still ``PATH_ESCAPE``). The folder is read beneath its own descriptor (``paths.Beneath``), as
the work folder is: no symbolic link leads out of it. It goes with the run's other
non-persistent folders (the whole ``runs/<run>/`` folder), a persistent scope's at the run's
end too (``cleanup``: a grant is the run's), and with its owner.

Owns: where the inputs folder is, its sandbox path and variable, and which tool paths name it
(``inputs_relative``). Does not own: what is granted (``squad``), mounting it
(``tools.builtin.exec`` → the sandbox), reading it (``service.WorkspaceService``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentloom.workspace.scope import WorkspaceScope

__all__ = ["INPUTS_ENV", "INPUTS_ROOT", "existing_inputs", "inputs_folder", "inputs_relative"]

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


def existing_inputs(folder: Path | None) -> Path | None:
    """``folder`` when it is a real folder (not a symbolic link), else ``None``."""
    if folder is None:
        return None
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(st.st_mode) else None


def inputs_relative(raw: object) -> str | None:
    """The path below the inputs folder that the tool path ``raw`` names (``/inputs`` →
    ``.``, ``/inputs/coder/a.py`` → ``coder/a.py``); ``None`` for any other path."""
    if not isinstance(raw, str):
        return None
    if raw != INPUTS_ROOT and not raw.startswith(INPUTS_ROOT + "/"):
        return None
    return raw[len(INPUTS_ROOT):].lstrip("/") or "."
