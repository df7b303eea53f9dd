"""What one case holds while it runs: its trace, its world, its ctx, and the user code it calls."""
