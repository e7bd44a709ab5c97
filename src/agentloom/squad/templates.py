"""Workflow templates (issue 20): ``{{ input.task }}`` and ``{{ nodes.NAME.output }}``.

``render`` fills one text, ``render_args`` every string inside a capability node's ``args``,
``references`` lists the nodes a text names; anything else inside ``{{ }}`` is a
``TemplateError`` (a ``ConfigError``) naming it. Pure, no I/O.

Owns: the public face of the template functions. Does not own: their implementation, which
lives in ``config._templates`` so the load-time checks (config is core and may not import
``squad``) and the driver read templates one way.
"""

from __future__ import annotations

from agentloom.config.workflows import TemplateError, references, render, render_args

__all__ = ["TemplateError", "references", "render", "render_args"]
