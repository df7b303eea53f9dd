"""``python -m agenttest``."""

from .cli import entry

entry()
