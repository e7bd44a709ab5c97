"""Remote A2A 1.0 agents as capabilities: the client half of issue 19, on the official
``a2a-sdk`` (1.x implements A2A spec 1.0).

::

    config a2a_agents ─► card.fetch_agent (build time: GET card_url, parse with the SDK,
                              │             keep its JSONRPC / HTTP+JSON 1.0 interfaces;
                              │             a 0.3-only card is refused)
                              ▼
                      catalog.A2aAgent ─► CapabilitySpec "a2a.<name>.send",
                              │           exposed "a2a__<name>__send", {message, context_id?,
                              ▼           task_id?}
    pipeline Attempt ─► handler.A2aSendHandler ─► clients (SDK ClientFactory, one per loop)
                              │  SendMessage ─► task id committed (checkpoint) ─► followed
                              │  (stream / GetTask polls) ─► states.result_of_task
                              └ resume_once (crash after the commit): GetTask polls

Owns: fetching and checking agent cards, the catalog entry of a remote agent, calling it as
a resumable pipeline handler, following and cancelling its task, the state table. Does not
own: the ``a2a_agents`` shape (``config.a2a``), hooks, recording, retries (the pipeline),
serving AgentLoom agents over A2A (docs/a2a-serving.md).

Modules: ``errors`` (codes), ``catalog``, ``card``, ``clients``, ``states``, ``handler``.
This package imports the A2A SDK only from ``card`` (when a card is checked), ``clients``,
``states`` and ``handler``: ``A2aAgent`` and the codes are importable without it.
"""

from agentloom.a2a.catalog import A2aAgent, capability_key, exposed_name
from agentloom.a2a.errors import A2aError

__all__ = ["A2aAgent", "A2aError", "capability_key", "exposed_name"]
