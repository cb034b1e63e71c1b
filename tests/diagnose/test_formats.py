"""Line prefixes, timestamps, per-rank file names and in-message ranks, one real example per format."""

from __future__ import annotations

import pytest

from rootrank.diagnose.formats.inline import rank_in_message
from rootrank.diagnose.formats.paths import ranks_from_path
from rootrank.diagnose.formats.prefixes import Dialect, peel
from rootrank.diagnose.formats.timestamps import find_time, parse_time


@pytest.mark.parametrize(
    ("line", "rank", "local_rank", "host", "rest"),
    [
        ("[rank3]: torch.OutOfMemoryError: CUDA out of memory.", 3, None, None, "torch.OutOfMemoryError: CUDA out of memory."),
        ("[default0]:[rank12]:[E817 17:40:34.227531918 ProcessGroupNCCL.cpp:1515] [PG ID 0] x", 12, 0, None, "[PG ID 0] x"),
        ("[rank0]:[rank0]:   File \".../compile_fx.py\", line 423", 0, None, None, "  File \".../compile_fx.py\", line 423"),
        ("[gpu187:2]:torch.cuda.OutOfMemoryError: CUDA out of memory.", None, 2, "gpu187", "torch.cuda.OutOfMemoryError: CUDA out of memory."),
        ("[1,3]<stderr>:RuntimeError: Horovod has been shut down.", 3, None, None, "RuntimeError: Horovod has been shut down."),
        ("(WorkerDict pid=835, ip=172.26.143.83) [rank38]:[E809 14:59:30.411244289 ProcessGroupNCCL.cpp:629] boom", 38, None, "172.26.143.83", "boom"),
        ("2026-01-09 17:40:31.169213 master-0 >> [rank7]: Traceback (most recent call last):", 7, None, "master-0", "Traceback (most recent call last):"),
        ("2024-01-14T17:41:37.636863045Z [E ProcessGroupNCCL.cpp:828] [Rank 7] Watchdog caught", None, None, None, "[Rank 7] Watchdog caught"),
        ("W1129 23:35:14.945000 14686 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 14705 closing signal SIGTERM", None, None, None, "Sending process 14705 closing signal SIGTERM"),
        ("[2024-02-27T21:35:28.705869Z] [rank=1] || KeyError: 'x'", 1, None, None, "KeyError: 'x'"),
        ("Dec  2 03:12:01 node-b kernel: NVRM: Xid (PCI:0000:06:00): 79, pid=1, GPU has fallen off the bus.", None, None,
         "node-b", "NVRM: Xid (PCI:0000:06:00): 79, pid=1, GPU has fallen off the bus."),
        ("Aug 24 22:10:00 spark kernel: NVRM: Xid (PCI:000f:01:00): 119, Timeout after 6s", None, None, "spark",
         "NVRM: Xid (PCI:000f:01:00): 119, Timeout after 6s"),
        ("2026-12-02T03:12:01+0000 gpu-07 kernel: [16450076.435595] NVRM: Xid (PCI:0000:3b:00): 48, pid=1", None, None,
         "gpu-07", "NVRM: Xid (PCI:0000:3b:00): 48, pid=1"),
        # containerd/CRI-O's own log file (format as in containerd's cri log parser: "<RFC3339Nano> stdout F <msg>"),
        # around a line of tests/fixtures/logs/process.killed-signal--2agents-one-terminal-rank3-sigkill-interleaved.
        ("2018-09-20T11:54:11.753589172Z stderr F [rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/"
         "transport/tcp/pair.cc:537] Read error", 0, None, None,
         "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error"),
        ("2024-10-01T05:40:48.840712595Z stdout F rank 3 step 1 loss 5.1102", None, None, None, "rank 3 step 1 loss 5.1102"),
        # journalctl's short format (a unit's stdout) and moreutils `ts` (default "%b %d %H:%M:%S").
        ("Dec 03 16:35:53 node-b torchrun[10207]: [rank2]: RuntimeError: boom", 2, None, "node-b", "RuntimeError: boom"),
        ("Dec 03 16:35:53 [rank1]: Traceback (most recent call last):", 1, None, None, "Traceback (most recent call last):"),
        # kubectl logs --prefix (format of kubectl's logs command: "[pod/<pod>/<container>] ").
        ("[pod/trainjob-worker-1/pytorch] [rank2]: RuntimeError: boom", 2, None, "trainjob-worker-1", "RuntimeError: boom"),
        # vLLM's logger on a logged error's lines (vllm/logger.py's format); its INFO and WARNING lines keep it.
        ("ERROR 04-29 00:53:54 [core.py:398] ModuleNotFoundError: No module named 'pyarrow'", None, None, None,
         "ModuleNotFoundError: No module named 'pyarrow'"),
        ("(EngineCore_DP0 pid=4242) ERROR 01-04 21:58:22 [core.py:710]   File \"/x/core.py\", line 701, in run", None,
         None, None, "  File \"/x/core.py\", line 701, in run"),
        ("WARNING 04-29 00:53:54 [config.py:1] CUDA graph is not supported", None, None, None,
         "WARNING 04-29 00:53:54 [config.py:1] CUDA graph is not supported"),
        ("plain text line", None, None, None, "plain text line"),
    ],
)
def test_peel(line: str, rank: int | None, local_rank: int | None, host: str | None, rest: str) -> None:
    peeled = peel(line)
    assert (peeled.rank, peeled.local_rank, peeled.host, peeled.text) == (rank, local_rank, host, rest)


def test_srun_labels_only_when_the_source_uses_them() -> None:
    lines = [f"{r}: [rank{r}]: step 1" for r in range(4)] * 3 + ["0: [rank0]: FileNotFoundError: x"]
    dialect = Dialect()
    for line in lines:
        dialect.observe(line)
    chosen = dialect.decide()
    assert "srun-label" in chosen
    assert peel("0: FileNotFoundError: x", chosen).rank == 0
    assert peel("0: FileNotFoundError: x").rank is None


def test_pdsh_hosts_only_when_the_source_uses_them() -> None:
    dialect = Dialect()
    for i in range(10):
        dialect.observe(f"192.168.12.2{i % 2}: {{'loss': 0.24}}")
    chosen = dialect.decide()
    assert peel("192.168.13.81: [rank19]: boom", chosen).host == "192.168.13.81"
    assert peel("192.168.13.81: [rank19]: boom", chosen).rank == 19
    plain = Dialect()
    for _ in range(10):
        plain.observe("INFO: starting")
    assert "pdsh-host" not in plain.decide()


def test_glog_is_comparable_with_iso() -> None:
    glog = parse_time("W1129 23:25:33.851000")
    iso = parse_time("2026-11-29T23:25:33.851")
    elastic = parse_time("2026-11-29T23:25:33")
    assert glog is not None and iso is not None and elastic is not None
    assert abs(glog - iso) < 1e-6 and elastic <= glog


def test_find_time_in_messages() -> None:
    assert find_time("[2023-11-13 16:59:54,760] [INFO] [launch.py:314:sigkill_handler] Killing") is not None
    assert find_time("step 3 | loss 5.7") is None
    assert find_time("2023-09-07 09:14:40,098 ERROR train.py:308 in <module>") is not None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("run/attempt_0/3/stderr.log", (None, 3, None)),
        ("logs/rank3.log", (3, None, None)),
        ("logs/node-05/rank_12.txt", (12, None, "node-05")),
        ("slurm-123456.out", (None, None, None)),
        ("corpus/dist.rank-sigkill--rank1-oom/log.txt", (None, None, None)),
        # The name says rank: a rank.
        ("logs/rank38.log", (38, None, None)),
        ("logs/rank-38.log", (38, None, None)),
        ("logs/train.rank38.log", (38, None, None)),
        ("logs/log_rank_3.txt", (3, None, None)),
        ("logs/RANK_3.err", (3, None, None)),
        ("logs/worker_38.log", (38, None, None)),
        ("logs/train.worker-5.out", (5, None, None)),
        ("logs/local_rank_2.log", (None, 2, None)),
        ("logs/node3_rank5.log", (5, None, "node3")),
        ("logs/node-3.log", (None, None, "node-3")),  # a node index is a host, not a rank
        # A bare number is a job, array task, epoch, seed or date: no rank.
        ("runs/job-0038.log", (None, None, None)),
        ("runs/job_38.log", (None, None, None)),
        ("out/train_7.out", (None, None, None)),
        ("slurm-123456_7.out", (None, None, None)),  # %A_%a
        ("logs/train-4000123-7.out", (None, None, None)),  # %x-%j-%t cannot be told from %x-%A-%a
        ("logs/myjob.4000123.err", (None, None, None)),  # %x.%j
        ("logs/epoch_3.log", (None, None, None)),
        ("logs/run-20240101.log", (None, None, None)),
        ("logs/seed-42.txt", (None, None, None)),
        ("logs/ranking-3.log", (None, None, None)),
    ],
)
def test_ranks_from_path(path: str, expected: tuple[int | None, int | None, str | None]) -> None:
    assert ranks_from_path(path) == expected


@pytest.mark.parametrize(
    ("text", "rank"),
    [
        ("[E ProcessGroupNCCL.cpp:566] [Rank 3] Watchdog caught collective operation timeout", 3),
        ("[PG 0 (default_pg) Rank 5] Timeout at NCCL work: 2070", 5),
        ("[PG ID 4 PG GUID 10 Rank 1] failure detected by watchdog", None),
        ("Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/4", 2),
        ("Rank 0 is running collective: CollectiveFingerPrint(OpType=ALLGATHER), but Rank 1 is running collective", None),
        ("AssertionError: Rank 3: found NaN in local grad norm in backwards pass.", 3),
        # axolotl's logging format and OLMo's console format (https://github.com/axolotl-ai-cloud/axolotl/issues/1947,
        # https://github.com/RAIVNLab/MatFormer-OLMo/issues/2).
        ("[2024-10-06 10:00:00,000] [ERROR] [axolotl.load_model:808] [PID:45370] [RANK:0] Error(s) in loading", 0),
        ("[2024-04-18 09:09:04] CRITICAL [root, rank=3] Uncaught ValueError: Must flatten tensors", 3),
        ("CRITICAL [root, rank=1] Uncaught ValueError: x", 1),
        ("[RANK:0] without the pid is not axolotl's format", None),
    ],
)
def test_rank_in_message(text: str, rank: int | None) -> None:
    assert rank_in_message(text) == rank


def test_markdown_quoted_paste() -> None:
    lines = ["> [rank1]: torch.OutOfMemoryError: CUDA out of memory.", "> [rank0]: step 3", "> plain text"]
    dialect = Dialect()
    for line in lines * 2:
        dialect.observe(line)
    chosen = dialect.decide()
    assert "markdown-quote" in chosen
    assert peel(lines[0], chosen).rank == 1
    assert peel("> not a quote", frozenset()).text == "> not a quote"


def test_indented_code_block_paste_only_when_every_line_is_indented() -> None:
    pasted = ["    [rank1]: Traceback (most recent call last):", "    [rank1]:   File \"train.py\", line 3, in <module>",
              "    [rank1]: ValueError: bad sample", "    E1202 06:42:45.393000 28185 torch/x.py:1002] failed"]
    dialect = Dialect()
    for line in pasted * 2:
        dialect.observe(line)
    chosen = dialect.decide()
    assert "markdown-indent" in chosen
    assert peel(pasted[2], chosen).rank == 1
    # A traceback indents many of its lines by itself: that is not a pasted code block.
    traceback = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                 "    main()", '  File "train.py", line 2, in main', "    raise ValueError('x')", "ValueError: x"]
    plain = Dialect()
    for line in traceback * 3:
        plain.observe(line)
    assert "markdown-indent" not in plain.decide()


def test_a_failure_pytest_reported_is_read_past_its_e_column() -> None:
    # hpcaitech/ColossalAI PR 1320's paste of a failed test: every line after "E" and seven spaces.
    pasted = ["E       torch.multiprocessing.spawn.ProcessRaisedException:", "E",
              "E       -- Process 3 terminated with the following error:", "E       Traceback (most recent call last):",
              'E         File "/home/lcfjr/codes/ColossalAI/tests/test_tensor/test_gpt2.py", line 105, in run_dist',
              "E       ncclSystemError: System call (socket, malloc, munmap, etc) failed."]
    dialect = Dialect()
    for line in pasted:
        dialect.observe(line)
    chosen = dialect.decide()
    assert "pytest-failure" in chosen
    assert peel(pasted[2], chosen).text == "-- Process 3 terminated with the following error:"
    assert peel(pasted[4], chosen).text.startswith('  File "')  # the traceback's own indentation stays
    # Lines that merely start with an E are not a pytest report.
    plain = Dialect()
    for line in ["Epoch 1: loss 2.3", "E0314 02:00:00.000000 1 api.py:1] x", "Evaluating...", "E  ok"] * 2:
        plain.observe(line)
    assert "pytest-failure" not in plain.decide()


def test_container_name_prefix_only_when_the_source_uses_it() -> None:
    lines = [f"trainer-1  | [rank{r}]: step 1" for r in range(2)] * 3
    dialect = Dialect()
    for line in lines:
        dialect.observe(line)
    chosen = dialect.decide()
    assert "container-name" in chosen
    peeled = peel("trainer-1  | [rank3]: ValueError: x", chosen)
    assert (peeled.host, peeled.rank, peeled.text) == ("trainer-1", 3, "ValueError: x")
    assert peel("trainer-1 | x").host is None


def test_syslog_stamps_share_the_clock_of_iso_and_glog_stamps() -> None:
    assert parse_time("Dec 03 16:40:12") == parse_time("2026-12-03T16:40:12Z") == parse_time("I1203 16:40:12.000000")
    assert parse_time("Dec  3 16:40:12.5") == parse_time("2026-12-03 16:40:12.5")
    assert peel("Dec 03 16:40:12 [rank1]: x").time == parse_time("2026-12-03T16:40:12Z")


def test_lightning_rank_prefixed_messages() -> None:
    # lightning_fabric/utilities/rank_zero.py rank_prefixed_message: f"[rank: {rank}] {message}", at the
    # start of a line (tests/fixtures/logs/process.killed-signal--2node-rank1-sigkill-lightning-rank-prefix-
    # per-node-logs) or after a logging format's header (lightning-hydra-template's RankedLogger).
    assert peel("[rank: 1] rank 1 step 0 loss 5.0568").rank == 1
    assert rank_in_message("[2024-03-01 10:00:00,123][src.train][INFO] - [rank: 3] Instantiating model") == 3
    assert rank_in_message("see [rank: x] docs") is None
