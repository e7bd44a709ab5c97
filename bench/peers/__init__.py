"""The peers ``bench/peers.py`` measures AgentLoom against, on one scripted workload.

Each peer module (``langgraph_peer``, ``openai_agents_peer``, ``pydantic_ai_peer``) exposes:

* ``STORES`` — the stores it runs on (``memory``; LangGraph also ``sqlite`` and ``postgres``);
* ``available() -> str | None`` — ``None`` when the peer imports, else the reason;
* ``async run_steps(steps, store) -> StepFigures`` — one run of ``steps`` steps;
* ``async concurrent(n_runs=1000, steps=10) -> ConcurrentFigures`` — that many runs at once on
  the in-memory configuration, in one process and event loop (run it through
  ``common.in_child`` so the peak RSS is its own).

``common`` holds the workload's constants, the step clock, the figures and the table printer;
its docstring defines a step and where the clock is read. The peers come from the ``bench``
extra (``pip install -e '.[bench]'``); nothing under ``src`` imports them.

Scripts import this package as ``peers`` (``python bench/<script>.py`` puts ``bench/`` first on
``sys.path``; the package directory wins over ``bench/peers.py`` of the same name).
"""
