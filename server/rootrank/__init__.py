"""rootrank: tells an ML engineer why a training run failed, entirely on their own machine.

Public calls (all pure: text in, immutable records out; no front end is imported):
`diagnose_text`, `diagnose_paths` (log side) and `check_source` (code side).
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
