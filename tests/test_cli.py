"""The `rootrank` command in-process: exit codes, the JSON contract, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rootrank.cli import main

OOM_LOG = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 has a total " \
          "capacity of 4.00 GiB of which 2.35 GiB is free.\n[rank0]: step 1\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_diagnose_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "job.log"
    log.write_text(OOM_LOG)
    code, out, _ = run(capsys, "diagnose", "--format", "json", str(log))
    assert code == 1
    data = json.loads(out)
    assert data["schema"] == "rootrank.diagnosis/2"
    root = data["root_cause"]
    assert root["rule"] == "memory.cuda-oom" and root["rank"] == 2 and root["severity"] == "error"
    for key in ("title", "host", "line", "evidence", "why", "fix", "verify", "references"):
        assert key in root
    assert root["evidence"][0]["rank"] == 2 and "CUDA out of memory" in root["evidence"][0]["text"]
    for key in ("candidates", "collateral", "findings"):
        assert isinstance(data[key], list)
    assert data["findings"][0]["role"] == "cause" and data["findings"][0]["count"] == 1
    assert data["findings"][0]["ranks"] == "2" and data["findings"][0]["rank_count"] == 1
    assert data["ranks_seen"] == "0,2" and data["ranks_seen_count"] == 2  # ranges at any size (schema 2)


def test_clean_log_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "ok.log"
    log.write_text("step 1 loss 0.5\nstep 2 loss 0.4\n")
    code, out, _ = run(capsys, "diagnose", "--format", "json", str(log))
    assert code == 0 and json.loads(out)["root_cause"] is None
    assert json.loads(out)["lines_read"] == 2


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_human_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(OOM_LOG)
    code, out, _ = run(capsys, "diagnose", "--format", fmt, str(log))
    assert code == 1 and "CUDA out of memory" in out and "rank 2" in out


def test_missing_file_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "diagnose", "/nonexistent/x.log")
    assert code == 2 and out == "" and err.count("\n") == 1 and "no such file" in err


def test_directory_without_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "diagnose", str(tmp_path))
    assert code == 2 and "no log files" in err


def test_binary_input_is_diagnosed_not_crashed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "blob.log"
    log.write_bytes(bytes(range(256)) * 100 + b"\xff\xfe RuntimeError: CUDA error: device-side assert triggered\n")
    code, _, err = run(capsys, "diagnose", "--format", "json", str(log))
    assert code in (0, 1) and "Traceback" not in err


def test_redaction_and_raw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmN"
    log = tmp_path / "job.log"
    log.write_text(f"[rank2]: ValueError: bad token {token}\n" + OOM_LOG)
    _, out, _ = run(capsys, "diagnose", "--format", "json", str(log))
    assert token not in out
    _, raw, _ = run(capsys, "diagnose", "--format", "json", "--raw", str(log))
    assert token in raw


def test_explain_and_rules(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "memory.cuda-oom")
    assert code == 0 and out.startswith("# memory.cuda-oom") and "## What to do" in out
    code, _, err = run(capsys, "explain", "memory.nope")
    assert code == 2 and "no entry" in err
    code, out, _ = run(capsys, "rules", "--format", "json")
    ids = {r["id"] for r in json.loads(out)["rules"]}
    assert code == 0 and "memory.cuda-oom" in ids


def test_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["diagnose", "--format", "yaml", "x"])
    assert exc.value.code == 2


def test_explain_file_line_prints_what_the_checkpoint_call_does(tmp_path) -> None:
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom torch.utils.checkpoint import checkpoint\n\n"
                      "def forward(blocks, x):\n    for block in blocks:\n        x = checkpoint(block, x)\n"
                      "    return x\n", encoding="utf-8")
    run = [sys.executable, "-m", "rootrank.cli", "explain"]
    found = subprocess.run([*run, f"{script}:6"], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr
    assert "`torch.utils.checkpoint.checkpoint`" in found.stdout
    assert "**Reentrant**: `use_reentrant` not passed" in found.stdout
    assert "once per iteration of `for block in blocks`" in found.stdout
    nothing = subprocess.run([*run, f"{script}:1"], capture_output=True, text=True, check=False)
    assert nothing.returncode == 2 and "no checkpoint, compile, DDP or FSDP call" in nothing.stderr
    missing = subprocess.run([*run, f"{tmp_path}/absent.py:3"], capture_output=True, text=True, check=False)
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
