"""The prefilter only saves time: with it and without it (every line through the per-line pipeline),
every engine gives the same diagnosis, on the repository's real logs, on small logs of the benchmark
generators, and on the shared corpus of real logs when it is present (the suite passes without it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rootrank.diagnose import diagnose_paths
from rootrank.render.json import diagnosis_to_json
from tests.conftest import EXAMPLES, FIXTURE_LOGS, REPO


def _shared() -> Path | None:
    """The shared folder beside the repository (or its parent, for a worktree), if any."""
    given = os.environ.get("ROOTRANK_SHARED")
    for place in ([Path(given)] if given else [REPO.parent / "shared", REPO.parent.parent / "shared"]):
        if place.is_dir():
            return place
    return None


SHARED = _shared()


def _inputs(case: Path) -> list[str]:
    logs = case / "logs"
    if logs.is_dir():
        return sorted(str(f) for f in logs.rglob("*") if f.is_file())
    return [str(case / "log.txt")]


def _cases(root: Path | None) -> list[Path]:
    if root is None or not root.is_dir():
        return []
    return sorted(p.parent for p in root.glob("*/expect.yaml")
                  if (p.parent / "log.txt").is_file() or (p.parent / "logs").is_dir())


ENGINES = ["python"] + (["hyperscan"] if __import__("importlib").util.find_spec("hyperscan") else [])


def _findings(paths: list[str]) -> dict:
    """The diagnosis as JSON, without `order` (a count of the lines the pipeline looked at, which is
    what the prefilter changes; events keep their relative order)."""
    def without_order(value: object) -> object:
        if isinstance(value, dict):
            return {k: without_order(v) for k, v in value.items() if k != "order"}
        if isinstance(value, list):
            return [without_order(v) for v in value]
        return value

    found = without_order(diagnosis_to_json(diagnose_paths(paths)))
    assert isinstance(found, dict)
    return found


def _same_with_and_without(paths: list[str], monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("ROOTRANK_ENGINE", "off")
    reference = _findings(paths)
    for engine in ENGINES:
        monkeypatch.setenv("ROOTRANK_ENGINE", engine)
        assert _findings(paths) == reference, f"{engine} prefilter changes the findings"
    return reference


@pytest.mark.parametrize("case", _cases(FIXTURE_LOGS) + _cases(EXAMPLES), ids=lambda p: p.name)
def test_fixture_findings_do_not_depend_on_the_prefilter(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _same_with_and_without(_inputs(case), monkeypatch)


CORPUS = _cases(SHARED / "corpus") if SHARED is not None else []


@pytest.mark.skipif(SHARED is None, reason="no shared corpus beside the repository")
@pytest.mark.parametrize("case", CORPUS, ids=lambda p: p.name)
def test_corpus_findings_do_not_depend_on_the_prefilter(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _same_with_and_without(_inputs(case), monkeypatch)


def _generated(tmp_path: Path, which: str) -> tuple[Path, int]:
    """A small multi-rank log of a benchmark generator and its planted rank."""
    out = tmp_path / f"{which}.log"
    if which == "shared":
        assert SHARED is not None
        script = SHARED / "bench" / "gen_log.py"
        subprocess.run([sys.executable, str(script), "-o", str(out), "--size", "2M", "--ranks", "64",
                        "--seed", "11", "--fail-rank", "21"], check=True, capture_output=True)
        return out, 21
    script = REPO / "bench" / "gen_log.py"
    subprocess.run([sys.executable, str(script), str(out), "--size", "2MiB", "--ranks", "64", "--fail-rank", "21"],
                   check=True, capture_output=True)
    return out, 21


GENERATORS = ["project"] + (["shared"] if SHARED is not None and (SHARED / "bench" / "gen_log.py").is_file() else [])


@pytest.mark.parametrize("which", GENERATORS)
def test_generated_root_cause_does_not_depend_on_the_prefilter(which: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    log, planted = _generated(tmp_path, which)
    monkeypatch.setenv("ROOTRANK_ENGINE", "off")
    reference = _findings([str(log)])["root_cause"]
    assert (reference["rule"], reference["rank"]) == ("memory.cuda-oom", planted)
    for engine in ENGINES:
        monkeypatch.setenv("ROOTRANK_ENGINE", engine)
        assert _findings([str(log)])["root_cause"]["rank"] == planted


@pytest.mark.parametrize("which", GENERATORS)
def test_generated_findings_do_not_depend_on_the_prefilter(which: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    log, _planted = _generated(tmp_path, which)
    _same_with_and_without([str(log)], monkeypatch)
