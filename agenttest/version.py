"""The version of agent-test."""

__version__ = "0.1.0"
