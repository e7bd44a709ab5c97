"""The A2A 1.0 server: the configuration's agents served over A2A by ``agentloom serve``, in the
host's app (docs/a2a-serving.md). Needs the ``a2a`` extra (``a2a-sdk``) beside ``serve``.

::

    routes   the agent card, the JSON-RPC and HTTP+JSON bindings, authentication (``a2a_routes``)
    handler  every A2A method answered from the ``Runtime`` (``RunRequestHandler``)
    list     ``ListTasks``: a page of the principal's tasks
    tasks    a run seen as an A2A ``Task`` (the task id is the run id)
    missing  the same paths without the ``a2a`` extra: 501, naming it (no SDK imported)

Owns: serving A2A. Does not own calling remote A2A agents (``agentloom.a2a``, the client) nor
the rest of the HTTP surface (``host.app``). Importing this package imports no SDK: each module
does, so ``host.app`` loads them only when it mounts the routes.
"""
