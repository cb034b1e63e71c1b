"""The shared corpus: on every case whose expect.yaml lists `code:`, `rootrank check` on its train.py
reports exactly those entry ids, and no error-severity finding beyond `code` + `code_allow`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from rootrank.check import check_source
from rootrank.model import Severity

CORPUS = Path(os.environ.get("ROOTRANK_CORPUS", "/work/shared/corpus"))


def _cases() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    found = []
    for expect in sorted(CORPUS.glob("*/expect.yaml")):
        data = yaml.safe_load(expect.read_text(encoding="utf-8")) or {}
        if "code" in data and (expect.parent / "train.py").exists():
            found.append(expect.parent)
    return found


CASES = _cases()


@pytest.mark.skipif(not CASES, reason="the shared corpus is not on this machine")
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_corpus_train_py(case: Path) -> None:
    expect = yaml.safe_load((case / "expect.yaml").read_text(encoding="utf-8"))
    wanted = set(expect.get("code") or [])
    allowed = wanted | set(expect.get("code_allow") or [])
    source = (case / "train.py").read_text(encoding="utf-8")
    findings = check_source(source, "train.py")
    assert {f.rule for f in findings} - set(expect.get("code_allow") or []) == wanted
    assert not [f for f in findings if f.severity is Severity.ERROR and f.rule not in allowed]
