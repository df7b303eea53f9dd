"""What one case holds while it runs: trace, world, user code."""
