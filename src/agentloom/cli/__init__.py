"""The ``agentloom`` command line: run agents from a YAML config, inspect and control runs.

Owns: argument parsing, the live view, JSON output, exit codes, ``init`` scaffolding, the
crash-safe JSONL append of ``runs events --append-to``. Does not own: building the runtime
(``agentloom.assembly``), reading configs (``config``), anything a run does.

Entry points: the ``agentloom`` console script and ``python -m agentloom`` both call
``agentloom.cli.main:main``.
"""

from agentloom.cli.main import app, main

__all__ = ["app", "main"]
