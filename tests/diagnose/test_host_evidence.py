"""Host-level evidence (a GPU Xid in a node's kernel log, a node the scheduler or Ray lost) names the host
and the ranks on it, ahead of the collective timeouts that the ranks on other hosts print.

Lines are real message texts (from the fixtures and the entries' upstream sources), arranged into the
shape under test.
"""

from __future__ import annotations

from rootrank.diagnose import diagnose_paths, diagnose_text
from tests.conftest import FIXTURE_LOGS

MIXED = FIXTURE_LOGS / "hardware.xid-fallen-off-bus--node-b-xid79-every-rank-times-out"
TIMEOUT = "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] " \
          "Timed out waiting 20000ms for recv operation to complete"


def _pdsh(host: str, rank: int, text: str) -> str:
    return f"{host}: [rank{rank}]: {text}"


def _steps(hosts: dict[int, str]) -> list[str]:
    return [f"{host}: [RANK {rank}] step {step} mse=61.310" for step in range(3) for rank, host in hosts.items()]


def test_kernel_xid_names_the_host_and_the_rank_that_did_not_time_out() -> None:
    d = diagnose_paths([str(MIXED / "logs" / "job.log"), str(MIXED / "logs" / "node-b.kern.log")])
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.rank, root.host) == ("hardware.xid-fallen-off-bus", 2, "node-b")
    assert root.decided_by == "host-level evidence"
    assert [c.rank for c in d.candidates] == [3]
    assert {c.rank for c in d.collateral} == {0, 1, 3}
    assert "ranks on node-b: 2-3" in root.why


def test_slurm_node_failure_beats_the_timeouts_on_other_hosts() -> None:
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), _pdsh("gpu-a", 0, TIMEOUT), _pdsh("gpu-a", 1, TIMEOUT),
             "srun: error: Node failure on gpu-b",
             "srun: Job step aborted: Waiting up to 62 seconds for job step to finish."]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host) == ("infra.slurm-node-failure", "gpu-b")
    # Both ranks of the lost node went silent together: the node is the initiator, its ranks the candidates.
    assert root.rank is None
    assert sorted(c.rank for c in d.candidates) == [2, 3]


def test_without_a_rank_table_the_host_is_named_and_its_ranks_are_candidates() -> None:
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), _pdsh("gpu-a", 0, TIMEOUT), _pdsh("gpu-a", 1, TIMEOUT), _pdsh("gpu-b", 2, TIMEOUT),
             _pdsh("gpu-b", 3, TIMEOUT),
             "Dec  2 03:51:21 gpu-b kernel: NVRM: Xid (PCI:0000:b9:00): 74, pid=<unknown>, name=<unknown>, "
             "NVLink: fatal error detected on link 6(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)"]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host, root.rank) == ("hardware.xid-nvlink", "gpu-b", None)
    assert sorted(c.rank for c in d.candidates) == [2, 3]
    assert "gpu-b" in d.undecided


def test_a_kernel_line_without_a_host_keeps_the_old_attribution() -> None:
    lines = ["[rank1]: Traceback (most recent call last):", f"[rank1]: {TIMEOUT}",
             "[16450076.435595] NVRM: Xid (PCI:0001:00:00): 79, pid=123456, name=test, GPU has fallen off the bus."]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None
    assert d.root_cause.rule == "hardware.xid-fallen-off-bus"
    assert d.root_cause.decided_by != "host-level evidence"


def test_ray_dead_node_address_matches_the_worker_prefix_ip() -> None:
    lines = [f"(RayTrainWorker pid=1{r}, ip=10.0.0.{2 + r // 2}) [RANK {r}] step 0 mse=61.310" for r in range(4)]
    lines += [f"(RayTrainWorker pid=10, ip=10.0.0.2) [rank0]: {TIMEOUT}",
              "The node with node id: 75b2eec8a61cdafd37cc8072b1caf9abdeef9c4e74a4f24d5dfce28d and ip: 10.0.0.3 has "
              "been marked dead because the detector has missed too many heartbeats from it. This can happen when a "
              "raylet crashes unexpectedly or has lagging heartbeats."]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host) == ("ray.node-dead", "10.0.0.3")
    assert sorted(c.rank for c in d.candidates) == [2, 3]


def test_a_hardware_error_printed_by_a_rank_names_that_rank() -> None:
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), _pdsh("gpu-b", 3, "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
             _pdsh("gpu-a", 0, TIMEOUT), _pdsh("gpu-a", 1, TIMEOUT)]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.rank, root.host) == ("hardware.xid-memory-ecc", 3, "gpu-b")


def test_nccl_debug_prefix_names_the_printing_host() -> None:
    d = diagnose_paths([str(FIXTURE_LOGS / "network.ib-completion-error--nccl-1405-status12-vendor-err129" / "log.txt")])
    assert d.root_cause is not None
    assert (d.root_cause.rule, d.root_cause.host) == ("network.ib-completion-error", "kp-ddp-worker-0")


_AGENT = "/opt/conda/lib/python3.11/site-packages/torch/distributed/elastic/multiprocessing/api.py"


def _agent_failure(host: str, first: tuple[int, int, int], stopped: list[tuple[int, int, int]]) -> list[str]:
    """torchrun's agent on `host`: SIGTERM to the children still alive, its `failed (exitcode: ...)`
    line for the first child that exited, then its error table; children are (rank, local rank, pid)."""
    rank, local, pid = first
    lines = [f"{host}: W1129 21:03:11.636000 14686 {_AGENT}:897] Sending process {p} closing signal SIGTERM"
             for _, _, p in stopped]
    lines.append(f"{host}: E1129 21:03:12.565000 14686 {_AGENT}:869] failed (exitcode: 1) local_rank: {local} "
                 f"(pid: {pid}) of binary: /opt/conda/bin/python3.11")
    lines += [f"{host}: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
              f"{host}: " + "=" * 60, f"{host}: train.py FAILED", f"{host}: " + "-" * 60, f"{host}: Failures:"]
    for index, (r, lr, p) in enumerate(stopped, 1):
        lines += [f"{host}: [{index}]:", f"{host}:   time      : 2026-11-29_21:03:12", f"{host}:   host      : {host}",
                  f"{host}:   rank      : {r} (local_rank: {lr})", f"{host}:   exitcode  : -15 (pid: {p})  (SIGTERM)",
                  f"{host}:   error_file: <N/A>", f"{host}:   traceback : Signal 15 (SIGTERM) received by PID {p}"]
    lines += [f"{host}: " + "-" * 60, f"{host}: Root Cause (first observed failure):", f"{host}: [0]:",
              f"{host}:   time      : 2026-11-29_21:03:12", f"{host}:   host      : {host}",
              f"{host}:   rank      : {rank} (local_rank: {local})", f"{host}:   exitcode  : 1 (pid: {pid}) ",
              f"{host}:   error_file: <N/A>",
              f"{host}:   traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
              f"{host}: " + "=" * 60]
    return lines


def _ecc_traceback(host: str) -> list[str]:
    # A worker's own traceback, printed without a rank prefix (no --tee/--redirects): only its host shows.
    return [f"{host}: Traceback (most recent call last):", f'{host}:   File "/workspace/train.py", line 412, in <module>',
            f"{host}:     loss.backward()", f"{host}: RuntimeError: CUDA error: uncorrectable ECC error encountered"]


def test_the_rank_its_launcher_saw_exit_first_on_the_faulty_host_is_named() -> None:
    # The ECC error's traceback carries no rank; the agent on gpu-b saw rank 3 (local 1) exit on its own
    # and stopped rank 2: the error reached rank 3's device.
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), *_ecc_traceback("gpu-b"), *_agent_failure("gpu-b", (3, 1, 20002), [(2, 0, 20001)]),
             _pdsh("gpu-a", 0, TIMEOUT), _pdsh("gpu-a", 1, TIMEOUT)]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.rank, root.host, root.decided_by) == ("hardware.xid-memory-ecc", 3, "gpu-b",
                                                                   "host-level evidence")
    assert "its launcher saw rank 3 (local rank 1, pid 20002) exit first with code 1" in root.why
    assert [c.rank for c in d.candidates] == [2]


def test_a_first_exit_on_another_host_does_not_pick_a_rank_on_the_faulty_one() -> None:
    # gpu-a's agent saw its rank 0 exit with an error; gpu-b, where the ECC error was, names no child:
    # the ranks of gpu-b stay the candidates.
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), *_ecc_traceback("gpu-b"), *_agent_failure("gpu-a", (0, 0, 30001), [(1, 1, 30002)])]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host, root.rank) == ("hardware.xid-memory-ecc", "gpu-b", None)
    assert sorted(c.rank for c in d.candidates) == [2, 3]


def test_a_pid_the_message_names_is_the_rank_with_that_pid_in_its_prefix() -> None:
    # Ray's memory monitor names the worker it killed by pid; the workers' prefixes tie pids to ranks.
    lines = [f"(RayTrainWorker pid={9660 + r}, ip=10.0.0.{2 + r // 2}) [RANK {r}] step 0 mse=61.310" for r in range(4)]
    lines += [f"(RayTrainWorker pid=9663, ip=10.0.0.3) [rank3]: {TIMEOUT}",
              "Memory on the node (IP: 10.0.0.3, ID: fc2befb2867ce88e73a8a45572c43a640751ae1f2b5e15bd8315f293) where "
              "the task (actor ID: f9cc340f5aef7b479d86345001000000, name=RayTrainWorker.__init__, pid=9662, memory "
              "used=2.22GB) was running was 59.49GB / 62.58GB (0.950744), which exceeds the memory usage threshold of 0.95."]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host, root.rank) == ("ray.oom-killed", "10.0.0.3", 2)
    assert "pid 9662 is rank 2" in root.why


def test_a_pid_of_a_rank_on_another_host_is_not_taken() -> None:
    # pids repeat across machines: the NCCL prefix's pid is rank 0's on gpu-a, but the error is gpu-b's.
    hosts = {0: "gpu-a", 1: "gpu-a", 2: "gpu-b", 3: "gpu-b"}
    lines = [*_steps(hosts), "gpu-a: (pid=3468) [rank0]: step", _pdsh("gpu-a", 0, TIMEOUT), _pdsh("gpu-a", 1, TIMEOUT),
             _pdsh("gpu-b", 3, TIMEOUT),
             "gpu-b: gpu-b:3468:3905 [0] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer "
             "10.216.210.236<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)"]
    d = diagnose_text("\n".join(lines))
    root = d.root_cause
    assert root is not None
    assert (root.rule, root.host) == ("network.ib-completion-error", "gpu-b")
    assert root.rank == 2  # the rank on gpu-b that reported no timeout, not rank 0 of gpu-a's pid
