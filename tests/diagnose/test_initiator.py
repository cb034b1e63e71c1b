"""The initiating rank on the hard shapes: interleaved tracebacks, a hung rank that prints nothing,
the odd one out, a rank behind in sequence numbers, timestamps against order of appearance.

Lines are real message texts (from the fixtures and public logs), arranged into the shape under test.
"""

from __future__ import annotations

from rootrank.diagnose import diagnose_text

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of "
       "79.25 GiB of which 1.96 GiB is free. Including non-PyTorch memory, this process has 77.28 GiB memory in use. "
       "Of the allocated memory 60.70 GiB is allocated by PyTorch, and 14.15 GiB is reserved by PyTorch but "
       "unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")


def watchdog(rank: int, seq: int = 1234, op: str = "ALLREDUCE", stamp: str = "E1129 12:10:01.000000000") -> str:
    return (f"[rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            f"600058 milliseconds before timing out.")


def test_interleaved_tracebacks_keep_each_rank_apart() -> None:
    rank1 = ["Traceback (most recent call last):", '  File "train.py", line 80, in <module>', "    main()",
             '  File "train.py", line 60, in main', "    loss.backward()", OOM]
    rank0 = ["Traceback (most recent call last):", '  File "train.py", line 80, in <module>', "    main()",
             '  File "train.py", line 72, in main', "    dist.all_reduce(avg)",
             "RuntimeError: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE,"
             " NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600058 milliseconds before timing out."]
    lines = []
    for a, b in zip(rank0, rank1, strict=True):
        lines += [f"[rank0]: {a}", f"[rank1]: {b}"]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("memory.cuda-oom", 1)
    assert [(c.rank, c.rule) for c in d.collateral] == [(0, "distributed.collective-timeout")]


def test_a_hung_rank_that_prints_nothing_is_the_one_missing_from_the_timeouts() -> None:
    lines = [watchdog(r) for r in (0, 1, 3)]
    lines += [f"W1129 12:10:02.100000 900 torch/distributed/elastic/multiprocessing/api.py:908] Sending process "
              f"{1000 + r} closing signal SIGTERM" for r in (0, 1, 2)]
    lines.append("E1129 12:10:02.300000 900 torch/distributed/elastic/multiprocessing/api.py:882] failed "
                 "(exitcode: -6) local_rank: 3 (pid: 1003) of binary: /usr/bin/python3")
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert d.root_cause.rank == 2
    assert d.root_cause.decided_by == "missing from the timeouts"
    assert {c.rank for c in d.collateral} == {0, 1, 3}


def test_a_log_that_ends_at_the_timeouts_names_the_missing_rank_with_low_confidence() -> None:
    # Cut right after the timeouts (a paste, or a job still hanging): the silent rank's own timeout may be
    # what was cut. With the launcher's summary after them, the silence is the log's own.
    cut = "\n".join([*(f"[rank{r}]: step 41 loss 2.31" for r in range(4)), *(watchdog(r) for r in (0, 1, 3))])
    d = diagnose_text(cut + "\n")
    assert d.root_cause is not None and d.root_cause.rank == 2
    assert d.root_cause.decided_by == "missing from the timeouts"
    assert d.root_cause.confidence.rank.level == "low" and "cut off" in d.root_cause.confidence.rank.reason
    ended = cut + "\n" + ("E1129 12:10:02.300000 900 torch/distributed/elastic/multiprocessing/api.py:882] failed "
                         "(exitcode: -6) local_rank: 3 (pid: 1003) of binary: /usr/bin/python3")
    d = diagnose_text(ended)
    assert d.root_cause is not None and d.root_cause.rank == 2
    assert d.root_cause.confidence.rank.level == "medium"


def test_odd_one_out_in_the_collective_kind() -> None:
    lines = [f"[E ProcessGroupNCCL.cpp:566] [Rank {r}] Watchdog caught collective operation timeout: "
             f"WorkNCCL(OpType={'ALLREDUCE' if r == 2 else 'BROADCAST'}, Timeout(ms)=1800000) ran for 1801060 "
             f"milliseconds before timing out." for r in range(4)]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rank == 2
    assert "odd one out" in d.root_cause.decided_by


def test_the_rank_behind_in_completed_work() -> None:
    lines = [f"[rank{r}]:[E1129 12:10:01.0 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
             f"Timeout at NCCL work: 2070, last enqueued NCCL work: 2082, last completed NCCL work: "
             f"{2066 if r == 5 else 2069}." for r in range(8)]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rank == 5


def test_timestamps_beat_order_of_appearance() -> None:
    lines = [
        f"[rank1]:[E1129 12:00:09.000000000 ProcessGroupNCCL.cpp:1] {OOM}",
        f"[rank2]:[E1129 12:00:01.000000000 ProcessGroupNCCL.cpp:1] {OOM}",
    ]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rank == 2
    assert "timestamp" in d.root_cause.decided_by


def test_single_process_traceback_has_no_rank() -> None:
    d = diagnose_text("\n".join(["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                                 "    x = torch.empty(10**12, device='cuda')", OOM]))
    assert d.root_cause is not None
    assert d.root_cause.rule == "memory.cuda-oom" and d.root_cause.rank is None
    assert "fragmentation" in d.root_cause.fix or "expandable_segments" in d.root_cause.fix


def test_clean_output_has_no_root_cause() -> None:
    d = diagnose_text("\n".join(f"[rank{r}]: step {s} | loss 0.{s}" for s in range(20) for r in range(4)))
    assert d.root_cause is None
    assert d.ranks_seen == {0, 1, 2, 3}


def _agent_table(host: str, rows: list[tuple[int, int, int, int]], root: tuple[int, int, int, int]) -> list[str]:
    """torchelastic's error table, as one node's agent prints it (rank, local_rank, exitcode, pid)."""
    def entry(index: int, rank: int, local: int, code: int, pid: int) -> list[str]:
        return [f"[{index}]:", "  time      : 2026-11-29_21:03:44", f"  host      : {host}",
                f"  rank      : {rank} (local_rank: {local})", f"  exitcode  : {code} (pid: {pid})",
                "  error_file: <N/A>", "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"]
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "train.py FAILED",
             "-" * 60, "Failures:"]
    for i, row in enumerate(rows, start=1):
        lines += entry(i, *row)
    lines += ["-" * 60, "Root Cause (first observed failure):", *entry(0, *root), "=" * 60]
    return [f"{host}: {line}" for line in lines]


def test_local_ranks_are_mapped_per_node() -> None:
    # Node 1's local rank 1 (global 9) fails first; node 0 later reports its own local rank 1 (global 1).
    lines = ["node-001: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 1 has a total "
             "capacity of 79.15 GiB of which 2.12 GiB is free."]
    lines += ["node-001: E1129 21:03:44.075000 14783 torch/distributed/elastic/multiprocessing/api.py:869] failed "
              "(exitcode: 1) local_rank: 1 (pid: 20101) of binary: /opt/conda/bin/python3.11"]
    lines += _agent_table("node-001", [(8, 0, -15, 20100)], (9, 1, 1, 20101))
    lines += [f"node-000: [rank{r}]:[E1129 21:13:48.0 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught "
              "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
              "Timeout(ms)=600000) ran for 600058 milliseconds before timing out." for r in range(8)]
    lines += ["node-000: E1129 21:13:48.133000 14686 torch/distributed/elastic/multiprocessing/api.py:869] failed "
              "(exitcode: -6) local_rank: 1 (pid: 20010) of binary: /opt/conda/bin/python3.11"]
    lines += _agent_table("node-000", [(0, 0, -6, 20009)], (1, 1, -6, 20010))
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank, d.root_cause.host) == ("memory.cuda-oom", 9, "node-001")


def test_benign_nccl_and_c10d_warnings_of_a_finished_run_raise_no_alarm() -> None:
    lines = [
        "node1:1234:1250 [0] NCCL WARN NET/IB : No device found.",
        "node1:1234:1250 [0] NCCL WARN Error : no BAR found for path /sys/devices/pci0000:00",
        "[W socket.cpp:464] [c10d] The server socket cannot be initialized on [::]:29500 (errno: 97 - Address "
        "family not supported by protocol).",
        "{'train_runtime': 100.0, 'train_samples_per_second': 10.0, 'train_loss': 0.5, 'epoch': 3.0}",
        "[rank0]:[W1130 01:25:58.478 ProcessGroupNCCL.cpp:1479] Warning: WARNING: process group has NOT been "
        "destroyed before we destruct ProcessGroupNCCL.",
    ]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is None or d.root_cause.severity.value != "error"


def test_exception_ignored_at_exit_is_not_a_failure() -> None:
    lines = [
        "{'train_runtime': 100.0, 'train_loss': 0.5, 'epoch': 3.0}",
        "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f2c1c0e1e50>",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1478, in __del__',
        "    self._shutdown_workers()",
        "AttributeError: 'NoneType' object has no attribute 'join'",
    ]
    assert diagnose_text("\n".join(lines)).root_cause is None
    # The same traceback, raised: a failure.
    raised = diagnose_text("\n".join(lines[2:]))
    assert raised.root_cause is not None and raised.root_cause.rule == "process.uncaught-exception"


def test_with_rank_copies_every_field() -> None:
    # collect._with_rank spells the copy out for speed; a field added to LogLine must be copied too.
    import dataclasses

    from rootrank.diagnose.collect import _with_rank
    from rootrank.model import LogLine

    values = {"number": 7, "text": "t", "raw": "r", "source": "s", "rank": 1, "local_rank": 2, "host": "h",
              "time": 3.5, "pid": 9, "block": 4, "quoted": True}
    assert {f.name for f in dataclasses.fields(LogLine)} == set(values)
    line = LogLine(**values)  # type: ignore[arg-type]
    assert _with_rank(line, 5) == dataclasses.replace(line, rank=5)


def test_a_cascade_of_a_thousand_ranks_decides_and_words_as_a_small_one() -> None:
    """Past the first ranks of one identical watchdog line, the others are kept as bits of a RankGroup
    (collect.py): they still count as ranks that suffered, in the decision and in its wording."""
    odd = diagnose_text("\n".join(watchdog(r, seq=1233 if r == 617 else 1234) for r in range(1000)))
    assert odd.root_cause is not None and odd.root_cause.rank == 617
    assert odd.root_cause.decided_by == "odd one out (seq)"
    assert "ranks 0-616,618-999 wait in seq=1234" in odd.root_cause.why
    assert odd.collateral_count == 999

    missing = diagnose_text("\n".join(watchdog(r) for r in range(1000) if r != 700)
                            + "\n[rank700]: step 41 loss 2.31")
    assert missing.root_cause is not None and missing.root_cause.rank == 700
    assert missing.root_cause.decided_by == "missing from the timeouts"
    assert missing.collateral_count == 999
    assert "Ranks 0-699,701-999 report distributed.collective-timeout" in missing.root_cause.why


def test_an_error_quoted_in_a_persons_sentence_yields_to_one_the_process_printed() -> None:
    narrated = ("If I try to use gradient checkpointing I get this error: RuntimeError: element 0 of tensors does "
                "not require grad and does not have a grad_fn")
    printed = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 150.00 MiB. GPU 0 has a total "
               "capacity of 3.80 GiB of which 130.31 MiB is free.")
    d = diagnose_text(narrated + "\n\n" + printed)
    assert d.root_cause is not None and d.root_cause.rule == "memory.cuda-oom"
    # Alone, the narrated error is still the diagnosis, said to be quoted.
    alone = diagnose_text(narrated)
    assert alone.root_cause is not None and alone.root_cause.rule == "checkpoint.reentrant-no-grad-inputs"
    assert alone.root_cause.confidence is not None and alone.root_cause.confidence.failure.level == "medium"
    assert "sentence" in alone.root_cause.confidence.failure.reason
    # A log record that names no one is not narration (a glog "I" level before the message).
    assert diagnose_text("I1204 12:00:01.000000 77 train.py:10] RuntimeError: none of output has requires_grad=True, "
                         "this checkpoint() is not necessary").root_cause.confidence.failure.level == "high"


def test_the_kernels_oom_kill_of_a_dataloader_worker_is_the_cause_of_its_death() -> None:
    died = "RuntimeError: DataLoader worker (pid 629) is killed by signal: Killed."
    kill = ("Memory cgroup out of memory: Killed process 629 (python) total-vm:14119556kB, anon-rss:6538204kB, "
            "file-rss:80652kB, shmem-rss:16kB, UID:0 pgtables:13432kB oom_score_adj:0")
    d = diagnose_text(died + "\n" + kill)
    assert d.root_cause is not None and d.root_cause.rule == "memory.host-oom-kill"
    # Another process's kill explains nothing about this worker: its death stays the first cause.
    other = diagnose_text(died + "\n" + kill.replace("629", "1234"))
    assert other.root_cause is not None and other.root_cause.rule == "data.worker-died"


def test_srun_names_a_task_as_the_launcher_and_a_range_of_tasks_as_no_single_rank() -> None:
    oom = diagnose_text("slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your "
                        "processes may have been killed by the cgroup out-of-memory handler.\n"
                        "srun: error: gpu20-15: task 0: Out Of Memory")
    assert oom.root_cause is not None and oom.root_cause.rank == 0
    assert oom.root_cause.decided_by == "named by the launcher"
    assert "other ranks" not in oom.root_cause.why
    ranged = diagnose_text("srun: error: node-7: tasks 2-3: Exited with exit code 1")
    assert ranged.root_cause is None or ranged.root_cause.rank is None


def test_rays_wrapper_class_of_a_dead_vllm_engine_names_the_engine() -> None:
    # Ray re-raises a task's exception in the caller under `RayTaskError(<the original class>)`.
    engine = diagnose_text("(TaskRunner pid=9) ray.exceptions.RayTaskError(EngineDeadError): ray::vLLMHttpServer."
                           "generate() (pid=12, ip=10.0.0.1)")
    assert engine.root_cause is not None and engine.root_cause.rule == "serving.vllm-engine-dead"


def _watchdog(rank: int, optype: str = "ALLREDUCE", rest: str = ", NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
              "for 600058 milliseconds before timing out.") -> str:
    return (f"[rank{rank}]:[E1129 21:13:48.0 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective "
            f"operation timeout: WorkNCCL(SeqNum=7, OpType={optype}{rest}")


def test_rank_zero_is_the_missing_one_only_when_every_other_rank_or_a_single_one_shows() -> None:
    all_but_zero = diagnose_text("\n".join(_watchdog(r) for r in range(1, 8)))
    assert all_but_zero.root_cause is not None and all_but_zero.root_cause.rank == 0
    one_rank = diagnose_text(_watchdog(4))
    assert one_rank.root_cause is not None and one_rank.root_cause.rank == 0
    # Five of at least eight ranks with gaps: a fragment of the output; rank 0 is no likelier than 3 or 6.
    fragment = diagnose_text("\n".join(_watchdog(r) for r in (1, 2, 4, 5, 7)))
    assert fragment.root_cause is not None and fragment.root_cause.rank is None
    assert {h.rank for h in fragment.hypotheses} >= {0, 3, 6}


def test_a_value_cut_at_the_end_of_a_line_sets_no_rank_apart() -> None:
    lines = [_watchdog(r) for r in (1, 4, 5, 7)] + [_watchdog(2, "ALLREDUC", "")]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rule != "distributed.collective-mismatch"


def test_a_sub_groups_rank_is_not_taken_for_the_global_rank() -> None:
    d = diagnose_text("  what():  [PG 1 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] "
                      "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=199, OpType=_REDUCE_SCATTER_BASE, "
                      "NumelIn=7098994688, NumelOut=443687168, Timeout(ms)=600000) ran for 600081 milliseconds before "
                      "timing out.")
    assert d.root_cause is not None and d.root_cause.rank is None


def test_a_launcher_summary_alone_takes_its_rank_from_the_failure_table() -> None:
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60, "./train.py FAILED",
             "-" * 60, "Failures:", "  <NO_OTHER_FAILURES>", "-" * 60, "Root Cause (first observed failure):", "[0]:",
             "  time      : 2023-07-14_16:14:46", "  host      : localhost", "  rank      : 1 (local_rank: 1)",
             "  exitcode  : 1 (pid: 8283)", "  error_file: <N/A>",
             "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html", "=" * 60]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rank == 1
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level == "medium"


def test_one_ranks_output_alone_is_not_high_confidence_for_the_rank() -> None:
    d = diagnose_text("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a "
                      "total capacity of 79.15 GiB of which 2.12 GiB is free.")
    assert d.root_cause is not None and d.root_cause.rank == 0
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level == "medium"


def test_a_message_other_failures_print_too_is_medium_alone_and_high_with_its_entrys_other_signs() -> None:
    error = "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
    alone = diagnose_text(error)
    assert alone.root_cause is not None and alone.root_cause.rule == "checkpoint.reentrant-no-grad-inputs"
    assert alone.root_cause.confidence is not None and alone.root_cause.confidence.failure.level == "medium"
    assert "no_grad" in alone.root_cause.confidence.failure.reason
    warned = diagnose_text("/usr/lib/python3.11/site-packages/torch/utils/checkpoint.py:86: UserWarning: None of the "
                           "inputs have requires_grad=True. Gradients will be None\n  warnings.warn(\n" + error)
    assert warned.root_cause is not None and warned.root_cause.confidence is not None
    assert warned.root_cause.confidence.failure.level == "high"


def test_only_warnings_of_what_a_rank_suffered_are_a_low_confidence_finding_not_a_failure() -> None:
    d = diagnose_text("[rank6]:[W729 10:15:17.529361055 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=76, "
                      "addr=[localhost]:60950, remote=[localhost]:29500): Connection reset by peer")
    assert d.root_cause is not None and d.root_cause.severity.value != "error" and d.root_cause.rank is None
    assert d.root_cause.confidence is not None and d.root_cause.confidence.failure.level == "low"


def test_a_python_warning_is_not_an_error_whatever_entry_it_matches() -> None:
    d = diagnose_text("/opt/conda/lib/python3.8/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA "
                      "initialization: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU "
                      "and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
                      "epoch 1 | loss 0.52\nepoch 2 | loss 0.41\n")
    assert d.root_cause is not None and d.root_cause.rule == "env.cuda-unavailable"
    assert d.root_cause.severity.value == "warning"
    raised = diagnose_text("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
                           "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx")
    assert raised.root_cause is not None and raised.root_cause.severity.value == "error"


def test_a_kill_for_memory_explains_the_generic_exception_printed_before_it() -> None:
    # The end of https://github.com/ray-project/ray/issues/14394's paste.
    d = diagnose_text("ray.tune.error.TuneError: ('Trials did not complete', [seed:5591])\n"
                      "slurmstepd: error: Detected 8 oom-kill event(s) in step 59137890.batch cgroup. Some of your "
                      "processes may have been killed by the cgroup out-of-memory handler.")
    assert d.root_cause is not None and d.root_cause.rule == "memory.slurm-oom"


def test_saves_that_no_failure_interrupted_are_not_listed_as_findings() -> None:
    lines = ["Saving model checkpoint to out/checkpoint-500", "{'loss': 0.5123, 'grad_norm': 1.2, 'epoch': 1.0}",
             "Saving model checkpoint to out/checkpoint-1000"]
    d = diagnose_text("\n".join(lines))
    assert all(f.rule != "io.save-interrupted" for f in d.findings)
    killed = diagnose_text("\n".join([*lines, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                                              "GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free."]))
    assert any(f.rule == "io.save-interrupted" for f in killed.findings)


def test_continuation_lines_are_found_and_their_fields_join_the_message_they_continue() -> None:
    # `follows` patterns have no prefilter anchor of their own; the matcher must still find them.
    prefix = "W0810 18:28:53.521000 10244 torch/_dynamo/convert_frame.py:964] [2/256] "
    d = diagnose_text("\n".join([prefix + "torch._dynamo hit config.accumulated_recompile_limit (256)",
                                 prefix + "   function: 'check_empty_cuda_cache' (/home/user/mmgp/offload.py:2261)",
                                 prefix + "   last reason: 2/255: len(args) == 1"]))
    assert d.root_cause is not None and d.root_cause.rule == "compile.recompile-limit"
    assert d.root_cause.fields.get("reason") == "2/255: len(args) == 1"
    assert d.root_cause.fields.get("function") == "check_empty_cuda_cache"
    assert "len(args) == 1" in d.root_cause.fix


def test_a_launcher_table_of_several_crashed_ranks_is_not_high_confidence_for_one() -> None:
    from pathlib import Path

    from rootrank.diagnose import diagnose_paths
    case = (Path(__file__).parent.parent / "fixtures" / "logs"
            / "process.killed-signal--all-4ranks-segfault-ddp-detail-no-initiator-torch2130" / "log.txt")
    d = diagnose_paths([str(case)])
    assert d.root_cause is not None and d.root_cause.rule == "process.killed-signal"
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level != "high"


_GLOO_PEER_CLOSED = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] "
                     "Connection closed by peer [127.0.0.1]:38606. This is typically caused by a remote worker crashing. "
                     "Check the logs of the remote worker before reporting an error.")


def _one_node_teardown(sigterm_rank: int, sigterm_exit: int, failed_rank: int, failed_exit: int) -> str:
    """A torchrun agent's teardown after a failure, as torch 2.13 prints it (the collective-mismatch fixture's)."""
    pids = {0: 18958, 1: 18959}
    return "\n".join([
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/home/user/project/train.py", line 18, in main',
        "[rank1]:     dist.all_reduce(t)",
        _GLOO_PEER_CLOSED,
        "W1130 01:32:10.469000 18894 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
        f"{pids[sigterm_rank]} closing signal SIGTERM",
        "E1130 01:32:10.502000 18894 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: "
        f"{failed_exit}) local_rank: {failed_rank} (pid: {pids[failed_rank]}) of binary: /home/user/venv/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Failures:",
        "[1]:",
        "  time      : 2026-11-30_01:32:10",
        "  host      : localhost",
        f"  rank      : {sigterm_rank} (local_rank: {sigterm_rank})",
        f"  exitcode  : {sigterm_exit} (pid: {pids[sigterm_rank]})",
        "  error_file: <N/A>",
        f"  traceback : Signal 15 (SIGTERM) received by PID {pids[sigterm_rank]}",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-11-30_01:32:10",
        "  host      : localhost",
        f"  rank      : {failed_rank} (local_rank: {failed_rank})",
        f"  exitcode  : {failed_exit} (pid: {pids[failed_rank]})",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        "============================================================",
    ])


def test_the_one_rank_left_waiting_by_peers_that_finished_is_out_of_step() -> None:
    # Rank 1 lost its peers; the agent SIGTERMed rank 0 afterwards and lists no other failure: the peers
    # had finished, so rank 1 was in a collective they never called.
    d = diagnose_text(_one_node_teardown(sigterm_rank=0, sigterm_exit=-15, failed_rank=1, failed_exit=1))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("distributed.collective-mismatch", 1)
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level == "medium"


def test_a_peer_that_exited_with_an_error_is_not_left_waiting() -> None:
    # The table's other worker exited with its own error, not the agent's SIGTERM: it may be the peer that left.
    d = diagnose_text(_one_node_teardown(sigterm_rank=0, sigterm_exit=1, failed_rank=1, failed_exit=1))
    assert d.root_cause is None or d.root_cause.rule != "distributed.collective-mismatch"


def _dump_request(rank: int, detector: int, enqueued: int, completed: int) -> str:
    # torch >= 2.5 (ProcessGroupNCCL::getNCCLWatchdogTimeoutErrorMsg), as a public report printed it.
    return (f"[rank{rank}]:[E703 21:51:54.112142364 ProcessGroupNCCL.cpp:1987] [PG ID 0 PG GUID 0(default_pg) Rank "
            f"{rank}] Received a dump signal due to a collective timeout from  rank {detector} and we will try our "
            f"best to dump the debug info. Last enqueued NCCL work: {enqueued}, last completed NCCL work: "
            f"{completed}.This is most likely caused by incorrect usages of collectives, e.g., wrong sizes used "
            f"across ranks, the order of collectives is not same for all ranks or the scheduled collective, for some "
            f"reason, didn't run.")


def test_a_rank_whose_dump_report_shows_nothing_in_flight_is_the_one_the_others_wait_for() -> None:
    lines = [watchdog(7, seq=56117), watchdog(5, seq=56117), _dump_request(6, 7, 56116, 56116),
             _dump_request(4, 7, 56117, 56116)]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("distributed.rank-stalled", 6)
    assert "every collective it enqueued completed" in d.root_cause.why
    assert d.root_cause.confidence is not None and d.root_cause.confidence.rank.level == "medium"


def test_a_dump_report_with_work_in_flight_is_a_rank_that_waits() -> None:
    d = diagnose_text(_dump_request(0, 13, 1261, 1259))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("distributed.collective-timeout", None)


def test_an_error_an_application_logged_as_a_warning_did_not_stop_the_run() -> None:
    # ms-swift logs the IndexError it caught ("[%(levelname)s:%(name)s]"), then a CUDA assert ends the run.
    warned = ("[WARNING:swift] IndexError occurs in the _extend_tokens function: index 1 is out of bounds for "
              "dimension 0 with size 1.")
    assert_line = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:400: masked_scatter_size_check: block: [0,0,0], "
                   "thread: [0,0,0] Assertion `totalElements <= srcSize` failed.")
    d = diagnose_text("\n".join([warned, assert_line]))
    assert d.root_cause is not None and d.root_cause.rule == "data.device-side-assert"
    alone = diagnose_text(warned)
    assert alone.root_cause is None or alone.root_cause.severity.value != "error"


def test_ranks_that_waited_at_the_start_up_barrier_are_not_the_stalled_ones() -> None:
    # Megatron-DeepSpeed issue 338: ranks 7 and 5 arrived and timed out waiting for the four that never came.
    log = ("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: "
           "store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)\n"
           "RuntimeError: Timed out initializing process group in store based barrier on rank: 5, for key: "
           "store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)\n")
    root = diagnose_text(log).root_cause
    assert root is not None and root.rule == "distributed.rank-stalled"
    assert root.rank is None
    assert "4 of the 8 ranks never arrived" in root.why and "5,7" in root.why


# One rank's watchdog line alone, as people paste it: from torchtune PR 2651 (rank 4 waits in a 1-element
# ALLREDUCE, a barrier, while rank 0 writes the checkpoint) and torchtitan issue 1092 (rank 3 waits in an
# all-gather of FSDP parameters).
_IN_A_BARRIER = ("[rank4]:[E430 05:09:48.828088908 ProcessGroupNCCL.cpp:632] [Rank 4] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=9387, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                 "Timeout(ms)=600000) ran for 600005 milliseconds before timing out.")
_IN_REAL_DATA = ("[rank3]:[E410 14:46:34.630696293 ProcessGroupNCCL.cpp:1896] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
                 "Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective "
                 "operation timeout: WorkNCCL(SeqNum=319682, OpType=_ALLGATHER_BASE, NumelIn=65667328, "
                 "NumelOut=525338624, Timeout(ms)=600000) ran for 600089 milliseconds before timing out.")


def test_one_rank_waiting_in_a_barrier_points_at_rank_0_and_one_waiting_for_data_does_not() -> None:
    barrier = diagnose_text(_IN_A_BARRIER + "\n").root_cause
    assert barrier is not None and barrier.rank == 0 and "1-element barrier" in barrier.why
    data = diagnose_text(_IN_REAL_DATA + "\n").root_cause
    assert data is not None and data.rank is None and data.rule == "distributed.collective-timeout"


def test_a_rank_seen_only_in_the_cut_last_line_is_not_the_one_missing_from_the_timeouts() -> None:
    # verl issue 1158: the paste ends inside rank 6's first line, right after its glog header.
    log = (_IN_REAL_DATA.replace("Rank 3", "Rank 2").replace("rank3", "rank2") + "\n" + _IN_REAL_DATA + "\n"
           + "[rank6]:[E419 10:42:28.887728774 ProcessGroupNCCL.cpp")
    root = diagnose_text(log).root_cause
    assert root is not None and root.rank is None and "rank 6" not in root.why.lower()


def test_an_abort_after_the_process_printed_its_error_is_how_it_died_not_why() -> None:
    # libstdc++'s terminate handler (libsupc++/vterminate.cc) prints the uncaught exception and calls abort();
    # bash then reports the SIGABRT. The error in `what():` is the cause, whatever entry names it.
    # The NCCL error's entry ranks below the signal's, so only the abort being explained lets it win.
    text = ("terminate called after throwing an instance of 'std::runtime_error'\n"
            "  what():  NCCL Error 1: unhandled cuda error\n"
            "Aborted (core dumped)\n")
    assert diagnose_text(text).root_cause.rule == "distributed.nccl-error"
    # Without an error of its own before it, the abort is the failure the log shows.
    assert diagnose_text("step 10 loss 2.31\nAborted (core dumped)\n").root_cause.rule == "process.killed-signal"


def test_an_abort_of_another_rank_is_not_explained_by_this_ranks_error() -> None:
    from rootrank.diagnose import Pipeline
    from rootrank.diagnose.initiator import _aborted_after_error

    pipeline = Pipeline()
    pipeline.feed("-", enumerate(["[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
                                  "[rank0]: Aborted (core dumped)", "[rank1]: Aborted (core dumped)"], start=1))
    units = pipeline.collector.out.units
    aborts = {u.line.rank: u for u in units if u.rule == "process.killed-signal"}
    assert not _aborted_after_error(aborts[0], units)
    assert _aborted_after_error(aborts[1], units)
