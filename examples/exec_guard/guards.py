"""An ``exec`` guard that holds: only programs of an allow-list run, started directly.

docs/hooks.md configures it as ``{ref: "guards:check_exec"}`` with ``on_failure: deny``. A
list of *refused* programs does not hold: ``sh -c 'rm …'``, ``bash -c``, ``env rm``,
``command rm``, ``xargs rm``, ``nice rm`` or ``busybox rm`` run ``rm`` under another name.
So this guard allows, and refuses everything else:

* ``argv`` only: a ``shell_script`` is never checked, only refused;
* ``argv[0]`` a program of ``ALLOWED`` by its bare name (``/bin/rm`` is refused), or by its
  path in a system folder (``/usr/bin/ls``): never ``./ls`` or ``/work/ls``, which could be
  a script the model wrote;
* no ``env_patch`` of a variable outside ``ENV_ALLOWED``: a variable can change what an
  allowed program does (the sandbox already drops ``PATH``, ``LD_*`` and ``BASH_ENV``).

Shells, interpreters (``python3``, ``node``, ``perl``) and launchers (``env``, ``xargs``,
``nice``, ``timeout``, ``sudo``) get a reason of their own, but the allow-list is what refuses
them. Put only programs in ``ALLOWED`` that cannot start another one: not ``find``
(``-exec``), ``sort`` (``--compress-program``), ``tar`` (``--to-command``), ``git``, ``make``,
``awk`` or ``sed`` (GNU ``sed`` has ``e``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ALLOWED = frozenset({"cat", "cut", "diff", "echo", "grep", "head", "ls", "pwd", "tail", "true",
                     "wc"})
"""Programs that may run: edit for your project, keeping to ones that cannot start another."""

SYSTEM_FOLDERS = ("/bin/", "/usr/bin/")
"""An ``argv[0]`` given as a path is one of ``ALLOWED`` only in one of these folders."""

ENV_ALLOWED = frozenset({"LANG", "LC_ALL", "NO_COLOR", "TZ"})
"""Variables an ``env_patch`` may set."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "busybox"})
LAUNCHERS = frozenset({"env", "command", "exec", "xargs", "nice", "nohup", "timeout", "stdbuf",
                       "time", "setsid", "sudo", "doas", "su", "chroot", "ionice", "taskset",
                       "flock", "watch", "strace", "unshare", "nsenter", "script"})
INTERPRETERS = frozenset({"python", "python3", "node", "perl", "ruby", "php", "lua", "awk",
                          "gawk", "sed"})


def check_exec(event: Mapping[str, Any]) -> dict[str, str]:
    """Before ``exec``: allow an ``argv`` whose program is on the allow-list; deny the rest."""
    payload = event["payload"]
    if "shell_script" in payload:
        return deny("shell scripts cannot be checked; give argv (a program and its arguments)")
    argv = payload.get("argv") or ()
    if not argv:
        return deny("no program given")
    program = str(argv[0])
    name = program.rsplit("/", 1)[-1]
    if name in SHELLS:
        return deny(f"{name} would run a script the guard cannot check; run the program itself")
    if name in LAUNCHERS:
        return deny(f"{name} starts another program; run the program itself, without {name}")
    if name in INTERPRETERS:
        return deny(f"{name} would run code the guard cannot check")
    if name not in ALLOWED:
        return deny(f"{name} is not allowed here (allowed: {', '.join(sorted(ALLOWED))})")
    if "/" in program and not any(program == f"{d}{name}" for d in SYSTEM_FOLDERS):
        return deny(f"{program} is not the system's {name}; give it as {name}")
    variables = sorted(set(payload.get("env_patch") or {}) - ENV_ALLOWED)
    if variables:
        return deny(f"env_patch may not set {', '.join(variables)}")
    return {"decision": "allow"}


def deny(reason: str) -> dict[str, str]:
    return {"decision": "deny", "reason": reason}
