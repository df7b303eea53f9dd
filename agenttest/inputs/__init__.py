"""Stage 1, load: case files, their validation and schema, and the ``-i`` sources."""
