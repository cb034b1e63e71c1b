"""3 ranks (gloo, CPU): every rank steps and all-reduces its loss; at step 3 rank 1 raises a ValueError
(a bad record) before the all_reduce, the others wait in it until the launcher stops them.

Every rank flushes its metrics at exit, as experiment trackers do (wandb's finish, a metrics uploader
waiting for its server's acknowledgement): the interpreter prints rank 1's traceback before it runs
the exit handlers, so the job goes on after the cause is printed until the flush is acknowledged.
Here the acknowledgement is a file named `metrics-acked` in the working folder (the test writes it
once it has seen rootrank's report); without it the flush gives up after 120 s."""
import atexit
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def load_batch(rank, step):
    if rank == 1 and step == 3:
        raise ValueError(f"malformed record at index {step * 64 + 17} in shard {rank}")
    return torch.randn(64, 16)


def flush_metrics():
    deadline = time.monotonic() + 120
    while not os.path.exists("metrics-acked") and time.monotonic() < deadline:
        time.sleep(0.1)


def main():
    atexit.register(flush_metrics)
    dist.init_process_group("gloo", timeout=timedelta(seconds=300))
    rank = dist.get_rank()
    torch.manual_seed(rank)
    w = torch.randn(16, 1)
    for step in range(20):
        x = load_batch(rank, step)
        stats = torch.tensor([((x @ w) ** 2).mean().item()])
        dist.all_reduce(stats)
        print(f"rank {rank} step {step} loss {stats.item() / dist.get_world_size():.4f}", flush=True)
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
