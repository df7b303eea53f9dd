"""Benchmarks of agent-test: runner overhead, concurrency, start-up and scale (``python -m bench``)."""
