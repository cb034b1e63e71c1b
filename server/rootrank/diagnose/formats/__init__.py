"""Log formats: line prefixes (prefixes.py), timestamps (timestamps.py), per-rank file names (paths.py)
and ranks named inside messages (inline.py)."""
