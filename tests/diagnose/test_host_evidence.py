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
