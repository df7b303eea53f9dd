"""Earlier runs: the report codec (write and read), diff, merge, and the run history every run is added
to (``store``), which ``agent-test history`` lists and ``agent-test view`` serves."""
