"""Earlier runs: the report codec (write and read), diff, merge."""
