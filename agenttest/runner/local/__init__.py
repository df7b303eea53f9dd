"""Local workers (``--workers N``): forked processes — ``worker`` (the controller's handle), ``child`` (the
worker's own side), ``wire`` (what they say to each other)."""
