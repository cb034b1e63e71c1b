"""Fixture twins: a misuse written with transformers' pre-5.23 names (`gradient_checkpointing*`) and with the
new ones (`activation_checkpointing*`) gives the same findings, for the versions the twins were written for.

A twin is `tests/check/<rule>/<case>_new_names.py` next to `<case>.py`; adding a pair is adding files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_check_fixtures import ROOT, _name, case_versions, check

TWINS = sorted(ROOT.glob("*/*_new_names.py"))


def test_there_are_twins_for_the_hf_rules() -> None:
    rules = {p.parent.name for p in TWINS}
    assert {"checkpoint.reentrant-compile", "checkpoint.fsdp-double-checkpoint", "checkpoint.hf-unsupported-model",
            "checkpoint.reentrant-ddp"} <= rules


@pytest.mark.parametrize("new", TWINS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_old_and_new_names_give_the_same_findings(new: Path) -> None:
    old = new.with_name(new.name.replace("_new_names", ""))
    assert old.is_file(), f"{new.name} has no twin {old.name}"
    assert case_versions(_name(old)) == case_versions(_name(new)), "twins are written for the same versions"
    found_old = check(old.read_text(encoding="utf-8"), _name(old))
    found_new = check(new.read_text(encoding="utf-8"), _name(new))
    assert found_new, "a twin that finds nothing shows nothing"
    assert [(f.rule, f.line, f.column, f.severity, f.assumes) for f in found_old] == \
        [(f.rule, f.line, f.column, f.severity, f.assumes) for f in found_new]
    # The messages name the spelling the code used.
    assert all("activation_checkpointing" in f.message or "TinyEncoder" in f.message for f in found_new)
