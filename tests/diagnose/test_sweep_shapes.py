"""Shapes of real pastes the tool once misread (found by sweeps over unseen issue threads)."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text


def test_an_iso_stamp_followed_by_a_colon_then_mpiruns_rank_tag() -> None:
    # https://github.com/facebookresearch/deit/issues/76 (a collector's stamp, then mpirun's `[1,0]<stderr>:`)
    stamp = "2021-03-10T13:22:37.443Z: [1,0]<stderr>:"
    log = "\n".join(stamp + text for text in [
        "Traceback (most recent call last):",
        '  File "/opt/conda/lib/python3.6/site-packages/torch/_utils.py", line 428, in reraise',
        "    raise self.exc_type(msg)",
        "OSError: Caught OSError in DataLoader worker process 3.",
    ]) + "\n"
    root = diagnose_text(log).root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("data.worker-exception", 0)


def test_a_worker_death_cut_before_its_signal() -> None:
    # https://github.com/aik2mlj/polyffusion/issues/2: the paste ends before the signal's name.
    log = ("Traceback (most recent call last):\n"
           '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler\n'
           "    _error_if_any_worker_fails()\n"
           "RuntimeError: DataLoader worker (pid 2978) is killed by")
    root = diagnose_text(log).root_cause
    assert root is not None
    assert root.rule == "data.worker-died"
