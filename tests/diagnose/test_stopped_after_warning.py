"""A warning the same process follows at once with a traceback cut before its exception: the process
stopped there, so the warning is reported as the failure (not "nothing stopped the run")."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text

# https://github.com/pytorch/pytorch/issues/164119 (torch 2.8/2.9, recompile_limit set to 1): the limit's
# warning, then the traceback of FailOnRecompileLimitHit, the paste cut inside its frames.
LIMIT = """\
W0930 08:14:56.601000 221700 site-packages/torch/_dynamo/convert_frame.py:1016] [0/1] torch._dynamo hit config.recompile_limit (1)
W0930 08:14:56.601000 221700 site-packages/torch/_dynamo/convert_frame.py:1016] [0/1]    function: 'fn' (/home/u/_test_recompile1.py:14)
W0930 08:14:56.601000 221700 site-packages/torch/_dynamo/convert_frame.py:1016] [0/1]    last reason: 0/0:
W0930 08:14:56.601000 221700 site-packages/torch/_dynamo/convert_frame.py:1016] [0/1] To log all recompilation reasons, use TORCH_LOGS="recompiles".
"""
CUT_TRACEBACK = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
"""


def test_a_warning_then_a_cut_traceback_is_a_failure() -> None:
    root = diagnose_text(LIMIT + CUT_TRACEBACK).root_cause
    assert root is not None
    assert root.rule == "compile.recompile-limit"
    assert root.severity.value == "error"
    assert root.confidence is not None and root.confidence.failure.level == "medium"


def test_the_warning_alone_stays_a_warning() -> None:
    root = diagnose_text(LIMIT).root_cause
    assert root is not None
    assert (root.rule, root.severity.value) == ("compile.recompile-limit", "warning")


def test_a_traceback_far_below_the_warning_is_not_its_doing() -> None:
    chatter = "".join(f"step {i} | loss 2.{i:02d}\n" for i in range(40))
    root = diagnose_text(LIMIT + chatter + CUT_TRACEBACK).root_cause
    assert root is not None
    assert (root.rule, root.severity.value) == ("compile.recompile-limit", "warning")


# https://github.com/modelscope/ms-swift/issues/8378: the kernel's assertion has no rank prefix; the traceback
# right below it, cut before its exception, is rank 5's.
ASSERT_THEN_RANK_TRACEBACK = """\
/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.
[rank5]: Traceback (most recent call last):
[rank5]:   File "/env/ms-swift/swift/cli/rlhf.py", line 7, in <module>
[rank5]:     rlhf_main()
"""


def test_an_unprefixed_error_takes_the_rank_of_the_traceback_below_it() -> None:
    root = diagnose_text(ASSERT_THEN_RANK_TRACEBACK).root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("numerics.nan-loss", 5)
