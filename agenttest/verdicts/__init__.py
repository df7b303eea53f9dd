"""Stage 5, decide: gates, budgets, costs, the run's outcome and exit code."""
