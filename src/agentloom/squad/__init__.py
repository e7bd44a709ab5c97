"""Squad: durable multi-agent workflows (issue 20, docs/workflows.md).

A workflow is a graph of agent, capability and wait nodes joined by edges, defined in the
configuration's ``workflows:`` or with the Python ``Workflow`` builder; both give one
``WorkflowSpec``::

    workflows: (YAML) ─► config.workflows ─┐
                                           ├─► WorkflowSpec ─► squad.driver
    Workflow(...).build() (Python) ────────┘

Owns: the definition (``spec``), its checks (``validate``), templates (``templates``), the
builder (``builder``), running it. Sits above ``agent``: a workflow drives agents, never the
other way round. Does not own: parsing YAML (``config``).
"""

from agentloom.squad.builder import Workflow, from_config, workflow_spec
from agentloom.squad.driver import WorkflowProgram
from agentloom.squad.spec import AgentNode, CapabilityNode, Edge, Node, WaitNode, WorkflowSpec

__all__ = ["AgentNode", "CapabilityNode", "Edge", "Node", "WaitNode", "Workflow", "WorkflowProgram",
           "WorkflowSpec", "from_config", "workflow_spec"]
