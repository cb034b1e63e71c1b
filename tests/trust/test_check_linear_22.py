"""Issue #22 item 19: `rootrank check` stays linear in the size of a file made of many small top-level
definitions, and on many unclosed `from x import (` lines. Work is counted where it can be (characters
handed to the parser); the regular-expression scan is timed as a ratio between n and 4n."""

from __future__ import annotations

import ast
import time
from collections.abc import Callable

import pytest

from rootrank.check import check_source, walker
from rootrank.check.source import alias_lines, aliases_of, keyword_lines

HEADER = "import torch\nfrom torch.utils.checkpoint import checkpoint\n"


def _definitions(n: int) -> str:
    return HEADER + "".join(f"def f{i}(x):\n    return checkpoint(g, x)\n" for i in range(n))


def _unclosed_imports(n: int) -> str:
    return HEADER + "x = checkpoint\n" + "from torch.utils import (\n" * n


def test_many_definitions_cost_parse_work_linear_in_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    real_parse = ast.parse

    def counting_parse(source: str, *args: object, **kwargs: object) -> ast.AST:
        parsed.append(len(source))
        return real_parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(walker.ast, "parse", counting_parse)
    work = {}
    for n in (1000, 4000):
        parsed.clear()
        walker._chunk_facts.cache_clear()
        source = _definitions(n)
        findings = check_source(source, f"many{n}.py")
        assert len(findings) == n  # every definition is still checked (one reentrant finding each)
        work[n] = sum(parsed)
        # The parser sees each character of the file a bounded number of times, not once per chunk before it.
        assert work[n] <= 3 * len(source), (n, work[n], len(source))
    assert work[4000] <= 4.5 * work[1000], work


def _best_of(runs: int, call: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        for cache in (keyword_lines, alias_lines, walker._chunk_facts):  # measure the work, not the caches
            cache.cache_clear()
        start = time.process_time()
        call()
        best = min(best, time.process_time() - start)
    return best


def test_unclosed_parenthesised_imports_scan_linearly() -> None:
    small, large = _unclosed_imports(4000), _unclosed_imports(16000)
    # Quadratic before: each unclosed `(` searched to the end of the file for its `)` (16x for 4x here).
    ratio = _best_of(3, lambda: aliases_of([large])) / max(_best_of(3, lambda: aliases_of([small])), 1e-6)
    assert ratio < 8, ratio
    whole = _best_of(3, lambda: check_source(large, "imports.py")) / max(
        _best_of(3, lambda: check_source(small, "imports.py")), 1e-6)
    assert whole < 8, whole
    assert aliases_of([small]) == aliases_of([large])
