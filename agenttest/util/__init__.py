"""Small helpers every stage uses: text, patterns, secrets, positions in source files, durations, files."""
