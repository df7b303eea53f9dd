"""Stage 4, run: scheduling, deadlines, runs x connectors."""
