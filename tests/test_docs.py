"""The generated documentation is current, and every entry's docs have the fixed sections."""

from __future__ import annotations

import pytest

from rootrank.docs import SECTIONS, entry_markdown, generated_files
from rootrank.library import load_library
from tests.conftest import REPO

LIBRARY = load_library()


def test_generated_docs_are_current() -> None:
    stale = [str(p.relative_to(REPO)) for p, text in generated_files(REPO, LIBRARY).items()
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert not stale, f"run `python scripts/gen_docs.py`: stale {stale[:5]}"


@pytest.mark.parametrize("entry", sorted(LIBRARY.entries.values(), key=lambda e: e.id), ids=lambda e: e.id)
def test_fixed_sections_in_order(entry: object) -> None:
    text = entry_markdown(entry)  # type: ignore[arg-type]
    positions = [text.find(f"## {name}\n") for name in SECTIONS]
    assert all(p >= 0 for p in positions), f"missing sections in {entry}"
    assert positions == sorted(positions)
