"""The version of agent-test."""

__version__ = "0.2.0"
