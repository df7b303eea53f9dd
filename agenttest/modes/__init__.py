"""Test modes: standard (one call) and dynamic (simulator-driven conversation)."""
