"""Seed format B, eval-mock scenarios (``scenario-dsl.txt``; docs/formats-b.md): one YAML file per scenario —
``reader`` (strict YAML, B's error envelope), ``packs`` (tool packs as data), ``worlds`` (from_file, snapshots),
``build`` (a file → a Case), ``lint`` (fragile patterns) and ``source`` (``-i b:FILE``, recognition by shape)."""
