"""Shapes found by running new real cases the engine had not been built with (issue #12).

- `srun --label` in front of one torchrun agent per node: the label is the node's task, the workers'
  `[rankN]:` tags are the ranks. The per-node logs of a real two-agent run, each line given the label
  srun would print for its node, must name the same rank as the per-node files do.
- A DataLoader worker's re-raised exception carries the worker's `Original Traceback`: the failure it
  ends in (the CPU allocator refusing 16 TiB) names the root cause, not the generic worker wrapper.
"""

from __future__ import annotations

from pathlib import Path

from rootrank.diagnose import diagnose_paths, diagnose_text
from rootrank.diagnose.formats.prefixes import SRUN_NODE_LABEL, Dialect, peel
from tests.conftest import FIXTURE_LOGS

SIGKILL_RUN = FIXTURE_LOGS / "process.killed-signal--2node-rank1-sigkill-lightning-rank-prefix-per-node-logs" / "logs"
HANG_RUN = FIXTURE_LOGS / "distributed.rank-stalled--2node-rank1-node0-skips-allreduce-per-node-logs" / "logs"
WORKER_RUN = FIXTURE_LOGS / "memory.cpu-alloc-failed--2node-rank3-dataloader-worker-16tib-per-node-logs" / "logs"
SRUN_AS_RANK = FIXTURE_LOGS / "process.killed-signal--pasted-srun-label-faulthandler-segfault-in-barrier" / "log.txt"


def _srun_labelled(run: Path, dst: Path) -> Path:
    """One file as `srun --label torchrun ...` on two nodes gives: each node's lines after its task id."""
    lines = [f"{node}: {line}" for node, name in enumerate(("node0.log", "node1.log"))
             for line in (run / name).read_text().splitlines()]
    dst.write_text("\n".join(lines) + "\n")
    return dst


def test_srun_label_of_a_node_agent_is_not_a_rank(tmp_path: Path) -> None:
    per_node = diagnose_paths(sorted(str(p) for p in SIGKILL_RUN.iterdir()))
    labelled = diagnose_paths([str(_srun_labelled(SIGKILL_RUN, tmp_path / "slurm-1234.out"))])
    assert per_node.root_cause is not None and labelled.root_cause is not None
    assert (labelled.root_cause.rule, labelled.root_cause.rank) == (per_node.root_cause.rule, 1)
    assert {c.rank for c in labelled.collateral} <= {0, 2, 3}


def test_srun_label_of_a_node_agent_keeps_the_hung_rank(tmp_path: Path) -> None:
    d = diagnose_paths([str(_srun_labelled(HANG_RUN, tmp_path / "slurm-1235.out"))])
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("distributed.rank-stalled", 1)


def test_dialect_tells_node_labels_from_rank_labels() -> None:
    node_lines = ["1: [rank3]: x", "1: [rank2]: y", "0: [rank1]: z", "0: [rank0]: w", "1: E1203 12:00:00.1 9 a.py:1] q"]
    probe = Dialect()
    for line in node_lines:
        probe.observe(line)
    assert SRUN_NODE_LABEL in probe.decide()
    peeled = peel("1: [rank3]: RuntimeError: boom", probe.decide())
    assert (peeled.rank, peeled.host, peeled.text) == (3, "task 1", "RuntimeError: boom")
    peeled = peel("1: E1203 12:00:00.100000 9 torch/x.py:1] failed (exitcode: -9) local_rank: 1", probe.decide())
    assert peeled.rank is None and peeled.host == "task 1"
    rank_lines = ["3: [rank3]: x", "2: [rank2]: y", "1: [rank1]: z", "0: [rank0]: w"]
    probe = Dialect()
    for line in rank_lines:
        probe.observe(line)
    assert "srun-label" in probe.decide() and SRUN_NODE_LABEL not in probe.decide()
    assert peel("3: [rank3]: x", probe.decide()).rank == 3


def test_srun_label_that_is_the_rank_still_names_it() -> None:
    d = diagnose_paths([str(SRUN_AS_RANK)])
    assert d.root_cause is not None and d.root_cause.rank is not None


def test_worker_original_traceback_names_the_failure() -> None:
    d = diagnose_paths(sorted(str(p) for p in WORKER_RUN.iterdir()))
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.rank) == ("memory.cpu-alloc-failed", 3)
    assert d.root_cause.fields.get("requested_bytes") == "17592186044416"


def test_worker_exception_without_a_specific_inner_error_stays_a_worker_exception() -> None:
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "train.py", line 40, in <module>',
        "    for batch in loader:",
        "KeyError: Caught KeyError in DataLoader worker process 1.",
        "Original Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop',
        "    data = fetcher.fetch(index)",
        '  File "data.py", line 12, in __getitem__',
        "    return self.rows[i]['label']",
        "KeyError: 'label'",
    ])
    d = diagnose_text(text)
    assert d.root_cause is not None and d.root_cause.rule == "data.worker-exception"


def test_an_unrelated_traceback_after_a_worker_exception_is_its_own_block() -> None:
    # "Original Traceback" continues a block only right after its exception line; a later plain
    # traceback of another failure is not absorbed into the worker's.
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "train.py", line 40, in <module>',
        "ValueError: Caught ValueError in DataLoader worker process 0.",
        "Original Traceback (most recent call last):",
        '  File "data.py", line 12, in __getitem__',
        "ValueError: bad row",
        "",
        "step 10 loss 2.0",
        "Traceback (most recent call last):",
        '  File "eval.py", line 3, in <module>',
        "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
        "you tried to allocate 4096 bytes. Error code 12 (Cannot allocate memory)",
    ])
    d = diagnose_text(text)
    assert d.root_cause is not None and d.root_cause.rule == "data.worker-exception", d.root_cause


INTERLEAVED = FIXTURE_LOGS / "process.killed-signal--2agents-one-terminal-rank3-sigkill-interleaved" / "log.txt"
HANG_INTERLEAVED = FIXTURE_LOGS / "distributed.rank-stalled--2agents-one-terminal-rank2-skips-allreduce-interleaved" / "log.txt"


def test_collector_prefixes_keep_the_rank(tmp_path: Path) -> None:
    # The same real log as a container runtime's CRI file, journalctl and moreutils `ts` keep it.
    for prefix in ("2026-12-03T16:35:53.123456789Z stdout F ", "Dec  3 16:35:53 node-b torchrun[10207]: ",
                   "Dec 03 16:35:53 "):
        for case, want in ((INTERLEAVED, 3), (HANG_INTERLEAVED, 2)):
            path = tmp_path / "pod.log"
            path.write_text("".join(prefix + line for line in case.read_text().splitlines(keepends=True)))
            d = diagnose_paths([str(path)])
            assert d.root_cause is not None and d.root_cause.rank == want, (prefix, case.parent.name, d.root_cause)


SIGSEGV_RUN = FIXTURE_LOGS / "process.killed-signal--2node-rank3-sigsegv-silent-per-node-logs" / "logs"


def test_node_files_named_after_the_node_rank_are_not_rank_files(tmp_path: Path) -> None:
    # `torchrun --node-rank $RANK ... > train_rank$RANK.log` (Kubeflow's and many Slurm scripts' RANK is the
    # node's): the agent's "failed (exitcode: -9) local_rank: 1" in train_rank0.log is not rank 0's.
    for run, want in ((SIGKILL_RUN, 1), (SIGSEGV_RUN, 3), (WORKER_RUN, 3)):
        folder = tmp_path / run.parent.name
        folder.mkdir()
        for node in (0, 1):
            (folder / f"train_rank{node}.log").write_text((run / f"node{node}.log").read_text())
        d = diagnose_paths(sorted(str(p) for p in folder.iterdir()))
        assert d.root_cause is not None and d.root_cause.rank == want, (run.parent.name, d.root_cause.why)


def test_a_real_rank_file_keeps_its_name_rank(tmp_path: Path) -> None:
    path = tmp_path / "rank2.log"
    path.write_text("step 3 loss 2.1\nTraceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
                    "ValueError: bad batch\n")
    d = diagnose_paths([str(path)])
    assert d.root_cause is not None and d.root_cause.rank == 2


def test_line_numbers_of_a_pasted_excerpt_are_peeled_only_when_they_count_lines() -> None:
    # LlamaFactory#7396 (https://github.com/hiyouga/LlamaFactory/issues/7396): an excerpt pasted with its
    # viewer's line numbers in front of the [rankN]: tags.
    lines = [
        "[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
        "Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
        "[80747] [rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, "
        "Timeout(ms)=600000) ran for 600067 milliseconds before timing out.",
        "[80748] [rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error "
        "or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
        "[80749] [rank3]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 3] Exception (either an error "
        "or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.",
    ]
    probe = Dialect()
    for line in lines:
        probe.observe(line)
    assert "line-number" in probe.decide()
    assert peel(lines[3], probe.decide()).rank == 3
    d = diagnose_text("\n".join(lines))
    # Ranks 0, 3 and 4 all time out: the excerpt does not say which rank stopped (rank 3 is not "silent").
    assert d.root_cause is not None and d.root_cause.rank != 3
    repeated = ["[3] loss 2.0", "[1] loss 2.1", "[3] loss 1.9", "[1] loss 2.0"]
    probe = Dialect()
    for line in repeated:
        probe.observe(line)
    assert "line-number" not in probe.decide()


def test_a_launcher_line_alone_is_a_failure_not_nothing() -> None:
    # Chinese-Vicuna#113 (https://github.com/Facico/Chinese-Vicuna/issues/113): the paste keeps only the
    # launcher's line; the worker's traceback is not in it.
    d = diagnose_text("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 "
                      "(pid: 1622990) of binary: /home/changquan/anaconda3/envs/lang/bin/python")
    assert d.root_cause is not None and d.root_cause.rule == "process.exited-nonzero"
    assert d.root_cause.rank == 0
    assert (d.root_cause.confidence.failure.level, d.root_cause.confidence.rank.level) == ("low", "low")
    # DeepSpeed's launcher prints the command of the last child it killed, not the failed one: no rank.
    d = diagnose_text("[2024-03-20 20:31:29,240] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3353708\n"
                      "[2024-03-20 20:31:29,269] [ERROR] [launch.py:321:sigkill_handler] ['/data/anaconda3/envs/llama/"
                      "bin/python', '-u', 'src/train_bash.py', '--local_rank=4', '--fp16'] exits with return code = 1")
    assert d.root_cause is not None and d.root_cause.rule == "process.exited-nonzero" and d.root_cause.rank is None


def test_failure_table_entries_joined_onto_one_line_each() -> None:
    # litData#340 (https://github.com/Lightning-AI/litData/issues/340): CloudWatch shows each entry of
    # torchrun's failure table on one line, behind its own stamp. Every listed rank aborted (SIGABRT)
    # at the same second: the entries are read as the table's, and the stamps' order decides nothing.
    lines = [f"  | 2024-08-23T22:22:58.{879 + (r > 4)}Z | [{r}]: time : 2024-08-23_22:22:58 host : algo-2 rank : {r} "
             f"(local_rank: {r}) exitcode : -6 (pid: {187 + r}) error_file: <N/A> traceback : Signal 6 (SIGABRT) "
             f"received by PID {187 + r}" for r in range(2, 8)]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rule == "process.killed-signal"
    assert d.root_cause.rank in range(2, 8)
    assert d.root_cause.confidence.rank.level == "low"
    assert "timestamp" not in d.root_cause.why


def test_a_joined_root_cause_entry_names_the_rank() -> None:
    # The same joined shape with torchrun's "Root Cause" heading before the first failure's entry (the
    # fields of node 1's table in the real run of process.killed-signal--2agents-one-terminal-rank2-sigsegv-
    # interleaved, joined onto one line per entry as the collector shows them; the host name is made up).
    text = "\n".join([
        "  | 2026-12-03T16:39:13.2Z | [1]: time : 2026-12-03_16:39:13 host : node-b rank : 3 (local_rank: 1) "
        "exitcode : -15 (pid: 16630)  (SIGTERM) error_file: <N/A> traceback : Signal 15 (SIGTERM) received by PID 16630",
        "  | 2026-12-03T16:39:13.2Z | ------------------------------------------------------------",
        "  | 2026-12-03T16:39:13.2Z | Root Cause (first observed failure):",
        "  | 2026-12-03T16:39:13.3Z | [0]: time : 2026-12-03_16:39:13 host : node-b rank : 2 (local_rank: 0) "
        "exitcode : -11 (pid: 16629)  (SIGSEGV) error_file: <N/A> traceback : Signal 11 (SIGSEGV) received by PID 16629",
    ])
    d = diagnose_text(text)
    assert d.root_cause is not None and (d.root_cause.rule, d.root_cause.rank) == ("process.killed-signal", 2)


RESTART_RUN = FIXTURE_LOGS / "process.killed-signal--2node-rank2-sigkill-then-restart-fails-per-node-logs" / "logs"


def test_another_nodes_unprefixed_traceback_is_not_the_exited_ranks_output(tmp_path: Path) -> None:
    # Both nodes' output in one file behind each node's prefix (pdsh's host, srun's task label): the
    # second attempt's unprefixed connect failure on node 0 does not explain rank 2's SIGKILL on node 1.
    for prefixes in (("gpu-node-a: ", "gpu-node-b: "), ("0: ", "1: ")):
        path = tmp_path / "job.out"
        path.write_text("".join(prefix + line for prefix, name in zip(prefixes, ("node0.log", "node1.log"), strict=True)
                                for line in (RESTART_RUN / name).read_text().splitlines(keepends=True)))
        d = diagnose_paths([str(path)])
        assert d.root_cause is not None, prefixes
        assert (d.root_cause.rule, d.root_cause.rank) == ("memory.host-oom-kill", 2), (prefixes, d.root_cause.why)
