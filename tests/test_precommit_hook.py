"""The pre-commit hook, run by the real pre-commit against this checkout (`pre-commit try-repo`): it
installs rootrank into its own environment, fails a commit with a checkpointing mistake, passes a
clean one, and with `args: [--fix]` writes the safe fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import REPO
from tests.heavy import require_program

BAD = "from torch.utils.checkpoint import checkpoint\n\n\ndef f(block, x):\n    return checkpoint(block, x)\n"


def test_the_hook_declares_what_pre_commit_needs() -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "rootrank-check" and hook["entry"] == "rootrank check" and hook["language"] == "python"
    assert {"python", "jupyter"} <= set(hook["types_or"])


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_pre_commit_runs_the_hook(tmp_path: Path) -> None:
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or require_program("pre-commit")
    if not (REPO / ".git").exists():
        import pytest

        pytest.skip("not a git checkout: pre-commit try-repo needs one")
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    (project / "train.py").write_text(BAD, encoding="utf-8")
    _git(project, "add", "train.py")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache")}

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([pre_commit, "try-repo", str(REPO), "rootrank-check", "--all-files", *extra],
                              cwd=project, capture_output=True, text=True, env=env, timeout=600, check=False)

    failed = run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "checkpoint.use-reentrant-explicit" in failed.stdout
    assert (project / "train.py").read_text(encoding="utf-8") == BAD  # no --fix: nothing written
    clean = subprocess.run(
        [pre_commit, "try-repo", str(REPO), "rootrank-check", "--files", "README.md"], cwd=project,
        capture_output=True, text=True, env=env, timeout=600, check=False)
    assert clean.returncode == 0, clean.stdout + clean.stderr  # nothing of its types: skipped, passes
    # With `args: [--fix]` (a committed revision: pre-commit clones the hook repository at `rev`).
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {head.stdout.strip()}\n    hooks:\n      - id: rootrank-check\n"
        "        args: [--fix]\n", encoding="utf-8")
    fixed = subprocess.run([pre_commit, "run", "--all-files"], cwd=project, capture_output=True, text=True,
                           env=env, timeout=600, check=False)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # files were modified by this hook
    assert "checkpoint(block, x, use_reentrant=True)" in (project / "train.py").read_text(encoding="utf-8")
    again = subprocess.run([pre_commit, "run", "--all-files"], cwd=project, capture_output=True, text=True,
                           env=env, timeout=600, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
