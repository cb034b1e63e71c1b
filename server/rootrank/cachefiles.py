"""The user cache folder rootrank keeps its small JSON caches in (`$XDG_CACHE_HOME/rootrank`, else
`~/.cache/rootrank`), and best-effort reads and atomic writes of them: a cache that cannot be read or
written only means the work is done again, so neither ever raises."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rootrank"


def read_json(file: Path) -> Any:
    """The file's JSON, or None when it is missing or damaged."""
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(file: Path, data: Any) -> None:
    """Write `data` through a temporary file and a rename (a reader never sees half a file); failures are
    ignored."""
    tmp = file.with_suffix(f".{os.getpid()}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, file)
    except (OSError, TypeError, ValueError):
        with contextlib.suppress(OSError):
            tmp.unlink()  # a half-written file (a full disk) is not left behind
