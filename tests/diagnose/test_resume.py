"""Resume safety: a failure during a checkpoint save says the newest checkpoint may be partial, and how to
check it; a save that completed, or one long before the failure, says nothing."""

from __future__ import annotations

from rootrank.diagnose import diagnose_paths, diagnose_text
from tests.conftest import FIXTURE_LOGS

KILLED_DURING_SAVE = FIXTURE_LOGS / "memory.host-oom-kill--rank0-killed-during-hf-checkpoint-save"
KILLED = ("E1202 03:56:25.107000 24731 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
          "local_rank: 0 (pid: 24857) of binary: /home/user/venv/bin/python3")


def test_a_kill_during_an_hf_trainer_save_warns_that_the_checkpoint_may_be_partial() -> None:
    d = diagnose_paths([str(KILLED_DURING_SAVE / "log.txt")])
    root = d.root_cause
    assert root is not None and root.rule == "memory.host-oom-kill"
    assert "checkpoint (out/checkpoint-8) was being written" in root.fix
    assert "may be partial" in root.fix
    assert "glob.glob('out/checkpoint-8/**/*.pt'" in root.fix


def test_a_save_that_completed_before_the_kill_says_nothing() -> None:
    lines = ["0: saving checkpoint at iteration       1 to /fsx/checkpoints",
             "0:   successfully saved checkpoint at iteration       1 to /fsx/checkpoints", KILLED]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert "may be partial" not in d.root_cause.fix


def test_a_save_long_before_the_failure_says_nothing() -> None:
    steps = [f"{{'loss': '4.70', 'grad_norm': '0.81', 'learning_rate': '3.75e-05', 'epoch': '{i}'}}" for i in range(500)]
    lines = ["[transformers] Saving model checkpoint to out/checkpoint-4", *steps, KILLED]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert "may be partial" not in d.root_cause.fix


def test_training_that_went_on_after_the_save_says_nothing() -> None:
    lines = ["[transformers] Saving model checkpoint to out/checkpoint-4",
             "[transformers] Model weights saved in out/checkpoint-4/model.safetensors",
             "{'loss': '4.69', 'grad_norm': '0.7006', 'learning_rate': '2.917e-05', 'epoch': '0.1875'}", KILLED]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert "may be partial" not in d.root_cause.fix
