"""``python -m agenttest``."""

from .cli import main

main(prog_name="agent-test")
