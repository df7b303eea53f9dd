"""Stage 3, resolve: the Plan of resolved cases, built once; every problem reported in one round."""
