"""``python -m agenttest``."""

from agenttest.cli import entry

entry()
