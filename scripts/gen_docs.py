#!/usr/bin/env python3
"""Regenerate docs/rules/*.md and the README's table of entries from rules/ (--check: only report staleness)."""

from __future__ import annotations

import sys
from pathlib import Path

from rootrank.docs import generated_files
from rootrank.library import load_library

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    check = "--check" in sys.argv
    library = load_library()
    wanted = generated_files(REPO, library)
    stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    pages = REPO / "docs" / "rules"
    orphans = [p for p in pages.glob("*.md") if p not in wanted] if pages.is_dir() else []
    if check:
        for path in stale + orphans:
            print(f"stale: {path.relative_to(REPO)}")
        return 1 if stale or orphans else 0
    pages.mkdir(parents=True, exist_ok=True)
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
    for path in orphans:
        path.unlink()
    print(f"{len(stale)} written, {len(orphans)} removed, {len(wanted)} generated files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
