"""Earlier runs: the run history that every run is added to (``store``), which ``agent-test history``
lists and ``agent-test view`` serves."""
