"""Stage 2, select: ``-k``/``--run`` filters, ``--lf``, ``--shard``."""
