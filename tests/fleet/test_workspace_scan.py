"""The workspace scan (fleet/workspace.py): which files its globs find, that each is read as `rootrank
scan` reads a run, and its bounds: excluded folders never entered, files too large or past the limit
listed as skipped with the reason, the walk cut at its entry limit, cancellation between files."""

from __future__ import annotations

import shutil
from pathlib import Path

from rootrank.diagnose import diagnose_paths
from rootrank.fleet.workspace import find_logs, glob_regex, scan_workspace

FIXTURES = Path(__file__).parents[1] / "fixtures" / "logs"
SLURM = FIXTURES / "infra.slurm-node-failure--jean-zay-node-lost-after-validation" / "log.txt"
RANK1 = FIXTURES / "distributed.collective-mismatch--rank1-allreduce-shape-3ranks-debug-detail" / "log.txt"


def _workspace(root: Path) -> Path:
    (root / "logs" / "node0").mkdir(parents=True)
    shutil.copy(SLURM, root / "slurm-4000123.out")
    shutil.copy(RANK1, root / "logs" / "node0" / "train.log")
    (root / "clean.err").write_text("step 1 loss 2.30\nstep 2 loss 2.10\ndone\n")
    shutil.copy(RANK1, root / "notes.txt")  # no glob takes it
    (root / ".venv" / "lib").mkdir(parents=True)
    shutil.copy(RANK1, root / ".venv" / "lib" / "slurm-1.out")  # an excluded folder
    return root


def test_globs_are_vscode_globs() -> None:
    assert glob_regex("slurm-*.out").match("a/b/slurm-12.out")
    assert glob_regex("slurm-*.out").match("slurm-12.out")
    assert not glob_regex("slurm-*.out").match("slurm-12.out.gz")
    assert glob_regex("**/logs/**/*.log").match("logs/x.log")
    assert glob_regex("**/logs/**/*.log").match("run/logs/a/b/x.log")
    assert not glob_regex("**/logs/**/*.log").match("run/blogs/x.log")
    assert glob_regex("logs/*.log").match("logs/x.log") and not glob_regex("logs/*.log").match("logs/a/x.log")
    assert glob_regex("*.{err,out}").match("x.err") and glob_regex("*.{err,out}").match("y/x.out")
    assert glob_regex("rank?.log").match("rank3.log") and not glob_regex("rank?.log").match("rank13.log")


def test_the_failed_logs_are_found_and_read_as_scan_reads_a_run(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    files, truncated = find_logs([str(root)])
    assert not truncated
    assert [Path(f).relative_to(root).as_posix() for f in files] == ["clean.err", "logs/node0/train.log",
                                                                     "slurm-4000123.out"]
    scan = scan_workspace([str(root)])
    failed = {Path(r.path).relative_to(root).as_posix(): r for r in scan.rows if r.failed}
    assert sorted(failed) == ["logs/node0/train.log", "slurm-4000123.out"]
    for relative, row in failed.items():
        batch = diagnose_paths([str(root / relative)]).root_cause
        assert batch is not None
        assert (row.rule, row.rank) == (batch.rule, batch.rank)
    assert failed["logs/node0/train.log"].rank == 1
    assert not scan.skipped and not scan.cancelled


def test_bounds_large_files_the_file_limit_and_the_walk(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "big.err").write_bytes(b"step 1 loss 2.3\n" * 80_000)  # 1.2 MiB
    scan = scan_workspace([str(root)], max_files=1, max_file_bytes=1 << 20)
    reasons = {Path(s.path).name: s.reason for s in scan.skipped}
    assert "larger than 1 MiB" in reasons["big.err"]
    assert len(scan.rows) == 1
    assert sum("past the first 1 files" in r for r in reasons.values()) == 2
    for i in range(50):
        (root / "logs" / f"d{i:02d}").mkdir()
    _, truncated = find_logs([str(root)], max_entries=20)
    assert truncated


def test_cancelled_between_files(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    asked: list[str] = []

    def progress(done: int, total: int, path: str) -> None:
        asked.append(path)

    scan = scan_workspace([str(root)], cancelled=lambda: len(asked) >= 1, on_progress=progress)
    assert scan.cancelled and len(scan.rows) == 1
