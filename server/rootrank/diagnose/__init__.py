"""The log side of rootrank: read -> normalize -> prefixes/ranks -> tracebacks -> match -> timeline -> initiator.

`diagnose_text` and `diagnose_paths` are the whole pipeline; each step lives in its own module.
"""
