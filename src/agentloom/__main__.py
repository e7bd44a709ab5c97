"""``python -m agentloom``: the ``agentloom`` command."""

from agentloom.cli.main import main

if __name__ == "__main__":
    main()
