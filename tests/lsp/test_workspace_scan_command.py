"""`rootrank.scanLogs` through the real server: the workspace folder's log files that hold a failure,
with their root cause, a URI to open, the skipped files with the reason; bad arguments are an error and
the server stays up."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
RANK1 = FIXTURES / "distributed.collective-mismatch--rank1-allreduce-shape-3ranks-debug-detail" / "log.txt"


async def _scan(client: LanguageClient, *arguments: object) -> dict:
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams("rootrank.scanLogs", list(arguments)))
    assert isinstance(result, dict)
    return result


async def test_the_failed_logs_of_the_workspace_with_their_cause(vscode: LanguageClient):
    root: Path = vscode.root  # type: ignore[attr-defined]
    (root / "logs").mkdir()
    shutil.copy(RANK1, root / "logs" / "train.log")
    shutil.copy(RANK1, root / "slurm-77.out")
    (root / "big.err").write_bytes(b"step 1 loss 2.3\n" * 10_000)
    (root / "clean.err").write_text("step 1 loss 2.30\n")
    result = await _scan(vscode, {"maxFileBytes": 100_000})
    names = [Path(f["path"]).relative_to(root).as_posix() for f in result["failures"]]
    assert names == ["logs/train.log", "slurm-77.out"]
    first = result["failures"][0]
    assert first["rank"] == 1 and first["rule"] and first["title"]
    assert first["uri"] == (root / "logs" / "train.log").as_uri()
    assert [Path(s["path"]).name for s in result["skipped"]] == ["big.err"]
    assert result["scanned"] == 3 and result["truncated"] is False and result["cancelled"] is False
    only = await _scan(vscode, {"include": ["*.out"]})
    assert [Path(f["path"]).name for f in only["failures"]] == ["slurm-77.out"]


async def test_bad_arguments_are_an_error_and_the_server_stays_up(vscode: LanguageClient):
    for bad in ({"include": "*.log"}, {"maxFiles": 0}, {"maxFileBytes": True}):
        with pytest.raises(JsonRpcException):
            await _scan(vscode, bad)
    with pytest.raises(JsonRpcException):
        await _scan(vscode, 1, 2)
    assert (await _scan(vscode))["failures"] == []


async def test_the_scan_reads_only_files_under_the_workspace_folders(vscode: LanguageClient):
    """Issue #22, item 21 for `rootrank.scanLogs`: links out of the workspace (to a file, to a folder) are
    never read, the file links are listed as skipped; include globs that climb out (`..`) or are absolute
    are InvalidParams; links that stay inside are read, once, by their real path."""
    root: Path = vscode.root  # type: ignore[attr-defined]
    outside = root.parent / f"{root.name}-elsewhere"
    (outside / "logs").mkdir(parents=True)
    for name in ("secret.log", "slurm-1.out", "x.err"):
        shutil.copy(RANK1, outside / name)  # diagnosable: a read would show as a failure
    shutil.copy(RANK1, outside / "logs" / "deep.log")
    (root / "logs").mkdir()
    shutil.copy(RANK1, root / "logs" / "train.log")
    (root / "logs" / "out.log").symlink_to(outside / "secret.log")
    (root / "slurm-9.out").symlink_to(outside / "slurm-1.out")
    (root / "logs" / "elsewhere").symlink_to(outside, target_is_directory=True)
    (root / "logs" / "ext").symlink_to(outside / "logs", target_is_directory=True)
    (root / "in.err").symlink_to(root / "logs" / "train.log")  # inside: read, by its real path

    result = await _scan(vscode, {"include": ["**/*.log", "**/*.out", "**/*.err", "**/*"]})
    assert [Path(f["path"]) for f in result["failures"]] == [root / "logs" / "train.log"]
    skipped = {Path(s["path"]).relative_to(root).as_posix(): s["reason"] for s in result["skipped"]}
    assert set(skipped) == {"logs/out.log", "slurm-9.out", "logs/train.log"}, skipped
    assert "outside the workspace folders" in skipped["logs/out.log"], skipped
    assert "outside the workspace folders" in skipped["slurm-9.out"], skipped
    assert skipped["logs/train.log"] == f"the same file as {root / 'in.err'}: read once"
    assert result["scanned"] == 1
    everything = [f["path"] for f in result["failures"]] + [s["path"] for s in result["skipped"]]
    assert not [p for p in everything if str(outside) in p], everything

    for glob in ("../*", f"../{outside.name}/*.log", "../../**/*.log", "logs/../../x.log", str(outside) + "/*.log",
                 "/etc/*", "//etc/passwd", "~/*.log", "C:/Windows/*.log", "..\\..\\*.log"):
        with pytest.raises(JsonRpcException, match="relative to the workspace folders"):
            await _scan(vscode, {"include": [glob]})
    defaults = await _scan(vscode)  # the server stays up; the defaults take logs/**/*.log and **/*.err
    assert [Path(f["path"]) for f in defaults["failures"]] == [root / "logs" / "train.log"]
