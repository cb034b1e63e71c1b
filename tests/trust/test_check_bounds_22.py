"""Issue #22 items 4 and 5: what one `rootrank check` of one file may cost. YAML alias bombs are refused
before anything expands them (a child's VmHWM stays small), findings per file are capped, a check can be
cancelled, and a file over the parse cap is skipped with one line (CLI, exit code 2) or one diagnostic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rootrank.check as check
from rootrank.check import MAX_PARSE_CHARS, SKIPPED, CheckCancelledError, check_source
from rootrank.check.bounds import alias_expansion
from tests.trust.conftest import assert_well_behaved, run_cli

TRAIN = "from torch.utils.checkpoint import checkpoint\n\n\ndef forward(f, x):\n    return checkpoint(f, x)\n"
TRAINER = "{gradient_checkpointing: true, use_cache: true, output_dir: out}"


def list_bomb(levels: int = 9, width: int = 9) -> str:
    """The billion laughs in a training config: 9 levels of 9 aliases each, under 1 KB."""
    lines = ["gradient_checkpointing: true", f"a0: &a0 {TRAINER}"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def mapping_bomb(levels: int = 9, width: int = 9) -> str:
    """The same through mappings (what the key index follows) and merge keys."""
    lines = [f"m0: &m0 {TRAINER}"]
    for i in range(1, levels + 1):
        keys = ", ".join(f"k{j}: *m{i - 1}" for j in range(width))
        lines.append(f"m{i}: &m{i} {{<<: *m{i - 1}, {keys}}}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("make", [list_bomb, mapping_bomb])
def test_an_alias_bomb_is_refused_in_bounded_memory(make, tmp_path: Path) -> None:
    config = tmp_path / "train.yaml"
    config.write_text(make())
    assert len(config.read_bytes()) < 1500
    run = run_cli(["check", str(config)], timeout=60)
    assert_well_behaved(run, expect_json=False)
    assert run.returncode == 2
    assert "alias bomb" in run.stderr and str(config) in run.stderr
    assert run.max_rss_mib < 150, run.max_rss_mib  # before: 1 GB after 38 s, and growing
    [finding] = check_source(make(), "train.yaml")
    assert finding.rule == SKIPPED and "alias" in finding.message


def test_aliases_within_the_budget_are_still_checked() -> None:
    config = ("base: &base {gradient_checkpointing: true, output_dir: out, use_cache: true}\n"
              "runs: [*base, *base, *base]\ntrain:\n  <<: *base\n  learning_rate: 0.1\n")
    rules = [f.rule for f in check_source(config, "train.yaml")]
    assert SKIPPED not in rules
    # The shared mapping is checked once (not once per alias); the merged one is its own mapping.
    assert rules.count("checkpoint.hf-use-cache") == 2, rules


def test_a_recursive_document_is_refused() -> None:
    [finding] = check_source("gradient_checkpointing: true\nloop: &a [1, *a]\n", "train.yaml")
    assert finding.rule == SKIPPED and "itself" in finding.message


def test_the_expansion_is_measured_in_linear_time() -> None:
    import yaml

    node = yaml.compose(list_bomb(levels=60, width=2))  # 2**60 nodes once expanded: refused at once
    assert alias_expansion(node) is not None
    assert alias_expansion(yaml.compose(list_bomb(levels=3, width=2))) is None


def test_findings_per_file_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    config = "".join(f"run{i}: {TRAINER}\n" for i in range(40))
    assert len(check_source(config, "many.yaml")) == 80
    monkeypatch.setattr(check, "MAX_FINDINGS_PER_FILE", 25)
    assert len(check_source(config, "many.yaml")) == 25


def test_a_check_stops_when_cancelled() -> None:
    source = TRAIN + "".join(f"def f{i}(x):\n    return checkpoint(g, x)\n" for i in range(3000))
    with pytest.raises(CheckCancelledError):
        check_source(source, "train.py", cancelled=lambda: True)
    polls: list[int] = []

    def cancel_on_third_poll() -> bool:
        polls.append(1)
        return len(polls) >= 3

    with pytest.raises(CheckCancelledError):
        check_source(source, "cancelled.py", cancelled=cancel_on_third_poll)
    assert len(polls) == 3
    with pytest.raises(CheckCancelledError):
        check_source(list_bomb(levels=4), "bomb.yaml", cancelled=lambda: True)
    assert len(check_source(source, "whole.py", cancelled=lambda: False)) == 3001


# --------------------------------------------------------------------------- 5: the parse cap

def _over_the_cap(kind: str) -> str:
    if kind == "py":
        body = "def f(x):\n    return checkpoint(g, x)\n"
        return TRAIN + body * (MAX_PARSE_CHARS // len(body) + 1)
    if kind == "yaml":
        return "".join(f"run{i}: {TRAINER}\n" for i in range(MAX_PARSE_CHARS // 60 + 1))
    source = "from torch.utils.checkpoint import checkpoint\n" + "y = checkpoint(f, x)\n" * (MAX_PARSE_CHARS // 20)
    return json.dumps({"cells": [{"cell_type": "code", "source": source, "metadata": {}, "outputs": []}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("kind", ["py", "yaml", "ipynb"])
def test_a_file_over_the_parse_cap_is_skipped_with_one_line(kind: str, tmp_path: Path) -> None:
    big = tmp_path / f"big.{kind}"
    big.write_text(_over_the_cap(kind))
    small = tmp_path / "small.py"
    small.write_text(TRAIN)
    run = run_cli(["check", "--format", "json", str(big), str(small)], timeout=120)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == [line for line in lines if line.startswith("rootrank: ")]
    [skip] = [line for line in lines if str(big) in line]
    assert "not checked" in skip and "MiB" in skip
    findings = json.loads(run.stdout)["findings"]
    assert {Path(f["path"]).name for f in findings} == {"small.py"}  # the other files are still checked
    assert run.max_rss_mib < 200, run.max_rss_mib  # 310x of 2 MiB would be 650 MiB


def test_the_parse_cap_in_the_engine() -> None:
    source = _over_the_cap("py")
    [finding] = check_source(source, "big.py")
    assert finding.rule == SKIPPED and finding.line == 1
    assert check_source(source + "# noqa\n", "big.py")[0].rule == SKIPPED
    assert check_source(source[:MAX_PARSE_CHARS // 4], "fits.py")[0].rule != SKIPPED
