"""Composer's launcher (`composer -n N train.py`): its line about the first rank found dead names that rank,
and a crashed rank's captured stderr, printed between `----------Begin global rank N STDERR----------` and
its End line, is that rank's output (composer/cli/launcher.py)."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text


def test_a_signal_named_by_the_launcher() -> None:
    # https://github.com/mosaicml/llm-foundry/issues/258
    root = diagnose_text("ERROR:composer.cli.launcher:Rank 2 crashed with exit code -7.\n").root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("process.killed-signal", 2)


def test_an_error_exit_named_by_the_launcher() -> None:
    # https://github.com/mosaicml/examples/issues/292
    root = diagnose_text("ERROR:composer.cli.launcher:Rank 1 crashed with exit code 1.\n").root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("process.exited-nonzero", 1)


def test_the_stderr_block_is_the_ranks() -> None:
    # The shape of https://github.com/mosaicml/llm-foundry/issues/159 (the KeyError's long key shortened).
    log = "\n".join([
        "Global rank 1 (PID 4312) exited with code 1",
        "----------Begin global rank 1 STDERR----------",
        "/venv/lib/python3.10/site-packages/composer/callbacks/memory_monitor.py:91: UserWarning: no GPU",
        "  warnings.warn(",
        "Traceback (most recent call last):",
        '  File "<string>", line 21, in _bwd_kernel',
        "KeyError: ('2-.-0-.-0-5ef8f334a15f', (torch.float16, torch.float16))",
        "----------End global rank 1 STDERR----------",
    ]) + "\n"
    root = diagnose_text(log).root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("process.uncaught-exception", 1)
